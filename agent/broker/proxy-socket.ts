/**
 * The proxy socket (a named pipe on Windows): one listener, two protocols told
 * apart by a connection's first bytes.
 *
 * - gRPC (HTTP/2's client preface, `PRI * HTTP/2.0…`): handed, bytes and all,
 *   to the `TunnelService` server — the contract in `winfleet/proxy.proto`,
 *   for any client, and `ListPorts`.
 * - A stream tunnel, what winfleet's own `cli proxy` uses: the client sends
 *   one line, `winfleet-tunnel/1 <port> <client name>\n`; the broker answers
 *   `ok\n` once it has reached `localhost:<port>` on the host, and from then on
 *   the connection carries the tunnelled bytes as they are, each direction
 *   ending on its own. A refusal is one line, `error <gRPC status name>
 *   <message>\n`, and the end of the connection. With `winfleet-tunnel/2`
 *   instead, the bytes after `ok` travel in frames whose last one ends its
 *   direction (tunnel-frames.ts): what `cli proxy` uses over a Windows named
 *   pipe, which cannot carry one direction's end on its own.
 *
 * The stream tunnel exists for speed: a gRPC tunnel moves every chunk as a
 * protobuf message on one HTTP/2 stream, whose 64 KiB flow-control windows
 * and copies cap it at a fraction of a plain relay (see test/bench/broker.bench.ts).
 */
import { type Server, type Socket, connect, createServer } from "node:net";
import { errorMessage, type Logger } from "../common";
import { joinFramed } from "./tunnel-frames";

/** The first line of a stream tunnel, up to its port. */
export const STREAM_TUNNEL_MAGIC = "winfleet-tunnel/1 ";
/** The first line of a framed stream tunnel (each direction's end inside the connection). */
export const FRAMED_TUNNEL_MAGIC = "winfleet-tunnel/2 ";
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const PLAIN_MAGIC = Buffer.from(STREAM_TUNNEL_MAGIC);
const FRAMED_MAGIC = Buffer.from(FRAMED_TUNNEL_MAGIC);
/** A first line longer than this is not a tunnel request. */
const MAX_HEADER = 512;
/** How long a new connection has to say which protocol it speaks. */
const HEADER_TIMEOUT_MS = 10_000;

/** What the proxy socket serves. */
export interface ProxySocketOptions {
  /** The ports tunnels may reach (read at each connection, so a reloaded config applies at once). */
  readonly ports: () => readonly number[];
  /** Takes a gRPC connection (grpc-js's connection injector). */
  readonly injectGrpc: (connection: Socket) => void;
  readonly log: Logger;
  /** The host's side of every tunnel. @default "localhost" */
  readonly host?: string;
}

/** A listening proxy socket. */
export interface ProxySocket {
  /** Stops listening and ends every connection (stream tunnels and gRPC alike). */
  close(): Promise<void>;
}

/** Reads a request line of a stream tunnel: `<port> <client>` after the magic. */
function parseRequest(line: string): { port: number; client: string } | undefined {
  const m = /^(\d{1,5}) ?(.*)$/.exec(line.slice(STREAM_TUNNEL_MAGIC.length));
  if (!m) return undefined;
  const port = Number(m[1]);
  return port >= 1 && port <= 65_535 ? { port, client: m[2] ?? "" } : undefined;
}

/** Whether `head` is a prefix of `whole` or starts with it. */
function startsLike(head: Buffer, whole: Buffer): boolean {
  const n = Math.min(head.length, whole.length);
  return head.subarray(0, n).equals(whole.subarray(0, n));
}

/** Serves the proxy socket on `path` (already cleared of a dead socket file). */
export async function listenProxySocket(path: string, options: ProxySocketOptions): Promise<ProxySocket> {
  const { log } = options;
  // Every connection, gRPC ones included: closing the listener waits for all of them.
  const connections = new Set<Socket>();

  const streamTunnel = (socket: Socket, line: string, rest: Buffer, framed: boolean): void => {
    const request = parseRequest(line);
    const refuse = (code: string, message: string): void => {
      socket.end(`error ${code} ${message.replace(/\s+/g, " ")}\n`);
      socket.resume(); // read on to the client's end, so the connection closes
    };
    if (!request) return refuse("InvalidArgument", "expected: winfleet-tunnel/1 <port> <client>");
    const allowed = new Set(options.ports());
    if (!allowed.has(request.port)) {
      const list = allowed.size > 0 ? [...allowed].join(", ") : "none";
      return refuse("PermissionDenied", `port ${request.port} is not in proxyPorts (allowed: ${list})`);
    }
    log.debug("tunnel opened", { port: request.port, client: request.client });
    const upstream = connect({ port: request.port, host: options.host ?? "localhost", allowHalfOpen: true });
    let connected = false;
    // A client gone while the host's port is being reached takes that connection with it.
    socket.once("close", () => upstream.destroy());
    upstream.on("error", (e) => {
      if (!connected)
        refuse("Unavailable", `could not reach localhost:${request.port} on the host: ${errorMessage(e)}`);
      else socket.destroy();
    });
    upstream.once("connect", () => {
      connected = true;
      if (socket.destroyed) return void upstream.destroy();
      upstream.setNoDelay(true);
      socket.on("error", () => upstream.destroy());
      socket.write("ok\n");
      if (framed) {
        // Closed by its client once both directions ended (tunnel-frames.ts).
        joinFramed(socket, upstream, rest, false);
        socket.resume();
        return;
      }
      upstream.once("close", () => socket.destroy());
      if (rest.length > 0) upstream.write(rest);
      // pipe() keeps both directions under backpressure and ends each on its own.
      socket.pipe(upstream);
      upstream.pipe(socket);
      socket.resume();
    });
  };

  const server: Server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
    let head: Buffer = Buffer.alloc(0);
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
    const timer = setTimeout(() => socket.destroy(), HEADER_TIMEOUT_MS);
    const stop = (): void => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.pause();
    };
    const onData = (chunk: Buffer): void => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      if (startsLike(head, HTTP2_PREFACE)) {
        if (head.length < HTTP2_PREFACE.length) return;
        stop();
        socket.unshift(head);
        options.injectGrpc(socket);
        return;
      }
      const framed = startsLike(head, FRAMED_MAGIC);
      const newline = head.indexOf(0x0a);
      if ((!framed && !startsLike(head, PLAIN_MAGIC)) || (newline < 0 && head.length > MAX_HEADER)) {
        stop();
        socket.destroy();
        return;
      }
      if (newline < 0) return;
      stop();
      streamTunnel(socket, head.subarray(0, newline).toString("utf8"), head.subarray(newline + 1), framed);
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
    socket.resume();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const c of connections) c.destroy();
      }),
  };
}
