/**
 * prc run's whitelist over a real socket, with a raw client that sends paths
 * exactly as given (our own client would normalise them first): every escape is
 * refused with INVALID_ARGUMENT before anything runs.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { status as grpcStatus } from "@grpc/grpc-js";
import type { Broker } from "../../agent/broker/server";
import { call, script, startBroker, winsClient } from "./harness";
import { tempDir } from "../support";

let env: { broker: Broker; socket: string };
let open: { broker: Broker; socket: string };
let empty: { broker: Broker; socket: string };
let bin: string;
let tool: string;
const sha1 = (f: string): string => createHash("sha1").update(readFileSync(f)).digest("hex");

before(async () => {
  bin = tempDir("wl-");
  mkdirSync(join(bin, "sub"));
  tool = script(join(bin, "sub", "tool.sh"), "echo ok");
  symlinkSync(join(bin, "sub"), join(bin, "link"));
  env = await startBroker({ processPaths: [tool] });
  open = await startBroker({ allowAll: true });
  empty = await startBroker({});
});
after(async () => Promise.all([env.broker.stop(), open.broker.stop(), empty.broker.stop()]));

async function start(socket: string, path: string): Promise<grpc.ServiceError | undefined> {
  const client = winsClient("ProcessService", socket);
  try {
    const r = await call<{ Data: { Value: string } }>(client, "Start", { Path: path, Checksum: sha1(tool) });
    const ka = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(
      client,
      () => undefined,
    );
    ka.write({ Data: r.Data });
    ka.end();
    return undefined;
  } catch (e) {
    return e as grpc.ServiceError;
  } finally {
    setTimeout(() => client.close(), 200);
  }
}

describe("the process whitelist", () => {
  it("runs a whitelisted path", async () => {
    assert.equal(await start(env.socket, tool), undefined);
  });

  const escapes: [string, (dir: string) => string, RegExp][] = [
    ["a '..' segment", (d) => `${d}/sub/../sub/tool.sh`, /'\.' and '\.\.'/],
    ["a '.' segment", (d) => `${d}/sub/./tool.sh`, /'\.' and '\.\.'/],
    ["mixed case (another file on this filesystem)", (d) => `${d}/SUB/tool.sh`, /differs in case/],
    ["a symlinked directory", (d) => `${d}/link/tool.sh`, /not in the process whitelist|symbolic link/],
    ["a relative path", () => "sub/tool.sh", /absolute/],
    ["a trailing dot", (d) => `${d}/sub/tool.sh.`, /dot or a space/],
    ["a trailing space", (d) => `${d}/sub/tool.sh `, /dot or a space/],
    ["a UNC path", () => "\\\\server\\share\\tool.sh", /UNC and device/],
    ["a device path", () => "\\\\.\\pipe\\rancher_wins", /UNC and device/],
    ["a //?/ path", () => "//?/C:/tool.sh", /UNC and device/],
    ["a doubled separator", (d) => `${d}//sub/tool.sh`, /doubled separator/],
    ["a path not listed", (d) => `${d}/sub/other.sh`, /not in the process whitelist/],
    ["a NUL byte", (d) => `${d}/sub/tool.sh\0x`, /NUL/],
  ];
  for (const [what, path, reason] of escapes) {
    it(`refuses ${what} with INVALID_ARGUMENT`, async () => {
      const e = await start(env.socket, path(bin));
      assert.equal(e?.code, grpcStatus.INVALID_ARGUMENT, `${path(bin)}: ${e?.details ?? "ran"}`);
      assert.match(e?.details ?? "", reason);
    });
  }

  it("refuses a symlink even when its target is whitelisted", async () => {
    const e = await start(env.socket, join(bin, "link", "tool.sh"));
    assert.equal(e?.code, grpcStatus.INVALID_ARGUMENT);
    const broker = await startBroker({ processPaths: [join(bin, "link", "tool.sh")] });
    const viaLink = await start(broker.socket, join(bin, "link", "tool.sh"));
    await broker.broker.stop();
    assert.match(viaLink?.details ?? "", /symbolic link/);
  });

  it("denies everything when the whitelist is empty, unless allowAll", async () => {
    const e = await start(empty.socket, tool);
    assert.equal(e?.code, grpcStatus.INVALID_ARGUMENT);
    assert.match(e?.details ?? "", /whitelist is empty.*allowAll/);
    assert.equal(await start(open.socket, tool), undefined);
  });

  it("still refuses escapes under allowAll", async () => {
    assert.equal((await start(open.socket, `${bin}/sub/../sub/tool.sh`))?.code, grpcStatus.INVALID_ARGUMENT);
  });
});
