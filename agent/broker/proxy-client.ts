/**
 * The pod side of the port proxy: listen on a port inside the pod and tunnel
 * each accepted connection to the same port on the host's localhost, every
 * tunnel a stream tunnel of its own on the proxy socket (proxy-socket.ts): a
 * request line, the broker's `ok`, then the bytes as they are — or, over a
 * Windows named pipe, in frames that carry each direction's end
 * (tunnel-frames.ts), since a pipe cannot half-close.
 */
import { type Socket, connect, createServer } from "node:net";
import { hostname } from "node:os";
import { FRAMED_TUNNEL_MAGIC, STREAM_TUNNEL_MAGIC } from "./proxy-socket";
import { joinFramed } from "./tunnel-frames";

/** Whether tunnels are framed here: on Windows, where the proxy socket is a named pipe. */
export const FRAMED_BY_DEFAULT = process.platform === "win32";

/** A published port. */
export interface Published {
  readonly port: number;
  close(): Promise<void>;
}

/** The longest answer line the broker sends. */
const MAX_ANSWER = 4096;

/**
 * Opens a stream tunnel to `port` over the proxy socket `socket` (framed, as
 * `winfleet-tunnel/2`, when `framed`); resolves with the connection once the
 * broker has reached the port, rejects with the broker's refusal
 * (`error <status> <message>`) otherwise.
 */
export function openStreamTunnel(
  socket: string,
  port: number,
  client = hostname(),
  framed = FRAMED_BY_DEFAULT,
): Promise<{ connection: Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const c = connect({ path: socket, allowHalfOpen: true });
    let answer: Buffer = Buffer.alloc(0);
    const fail = (e: Error): void => {
      c.destroy();
      reject(e);
    };
    const onData = (chunk: Buffer): void => {
      answer = answer.length === 0 ? chunk : Buffer.concat([answer, chunk]);
      const newline = answer.indexOf(0x0a);
      if (newline < 0) {
        if (answer.length > MAX_ANSWER) fail(new Error("the broker's answer is not a tunnel answer"));
        return;
      }
      c.off("data", onData);
      c.off("end", onEnd);
      c.off("error", fail);
      c.pause();
      const line = answer.subarray(0, newline).toString("utf8");
      if (line === "ok") return resolve({ connection: c, rest: answer.subarray(newline + 1) });
      fail(
        new Error(
          line.startsWith("error ")
            ? line.slice("error ".length)
            : `unexpected answer from the broker: ${line.slice(0, 200)}`,
        ),
      );
    };
    const onEnd = (): void =>
      fail(new Error("the broker closed the tunnel before answering (is it a winfleet broker?)"));
    c.on("data", onData);
    c.once("end", onEnd);
    c.once("error", fail);
    c.setNoDelay(true);
    c.write(`${framed ? FRAMED_TUNNEL_MAGIC : STREAM_TUNNEL_MAGIC}${port} ${client.replace(/\s+/g, "-")}\n`);
  });
}

/** Listens on `bind:port`; `report` hears about tunnels that fail. */
export async function publish(
  socket: string,
  port: number,
  bind: string,
  report: (message: string) => void = () => undefined,
  framed = FRAMED_BY_DEFAULT,
): Promise<Published> {
  const open = new Set<Socket>();
  // Half-open: the pod side may finish sending while the host side still answers.
  const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (conn) => {
    open.add(conn);
    conn.once("close", () => open.delete(conn));
    conn.setNoDelay(true);
    openStreamTunnel(socket, port, hostname(), framed).then(
      ({ connection, rest }) => {
        open.add(connection);
        connection.once("close", () => open.delete(connection));
        connection.on("error", (e) => {
          report(`proxy ${port}: ${e.message}`);
          conn.destroy();
        });
        conn.on("error", () => connection.destroy());
        if (framed) {
          // Each side ends in its own time, and the pipe closes once both have (tunnel-frames.ts).
          joinFramed(connection, conn, rest, true);
        } else {
          connection.once("close", () => conn.destroy());
          conn.once("close", () => connection.destroy());
          if (rest.length > 0) conn.write(rest);
          conn.pipe(connection);
          connection.pipe(conn);
        }
        conn.resume();
        connection.resume();
      },
      (e: unknown) => {
        report(`proxy ${port}: ${e instanceof Error ? e.message : String(e)}`);
        conn.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, bind, () => resolve());
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const c of open) c.destroy();
      }),
  };
}
