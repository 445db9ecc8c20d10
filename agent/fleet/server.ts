/**
 * The fleet's HTTP face on 127.0.0.1: the status page, its data (`/api/status`
 * and a server-sent event stream `/api/events`), and the control API another
 * `winfleet local` invocation uses (`POST /api/apply`, `POST /api/shutdown`),
 * which wants the bearer token from the state directory's `fleet.json`.
 *
 * Only the fleet's own user is answered: 127.0.0.1 is open to every local
 * user, so each connection's client is looked up in the kernel's socket table
 * (Linux) and another user's gets 403 and nothing else, as a Unix socket's
 * permissions would refuse it. Only requests that name this server in `Host`
 * are answered (421 otherwise): a web page the user visits can point its own
 * host name at 127.0.0.1 (DNS rebinding) and would then read fleet state and
 * error output as same-origin. Event streams are capped, so no client can hold
 * connections without end.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { Socket } from "node:net";
import { AgentError, AgentErrorCode, loopbackPeerUid } from "../common";
import type { FleetManager } from "./manager";
import { statusPage } from "./page";
import type { FleetSpec } from "./spec";

/** What the server calls back into. */
export interface ServerHooks {
  readonly manager: () => FleetManager | undefined;
  readonly token: () => string;
  /** Checks and completes a spec another invocation sent. */
  readonly acceptSpec: (spec: unknown) => FleetSpec;
  readonly shutdown: () => void;
  /** The cluster's view, when the fleet runs one (cluster mode). */
  readonly cluster?: () => Promise<unknown> | undefined;
}

async function body(req: IncomingMessage): Promise<unknown> {
  let text = "";
  for await (const chunk of req) {
    text += (chunk as Buffer).toString("utf8");
    if (text.length > 1_000_000) throw new Error("request too large");
  }
  return text === "" ? {} : (JSON.parse(text) as unknown);
}

/** The most event streams open at once; the page needs one per open tab. */
export const MAX_EVENT_STREAMS = 16;
/** Unsent event data past which a stream whose reader has stalled is closed (EventSource reconnects). */
const STALLED_STREAM_BYTES = 1024 * 1024;

/** The Host values that name this server: its loopback address, or localhost, with its port. */
export function allowedHosts(port: number): ReadonlySet<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(`${JSON.stringify(value)}\n`);
}

/** Starts the server; rejects with a clear error when the port is taken. */
export async function startServer(port: number, hooks: ServerHooks): Promise<{ server: Server; port: number }> {
  const state: ServerState = { hosts: new Set(), streams: 0 };
  const server = createServer((req, res) => {
    void handle(req, res, hooks, state).catch((e: unknown) => {
      if (!res.headersSent) json(res, 500, { error: e instanceof Error ? e.message : String(e) });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) => {
      reject(
        e.code === "EADDRINUSE"
          ? new AgentError(
              AgentErrorCode.AlreadyExists,
              `port ${port} on 127.0.0.1 is in use; choose another with --port (0 picks a free one)`,
            )
          : e,
      );
    });
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const bound = typeof address === "object" && address ? address.port : port;
  state.hosts = allowedHosts(bound);
  return { server, port: bound };
}

interface ServerState {
  hosts: ReadonlySet<string>;
  streams: number;
}

const owners = new WeakMap<Socket, boolean>();

/** Whether the connection's client runs as this process's user (unknown where the kernel does not say: allowed). */
function ownUser(socket: Socket): boolean {
  const known = owners.get(socket);
  if (known !== undefined) return known;
  const me = process.getuid?.();
  const peer = me === undefined ? undefined : loopbackPeerUid(socket);
  const ok = peer === undefined || peer === me;
  owners.set(socket, ok);
  return ok;
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  hooks: ServerHooks,
  state: ServerState,
): Promise<void> {
  if (!ownUser(req.socket)) return json(res, 403, { error: "this fleet answers only the user who started it" });
  const host = (req.headers.host ?? "").toLowerCase();
  if (!state.hosts.has(host))
    return json(res, 421, {
      error: `this server answers only to ${[...state.hosts].join(", ")}, not Host ${JSON.stringify(req.headers.host ?? "")}`,
    });
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const manager = hooks.manager();
  if (req.method === "GET" && url.pathname === "/") {
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'",
    });
    res.end(statusPage());
    return;
  }
  if (req.method === "GET" && url.pathname === "/api/status") {
    if (!manager) return json(res, 503, { error: "the fleet is starting" });
    return json(res, 200, manager.status());
  }
  if (req.method === "GET" && url.pathname === "/api/cluster") {
    const view = hooks.cluster?.();
    if (!view) return json(res, 404, { error: "the fleet runs no cluster (winfleet local up --cluster runs one)" });
    try {
      return json(res, 200, await view);
    } catch (e) {
      return json(res, 502, { error: `the cluster did not answer: ${e instanceof Error ? e.message : String(e)}` });
    }
  }
  if (req.method === "GET" && url.pathname === "/api/events") {
    if (state.streams >= MAX_EVENT_STREAMS) {
      res.setHeader("retry-after", "5");
      return json(res, 503, {
        error: `${MAX_EVENT_STREAMS} event streams are open already; close a page and try again`,
      });
    }
    state.streams++;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
    res.flushHeaders(); // the stream is open now, not at its first event
    const write = (text: string): void => {
      if (res.writableLength > STALLED_STREAM_BYTES) res.destroy();
      else res.write(text);
    };
    const send = (data: unknown): void => write(`data: ${JSON.stringify(data)}\n\n`);
    if (manager) send({ type: "snapshot", status: manager.status() });
    const unsubscribe = manager?.subscribe((e) => send(e));
    const ping = setInterval(() => write(": ping\n\n"), 15_000);
    res.on("close", () => {
      state.streams--;
      clearInterval(ping);
      unsubscribe?.();
    });
    return;
  }
  if (req.method === "POST" && (url.pathname === "/api/apply" || url.pathname === "/api/shutdown")) {
    if (req.headers.authorization !== `Bearer ${hooks.token()}`)
      return json(res, 401, { error: "the token in fleet.json is required" });
    if (url.pathname === "/api/shutdown") {
      json(res, 202, { stopping: true });
      hooks.shutdown();
      return;
    }
    if (!manager) return json(res, 503, { error: "the fleet is starting" });
    let spec: FleetSpec;
    try {
      spec = hooks.acceptSpec(await body(req));
    } catch (e) {
      return json(res, 400, { error: e instanceof Error ? e.message : String(e) });
    }
    return json(res, 200, await manager.apply(spec));
  }
  json(res, 404, { error: `no ${req.method ?? "GET"} ${url.pathname}` });
}
