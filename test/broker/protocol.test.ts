/**
 * The broker speaks wins's protocol: names and numbers match wins's protos, and
 * Start/Wait/KeepAlive work from a client built independently from the .proto
 * files, with the exit code as an additive extension.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { status as grpcStatus } from "@grpc/grpc-js";
import { type Broker } from "../../agent/broker/server";
import { call, packageDefinition, script, startBroker, winsClient } from "./harness";
import { tempDir } from "../support";

/**
 * wins's message fields as its protos define them (rancher/wins `pkg/types/*.proto`, proto package `wins`): name →
 * number.
 */
const WINS_FIELDS: Record<string, Record<string, number>> = {
  "wins.ApplicationInfoResponse": { Info: 1 },
  "wins.ApplicationInfo": { Checksum: 1, Version: 2, Commit: 3 },
  "wins.HostGetVersionResponse": { Data: 1 },
  "wins.HostVersion": {
    CurrentMajorVersionNumber: 1,
    CurrentMinorVersionNumber: 2,
    CurrentBuildNumber: 3,
    UBR: 4,
    ReleaseId: 5,
    BuildLabEx: 6,
    CurrentBuild: 7,
  },
  "wins.NetworkGetRequest": { Address: 1, Name: 2 },
  "wins.NetworkAdapter": { InterfaceIndex: 1, GatewayAddress: 2, SubnetCIDR: 3, HostName: 4, AddressCIDR: 5 },
  "wins.HnsGetNetworkRequest": { Address: 1, Name: 2 },
  "wins.HnsNetwork": { ID: 1, Type: 2, Subnets: 3, ManagementIP: 4 },
  "wins.HnsNetworkSubnet": { AddressCIDR: 1, GatewayAddress: 2 },
  "wins.RouteAddRequest": { Addresses: 1 },
  "wins.ProcessStartRequest": { Checksum: 1, Path: 2, Args: 3, Exposes: 4, Envs: 5, Dir: 6 },
  "wins.ProcessStartResponse": { Data: 1 },
  "wins.ProcessWaitRequest": { Data: 1 },
  "wins.ProcessWaitResponse": { StdOut: 1, StdErr: 2 },
  "wins.ProcessKeepAliveRequest": { Data: 1 },
  "wins.ProcessExpose": { Port: 1, Protocol: 2 },
  "wins.ProcessName": { Value: 1 },
};
const WINS_METHODS: Record<string, string[]> = {
  "wins.ApplicationService": ["Info"],
  "wins.HostService": ["GetVersion"],
  "wins.NetworkService": ["Get"],
  "wins.HnsService": ["GetNetwork"],
  "wins.RouteService": ["Add"],
  "wins.ProcessService": ["Start", "Wait", "KeepAlive"],
};

type Wait = { Options?: string; StdOut?: Buffer; StdErr?: Buffer; ExitCode?: number };

let env: { broker: Broker; socket: string; dir: string };
let tool: string;
before(async () => {
  const bin = tempDir("bin-");
  tool = script(join(bin, "tool.sh"), 'printf "out:%s\\n" "$@"; printf "err\\n" >&2; printf "%s" "$GREETING"; exit 3');
  env = await startBroker({ processPaths: [tool], envs: ["GREETING"] });
});
after(async () => env.broker.stop());

const sha1 = (file: string): string => createHash("sha1").update(readFileSync(file)).digest("hex");

/** Start → Wait → KeepAlive with the raw client; returns everything Wait delivered. */
async function runRaw(
  req: Record<string, unknown>,
  beforeWait?: () => Promise<void>,
): Promise<{ messages: Wait[]; trailer: grpc.Metadata | undefined }> {
  const client = winsClient("ProcessService", env.socket);
  const started = await call<{ Data: { Value: string } }>(client, "Start", req);
  const name = started.Data.Value;
  const keepAlive = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(
    client,
    () => undefined,
  );
  keepAlive.write({ Data: { Value: name } });
  await beforeWait?.();
  const wait = (client.Wait as (r: unknown) => grpc.ClientReadableStream<Wait>).call(client, { Data: { Value: name } });
  const messages: Wait[] = [];
  let trailer: grpc.Metadata | undefined;
  wait.on("data", (m: Wait) => messages.push(m));
  wait.on("status", (s: grpc.StatusObject) => (trailer = s.metadata));
  await new Promise<void>((resolve, reject) => {
    wait.on("end", resolve);
    wait.on("error", reject);
  });
  keepAlive.end();
  client.close();
  return { messages, trailer };
}

