/**
 * The pod side of the port proxy: listen on a port inside the pod and tunnel
 * each accepted connection to the same port on the host's localhost, every
 * tunnel a stream on one shared connection to the proxy socket.
 */
import { createServer } from "node:net";
import { hostname } from "node:os";
import { openTunnel, tunnelClient } from "./client";

/** A published port. */
export interface Published {
  readonly port: number;
  close(): Promise<void>;
}

/** Listens on `bind:port`; `report` hears about tunnels that fail. */
export async function publish(socket: string, port: number, bind: string, report: (message: string) => void = () => undefined): Promise<Published> {
  const client = tunnelClient(socket);
  // Half-open: the pod side may finish sending while the host side still answers.
  const server = createServer({ allowHalfOpen: true }, (conn) => {
    const call = openTunnel(client, port, hostname());
    conn.on("data", (chunk: Buffer) => {
      if (!call.write({ Frame: { case: "Data", value: chunk } })) {
        conn.pause();
        call.once("drain", () => conn.resume());
      }
    });
    conn.on("end", () => call.end());
    conn.on("error", () => call.cancel());
    call.on("data", (frame: { Frame: { case?: string; value?: unknown } }) => {
      if (frame.Frame.case === "Data" && !conn.write(frame.Frame.value as Uint8Array)) {
        call.pause();
        conn.once("drain", () => call.resume());
      }
    });
    call.on("end", () => conn.end());
    call.on("error", (e: Error) => {
      report(`proxy ${port}: ${e.message}`);
      conn.destroy();
    });
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
        client.close();
      }),
  };
}
