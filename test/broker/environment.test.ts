/**
 * What environment a host process gets through `prc run`, over a real socket
 * with real processes: the broker's own environment stays with the broker, a
 * client sets only allow-listed variables, and loader or interpreter variables
 * are refused with PERMISSION_DENIED before anything runs.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { parseBrokerConfig } from "../../agent/broker/config";
import { baseEnvironment } from "../../agent/common/child-environment";
import type { Broker } from "../../agent/broker/server";
import { ValidationError } from "../../agent/common/errors";
import { type WaitMessage, call, script, startBroker, winsClient } from "./harness";
import { tempDir } from "../support";

const SECRET = "WINFLEET_TEST_BROKER_ONLY";
let dir: string;
let tool: string;
let marker: string;
let plain: { broker: Broker; socket: string };
let custom: { broker: Broker; socket: string };
let perBinary: { broker: Broker; socket: string };
const sha1 = (f: string): string => createHash("sha1").update(readFileSync(f)).digest("hex");

before(async () => {
  dir = tempDir("envs-");
  marker = join(dir, "ran");
  tool = script(join(dir, "env.sh"), `touch '${marker}'\nenv`);
  // Set while the brokers run: a broker that passed its environment on would pass this.
  process.env[SECRET] = "broker-secret";
  plain = await startBroker({ processPaths: [tool] });
  custom = await startBroker({ processPaths: [tool], envs: ["APP_MODE", "FEATURE_*"] });
  perBinary = await startBroker({
    processPaths: [tool],
    processEnvs: { [tool]: ["ONLY_FOR_TOOL"], "/usr/bin/other": ["FOR_OTHER"] },
  });
});
after(async () => {
  delete process.env[SECRET];
  await Promise.all([plain.broker.stop(), custom.broker.stop(), perBinary.broker.stop()]);
});

/** Runs the tool with `envs`; resolves with its environment as NAME → value, or the ServiceError. */
async function run(socket: string, envs: string[]): Promise<Map<string, string> | grpc.ServiceError> {
  const client = winsClient("ProcessService", socket);
  try {
    const started = await call<{ Data: { Value: string } }>(client, "Start", {
      Path: tool,
      Checksum: sha1(tool),
      Envs: envs,
    });
    const ka = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(
      client,
      () => undefined,
    );
    ka.write({ Data: started.Data });
    const wait = (client.Wait as (r: unknown) => grpc.ClientReadableStream<WaitMessage>).call(client, {
      Data: started.Data,
    });
    const out: Buffer[] = [];
    wait.on("data", (m: WaitMessage) => {
      if (m.Options === "StdOut" && m.StdOut) out.push(m.StdOut);
    });
    await new Promise<void>((resolve, reject) => {
      wait.on("end", resolve);
      wait.on("error", reject);
    });
    ka.end();
    const lines = Buffer.concat(out)
      .toString()
      .split("\n")
      .filter((l) => l.includes("="));
    return new Map(lines.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  } catch (e) {
    return e as grpc.ServiceError;
  } finally {
    client.close();
  }
}

function refused(r: Map<string, string> | grpc.ServiceError): grpc.ServiceError {
  assert.ok(!(r instanceof Map), "the process ran");
  return r;
}

describe("prc run's environment", () => {
  it("does not pass the broker's own environment to a host process", async () => {
    const env = await run(plain.socket, []);
    assert.ok(env instanceof Map, env instanceof Map ? "" : env.details);
    assert.equal(env.get(SECRET), undefined);
    assert.ok(env.get("PATH"), "PATH comes from the base environment");
  });

  it("passes an allow-listed variable (the default list has the proxy variables)", async () => {
    const env = await run(plain.socket, ["HTTPS_PROXY=http://proxy.example:3128"]);
    assert.ok(env instanceof Map, env instanceof Map ? "" : env.details);
    assert.equal(env.get("HTTPS_PROXY"), "http://proxy.example:3128");
  });

  for (const item of [
    "LD_PRELOAD=/tmp/evil.so",
    "ld_preload=/tmp/evil.so",
    "LD_LIBRARY_PATH=/tmp",
    "DYLD_INSERT_LIBRARIES=/tmp/x.dylib",
    "NODE_OPTIONS=--require /tmp/x.js",
    "PYTHONSTARTUP=/tmp/x.py",
    "PERL5OPT=-Mx",
    "BASH_ENV=/tmp/x.sh",
    "PATH=/tmp",
    "GCONV_PATH=/tmp",
  ]) {
    it(`refuses ${item} with PERMISSION_DENIED before anything runs`, async () => {
      rmSync(marker, { force: true });
      const e = refused(await run(plain.socket, [item]));
      assert.equal(e.code, grpc.status.PERMISSION_DENIED, e.details);
      assert.match(e.details, new RegExp(`Envs\\[0\\]: ${item.slice(0, item.indexOf("="))} may not be set`));
      assert.equal(existsSync(marker), false);
    });
  }

  it("refuses a loader variable even when the config allows every name with its prefix", async () => {
    const e = refused(await run(custom.socket, ["FEATURE_X=1", "LD_AUDIT=/tmp/x.so"]));
    assert.equal(e.code, grpc.status.PERMISSION_DENIED);
    assert.match(e.details, /Envs\[1\]: LD_AUDIT/);
  });

  it("refuses a variable the allow-list does not name, naming the list", async () => {
    const e = refused(await run(plain.socket, ["APP_MODE=x"]));
    assert.equal(e.code, grpc.status.PERMISSION_DENIED);
    assert.match(e.details, /APP_MODE is not in the broker's environment allow-list/);
  });

  it("passes names and prefixes the config allows, and nothing else", async () => {
    const env = await run(custom.socket, ["APP_MODE=blue", "FEATURE_ONE=1"]);
    assert.ok(env instanceof Map, env instanceof Map ? "" : env.details);
    assert.equal(env.get("APP_MODE"), "blue");
    assert.equal(env.get("FEATURE_ONE"), "1");
    const e = refused(await run(custom.socket, ["HTTPS_PROXY=x"]));
    assert.equal(e.code, grpc.status.PERMISSION_DENIED);
  });

  it("passes a variable allowed for this binary only, on top of the default list", async () => {
    const env = await run(perBinary.socket, ["ONLY_FOR_TOOL=1", "NO_PROXY=.local"]);
    assert.ok(env instanceof Map, env instanceof Map ? "" : env.details);
    assert.equal(env.get("ONLY_FOR_TOOL"), "1");
    const e = refused(await run(perBinary.socket, ["FOR_OTHER=1"]));
    assert.equal(e.code, grpc.status.PERMISSION_DENIED);
  });

  it("refuses a malformed item with INVALID_ARGUMENT", async () => {
    const e = refused(await run(plain.socket, ["=x"]));
    assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
  });
});

describe("the config's environment allow-list", () => {
  for (const entry of ["LD_PRELOAD", "LD_*", "L*", "node_options", "PYTHON*", "PATH", "A=B"]) {
    it(`refuses ${entry}, naming its path`, () => {
      assert.throws(
        () => parseBrokerConfig(JSON.stringify({ whiteList: { envs: ["OK", entry] } })),
        (e: unknown) => {
          assert.ok(e instanceof ValidationError);
          assert.match(e.message, /whiteList\.envs\[1\]/);
          return true;
        },
      );
    });
  }

  it("refuses a loader variable allowed for one binary, naming its path", () => {
    assert.throws(
      () => parseBrokerConfig(JSON.stringify({ whiteList: { processEnvs: { "/opt/x": ["OK", "LD_PRELOAD"] } } })),
      /whiteList\.processEnvs\.\/opt\/x\[1\]|whiteList\.processEnvs\["\/opt\/x"\]\[1\]/,
    );
  });

  it("reads a config without envs as before they existed", () => {
    assert.deepEqual(parseBrokerConfig("white_list:\n  processPaths: [C:/a.exe]\n").whiteList, {
      processPaths: ["C:/a.exe"],
      proxyPorts: [],
      allowAll: false,
    });
  });

  it("accepts names and prefixes", () => {
    assert.deepEqual(
      parseBrokerConfig(JSON.stringify({ white_list: { envs: ["APP_MODE", "FEATURE_*"] } })).whiteList.envs,
      ["APP_MODE", "FEATURE_*"],
    );
  });
});

describe("the base environment", () => {
  it("takes Windows' system variables whatever their case, and nothing else", () => {
    const env = baseEnvironment(
      {
        Path: "C:\\Windows\\system32",
        SYSTEMROOT: "C:\\Windows",
        ComSpec: "C:\\Windows\\system32\\cmd.exe",
        TEMP: "C:\\Temp",
        WINFLEET_CONTENT_SAS: "sv=secret",
        NODE_OPTIONS: "--require x",
      },
      "win32",
    );
    assert.deepEqual(env, {
      SystemRoot: "C:\\Windows",
      ComSpec: "C:\\Windows\\system32\\cmd.exe",
      PATH: "C:\\Windows\\system32",
      TEMP: "C:\\Temp",
    });
  });

  it("gives a POSIX child a PATH even when the broker has none", () => {
    assert.match(baseEnvironment({ SECRET: "x" }, "linux").PATH ?? "", /\/usr\/bin/);
    assert.deepEqual(Object.keys(baseEnvironment({ SECRET: "x", HOME: "/root", LANG: "C.UTF-8" }, "linux")).sort(), [
      "HOME",
      "LANG",
      "PATH",
    ]);
  });
});
