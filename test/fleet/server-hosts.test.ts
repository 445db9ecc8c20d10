/**
 * The local fleet's HTTP server on a real loopback socket, against what a
 * DNS-rebinding page sends: a Host that is not this server's loopback address
 * and port is answered 421 with no fleet data, and event streams are capped.
 */
import assert from "node:assert/strict";
import { type ClientRequest, type IncomingMessage, request } from "node:http";
import { after, before, describe, it } from "node:test";
import type { Server } from "node:http";
import type { FleetManager } from "../../agent/fleet/manager";
import { MAX_EVENT_STREAMS, startServer } from "../../agent/fleet/server";
import { canProbeAsAnotherUser, probeAsNobody, sleep } from "../support";

let server: Server;
let port: number;
before(async () => {
  // A manager whose state is a marker: it must never reach a foreign Host.
  const manager = {
    status: () => ({ hosts: [{ name: "fleet-state-marker" }] }),
    subscribe: () => () => undefined,
  } as unknown as FleetManager;
  ({ server, port } = await startServer(0, {
    manager: () => manager,
    token: () => "t",
    acceptSpec: () => {
      throw new Error("unused");
    },
    shutdown: () => undefined,
  }));
});
after(
  () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
);

/** Sends a GET with `host`; resolves with the response (its body unread) and the request. */
function get(path: string, host: string): Promise<{ res: IncomingMessage; req: ClientRequest }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { host }, agent: false }, (res) =>
      resolve({ res, req }),
    );
    req.on("error", reject);
    req.end();
  });
}

async function text(res: IncomingMessage): Promise<string> {
  let s = "";
  for await (const c of res) s += (c as Buffer).toString();
  return s;
}

describe("the fleet server's Host check", () => {
  it("answers its own loopback names with its port", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
      const { res } = await get("/", host);
      await text(res);
      assert.equal(res.statusCode, 200, host);
    }
  });

  it("refuses any other Host with 421 and no data, on every path", async () => {
    for (const host of [
      `evil.example:${port}`,
      "evil.example",
      `127.0.0.1:${port + 1}`,
      "127.0.0.1",
      `localhost.evil.example:${port}`,
    ]) {
      for (const path of ["/", "/api/status", "/api/events"]) {
        const { res } = await get(path, host);
        const body = await text(res);
        assert.equal(res.statusCode, 421, `${path} with Host ${host}`);
        assert.doesNotMatch(body, /<html|snapshot|fleet-state-marker/i);
      }
    }
  });
});

describe("the fleet server's event streams", () => {
  it(`serves at most ${MAX_EVENT_STREAMS} at once, and frees a place when one closes`, async () => {
    const open: { res: IncomingMessage; req: ClientRequest }[] = [];
    try {
      for (let i = 0; i < MAX_EVENT_STREAMS; i++) {
        const s = await get("/api/events", `127.0.0.1:${port}`);
        assert.equal(s.res.statusCode, 200, `stream ${i}`);
        open.push(s);
      }
      const extra = await get("/api/events", `127.0.0.1:${port}`);
      open.push(extra);
      assert.equal(extra.res.statusCode, 503);
      await text(extra.res);
      open.pop();
      const first = open.shift();
      first?.req.destroy();
      let again: { res: IncomingMessage; req: ClientRequest } | undefined;
      for (let i = 0; i < 50 && !again; i++) {
        await sleep(20);
        const s = await get("/api/events", `127.0.0.1:${port}`);
        if (s.res.statusCode === 200) again = s;
        else await text(s.res);
      }
      assert.ok(again, "no place was freed");
      open.push(again);
    } finally {
      for (const s of open) s.req.destroy();
    }
  });
});

describe("another local user", () => {
  it(
    "gets nothing from the fleet server: no page, no state, no events",
    { skip: !canProbeAsAnotherUser() && "needs root to run a probe as another user" },
    async () => {
      const [result] = await probeAsNobody([{ kind: "tcp", address: "127.0.0.1", port, pid: process.pid }]);
      assert.equal(result?.served, false, `${result?.listener} answered nobody: ${result?.detail}`);
      assert.match(result?.detail ?? "", /403/);
      // The owner is still answered.
      const { res } = await get("/api/status", `127.0.0.1:${port}`);
      assert.match(await text(res), /fleet-state-marker/);
    },
  );
});
