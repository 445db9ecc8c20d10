/**
 * Who is at the other end of a loopback TCP connection. On Linux the kernel
 * lists both ends of every connection in `/proc/net/tcp` (and `tcp6`), each
 * with the uid that owns its socket; the client's end is the entry whose local
 * address is the connection's remote one and whose remote address is its local
 * one. A server on 127.0.0.1 can so refuse every user but its own, as a Unix
 * socket's permissions would, and still be reached by a browser.
 */
import { readFileSync } from "node:fs";
import type { Socket } from "node:net";

/** `/proc/net/tcp` address (`0100007F:1F90`) for an IPv4 or IPv6 address and a port. */
function procAddress(address: string, port: number): string[] {
  const portHex = port.toString(16).toUpperCase().padStart(4, "0");
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.(\d+)$/i.exec(address);
  if (v4) {
    const bytes = v4.slice(1, 5).map((b) => Number(b));
    const le = [...bytes]
      .reverse()
      .map((b) => b.toString(16).toUpperCase().padStart(2, "0"))
      .join("");
    // As an IPv4 socket, and as an IPv4-mapped one on an IPv6 socket.
    const mapped = `0000000000000000FFFF0000${le}`;
    return [`${le}:${portHex}`, `${mapped}:${portHex}`];
  }
  if (address === "::1") return [`00000000000000000000000001000000:${portHex}`];
  return [];
}

/** Reads the kernel's socket tables; a missing one (not Linux, no /proc) reads as empty. */
function tables(): string[] {
  const out: string[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    try {
      out.push(...readFileSync(file, "utf8").split("\n").slice(1));
    } catch {
      // not there on this host
    }
  }
  return out;
}

/**
 * The uid owning the client end of `socket`, an accepted loopback connection; undefined where the
 * kernel does not say (not Linux, or the client end is already gone).
 */
export function loopbackPeerUid(
  socket: Pick<Socket, "localAddress" | "localPort" | "remoteAddress" | "remotePort">,
  read: () => string[] = tables,
): number | undefined {
  const { localAddress, localPort, remoteAddress, remotePort } = socket;
  if (!localAddress || !remoteAddress || localPort === undefined || remotePort === undefined) return undefined;
  const clientEnds = new Set(procAddress(remoteAddress, remotePort));
  const serverEnds = new Set(procAddress(localAddress, localPort));
  for (const line of read()) {
    const f = line.trim().split(/\s+/);
    // sl, local, remote, st, tx:rx, tr:when, retrnsmt, uid, …
    if (f.length < 8) continue;
    if (clientEnds.has(f[1] ?? "") && serverEnds.has(f[2] ?? "")) return Number(f[7]);
  }
  return undefined;
}