describe("wins wire compatibility", () => {
  it("declares wins's services, methods, fields and numbers", () => {
    for (const [service, methods] of Object.entries(WINS_METHODS)) {
      const def = packageDefinition[service] as Record<string, { path: string }> | undefined;
      assert.ok(def, service);
      for (const m of methods) assert.equal(def[m]?.path, `/${service}/${m}`);
    }
    for (const [message, fields] of Object.entries(WINS_FIELDS)) {
      const def = packageDefinition[message] as { type: { field: { name: string; number: number }[] } } | undefined;
      assert.ok(def, message);
      const ours = Object.fromEntries(def.type.field.map((f) => [f.name, f.number]));
      for (const [name, number] of Object.entries(fields)) assert.equal(ours[name], number, `${message}.${name}`);
      // Additive only: a field we add must not reuse a wins number.
      for (const [name, number] of Object.entries(ours))
        if (!(name in fields)) assert.ok(!Object.values(fields).includes(number), `${message}.${name}`);
    }
  });
});

describe("ProcessService over a real socket", () => {
  it("streams stdout and stderr unmodified and ends with the exit code", async () => {
    const { messages, trailer } = await runRaw({
      Path: tool,
      Checksum: sha1(tool),
      Args: ["a b", "é"],
      Envs: ["GREETING=hi there"],
    });
    const out = Buffer.concat(
      messages.filter((m) => m.Options === "StdOut").map((m) => m.StdOut ?? Buffer.alloc(0)),
    ).toString();
    const err = Buffer.concat(
      messages.filter((m) => m.Options === "StdErr").map((m) => m.StdErr ?? Buffer.alloc(0)),
    ).toString();
    assert.equal(out, "out:a b\nout:é\nhi there");
    assert.equal(err, "err\n");
    assert.deepEqual(messages.at(-1), { Options: "ExitCode", ExitCode: 3 });
    assert.deepEqual(trailer?.get("winfleet-exit-code"), ["3"]);
  });

  it("keeps output written before the client called Wait", async () => {
    const { messages } = await runRaw(
      { Path: tool, Checksum: sha1(tool), Args: ["early"] },
      () => new Promise((r) => setTimeout(r, 300)),
    );
    assert.match(Buffer.concat(messages.flatMap((m) => (m.StdOut ? [m.StdOut] : []))).toString(), /out:early/);
  });

  it("copies the binary to rancher-wins-<name> beside it and leaves the original", async () => {
    await runRaw({ Path: tool, Checksum: sha1(tool), Args: [] });
    assert.ok(statSync(tool).isFile());
    assert.equal(sha1(join(dirname(tool), "rancher-wins-tool.sh")), sha1(tool));
  });

  it("refuses a binary whose checksum differs with NOT_FOUND", async () => {
    const client = winsClient("ProcessService", env.socket);
    await assert.rejects(
      call(client, "Start", { Path: tool, Checksum: "0".repeat(40) }),
      (e: grpc.ServiceError) => e.code === grpcStatus.NOT_FOUND && /checksum mismatch/.test(e.details),
    );
    client.close();
  });

  it("answers the unary services and UNIMPLEMENTED for Windows-only ones", async () => {
    const app = winsClient("ApplicationService", env.socket);
    const info = await call<{ Info: { Version: string; Checksum: string } }>(app, "Info", {});
    assert.match(info.Info.Checksum, /^[0-9a-f]{40}$/);
    const host = winsClient("HostService", env.socket);
    assert.ok((await call<{ Data: { CurrentBuildNumber: string } }>(host, "GetVersion", {})).Data.CurrentBuildNumber);
    for (const [service, method] of [
      ["NetworkService", "Get"],
      ["HnsService", "GetNetwork"],
      ["RouteService", "Add"],
    ] as const) {
      const c = winsClient(service, env.socket);
      await assert.rejects(
        call(c, method, {}),
        (e: grpc.ServiceError) => e.code === grpcStatus.UNIMPLEMENTED && /only available on Windows/.test(e.details),
        service,
      );
      c.close();
    }
    app.close();
    host.close();
  });

  it("listens on sockets only its owner can use", () => {
    assert.equal(statSync(env.socket).mode & 0o777, 0o600);
    assert.equal(statSync(dirname(env.socket)).mode & 0o777, 0o700);
  });
});
