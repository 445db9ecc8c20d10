/**
 * A hostile or broken API server against the reporter's requests, on real
 * loopback sockets: a 1 GiB answer (streamed by the server from one reused
 * buffer, never allocated) is cut off at the size limit, a server that
 * trickles a byte at a time is cut off at the request's deadline, and both are
 * rejected errors, not exceptions that would end the process. Ignition's
 * http sources and the content archive download are held to the same bounds.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import { stringify } from "yaml";
import { AgentError } from "../../agent/common/errors";
import { resolveResource } from "../../agent/ignition/fetch";
import type { Resource } from "../../agent/ignition/model";
import { MAX_RESPONSE_BYTES, NodeApiError, nodeApiFromKubeconfig } from "../../agent/report/node-api";
import { downloadBounded } from "../../agent/service/retarget";
import { scratchDir } from "../support";

const dir = scratchDir("winfleet-bounded-");
const GIB = 1024 * 1024 * 1024;

/** A loopback server answering every request with `answer`; closes its connections when closed. */
async function serve(
  answer: (res: ServerResponse) => void,
): Promise<{ url: string; close(): Promise<void>; sent: () => number }> {
  let sent = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => answer(Object.assign(res, { count: (n: number) => (sent += n) })));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sent: () => sent,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function kubeconfig(server: string): string {
  const file = join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    file,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return file;
}

/** Writes `total` bytes from one reused chunk, honouring back-pressure; stops when the client goes. */
function stream(res: ServerResponse & { count?: (n: number) => void }, total: number): void {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let left = total;
  const pump = (): void => {
    while (left > 0 && !res.destroyed) {
      const n = Math.min(left, chunk.length);
      left -= n;
      res.count?.(n);
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once("drain", pump);
    }
    if (left === 0) res.end();
  };
  res.on("close", () => (left = 0));
  pump();
}

async function rejection(p: Promise<unknown>): Promise<NodeApiError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof NodeApiError, `not a NodeApiError: ${String(e)}`);
    return e;
  }
  assert.fail("the request succeeded");
}

describe("bounded reads from the API server", () => {
  it("stops reading a 1 GiB answer at the size limit, with an error and not a crash", async () => {
    // No Content-Length: the body's size is known only by reading it.
    const api = await serve((res) => {
      res.writeHead(500, { "content-type": "application/json" });
      stream(res, GIB);
    });
    const node = await nodeApiFromKubeconfig(kubeconfig(api.url), 60_000);
    const started = Date.now();
    const e = await rejection(node.patchNode("win-node-1", { metadata: {} }));
    await api.close();
    assert.match(e.message, new RegExp(`over the ${MAX_RESPONSE_BYTES}-byte limit`));
    assert.ok(e.retryable);
    assert.ok(api.sent() < 64 * 1024 * 1024, `the server sent ${api.sent()} bytes before the agent stopped reading`);
    assert.ok(Date.now() - started < 20_000);
  });

  it("refuses an answer whose Content-Length declares 1 GiB without reading it", async () => {
    const api = await serve((res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(GIB) });
      stream(res, GIB);
    });
    const node = await nodeApiFromKubeconfig(kubeconfig(api.url), 60_000);
    const e = await rejection(node.patchNodeStatus("win-node-1", { status: {} }));
    await api.close();
    assert.match(e.message, /declares 1073741824 bytes/);
  });

  it("ends a request whose answer trickles in at its deadline, though the connection is never idle", async () => {
    let timer: NodeJS.Timeout | undefined;
    const api = await serve((res) => {
      res.writeHead(200, { "content-type": "application/json" });
      let ticks = 0;
      // A byte every 100 ms, for at most 20 s: under any idle timer, far past the deadline.
      timer = setInterval(() => {
        if (++ticks > 200 || res.destroyed) return void clearInterval(timer);
        res.write(" ");
      }, 100);
    });
    const node = await nodeApiFromKubeconfig(kubeconfig(api.url), 1000);
    const started = Date.now();
    const e = await rejection(node.createEvent("default", { metadata: { name: "e" } }));
    const took = Date.now() - started;
    clearInterval(timer);
    await api.close();
    assert.match(e.message, /no complete answer within 1000 ms/);
    assert.ok(took < 3000, `took ${took} ms`);
    assert.ok(e.retryable);
  });

  it("ends a request whose headers trickle in at its deadline", async () => {
    let timer: NodeJS.Timeout | undefined;
    const api = await serve((res) => {
      const socket = res.socket;
      socket?.write("HTTP/1.1 200 OK\r\n");
      let ticks = 0;
      timer = setInterval(() => {
        if (++ticks > 200 || !socket || socket.destroyed) return void clearInterval(timer);
        socket.write(`X-Slow-${ticks}: y\r\n`);
      }, 100);
    });
    const node = await nodeApiFromKubeconfig(kubeconfig(api.url), 1000);
    const started = Date.now();
    const e = await rejection(node.patchNode("win-node-1", { metadata: {} }));
    clearInterval(timer);
    await api.close();
    assert.ok(Date.now() - started < 3000);
    assert.match(e.message, /within 1000 ms/);
  });
});

describe("bounded reads of Ignition's http sources", () => {
  const resource = (source: string): Resource => ({
    source,
    compression: undefined,
    httpHeaders: [],
    hash: undefined,
    at: "storage.files[0].contents",
  });

  it("cancels a 1 GiB body at the size limit, naming the resource's path", async () => {
    const api = await serve((res) => {
      res.writeHead(200);
      stream(res, GIB);
    });
    const e = await resolveResource(resource(`${api.url}/big`), {
      allowUnverifiedHttp: true,
      retry: { maxBytes: 8 * 1024 * 1024 },
    }).then(
      () => undefined,
      (x: unknown) => x,
    );
    await api.close();
    assert.ok(e instanceof AgentError, String(e));
    assert.match(e.message, /^storage\.files\[0\]\.contents\.source: GET .* over the 8388608-byte limit/);
    assert.ok(api.sent() < 256 * 1024 * 1024, `the server sent ${api.sent()} bytes`);
  });

  it("ends an attempt whose body trickles in at its deadline, and says so after the last attempt", async () => {
    let timers: NodeJS.Timeout[] = [];
    const api = await serve((res) => {
      res.writeHead(200);
      let ticks = 0;
      const t = setInterval(() => {
        if (++ticks > 100 || res.destroyed) return void clearInterval(t);
        res.write(" ");
      }, 100);
      timers.push(t);
    });
    const started = Date.now();
    const e = await resolveResource(resource(`${api.url}/slow`), {
      allowUnverifiedHttp: true,
      sleep: () => Promise.resolve(),
      retry: { attempts: 2, attemptTimeoutMs: 700 },
    }).then(
      () => undefined,
      (x: unknown) => x,
    );
    timers.forEach(clearInterval);
    timers = [];
    await api.close();
    assert.ok(e instanceof AgentError, String(e));
    assert.match(e.message, /after 2 attempts: no complete answer within 700 ms/);
    assert.ok(Date.now() - started < 5000);
  });
});

describe("bounded reads of the content archive download", () => {
  it("cancels a 1 GiB archive at the size limit and names the URL without its query (a SAS)", async () => {
    const api = await serve((res) => {
      res.writeHead(200);
      stream(res, GIB);
    });
    const e = await downloadBounded(
      `${api.url}/content.tgz?sig=secret-sas`,
      {},
      { maxBytes: 8 * 1024 * 1024, timeoutMs: 60_000 },
    ).then(
      () => undefined,
      (x: unknown) => x,
    );
    await api.close();
    assert.ok(e instanceof AgentError, String(e));
    assert.equal(e.code, "FETCH_FAILED");
    assert.match(e.message, /content\.tgz: the answer is over the 8388608-byte limit/);
    assert.doesNotMatch(e.message, /secret-sas/);
    assert.ok(api.sent() < 256 * 1024 * 1024, `the server sent ${api.sent()} bytes`);
  });

  it("ends a download that trickles in at its deadline", async () => {
    let timer: NodeJS.Timeout | undefined;
    const api = await serve((res) => {
      res.writeHead(200);
      let ticks = 0;
      timer = setInterval(() => {
        if (++ticks > 100 || res.destroyed) return void clearInterval(timer);
        res.write(" ");
      }, 100);
    });
    const started = Date.now();
    const e = await downloadBounded(`${api.url}/content.tgz`, {}, { maxBytes: 1024 * 1024, timeoutMs: 700 }).then(
      () => undefined,
      (x: unknown) => x,
    );
    clearInterval(timer);
    await api.close();
    assert.ok(e instanceof AgentError, String(e));
    assert.match(e.message, /no complete answer within 700 ms/);
    assert.ok(Date.now() - started < 3000);
  });
});
