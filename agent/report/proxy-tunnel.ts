/**
 * A kubeconfig's `proxy-url`, honoured as client-go honours it for the
 * reporter's requests: an `http://`, `https://` or `socks5://` proxy, with any
 * credentials in the URL (`Proxy-Authorization: Basic` for HTTP proxies,
 * RFC 1929 username and password for SOCKS5).
 *
 * - An https API server is reached through a tunnel (HTTP CONNECT, or a SOCKS5
 *   CONNECT), and TLS to the server runs inside it, verified exactly as
 *   without a proxy: the proxy sees only ciphertext and cannot stand in for
 *   the server.
 * - A plain-http API server behind an HTTP proxy gets its request in absolute
 *   form, sent to the proxy; behind a SOCKS5 proxy, through a tunnel.
 * - An https proxy is itself verified against the cluster's CA settings (Go's
 *   transport uses one TLS config for proxy and server alike), under the
 *   proxy's own host name; unlike Go, the node's client certificate is never
 *   shown to it, since a proxy has no use for the node's identity.
 * - A SOCKS5 proxy is given the server's host name, not an address resolved
 *   here, as Go's SOCKS dialer does: the proxy resolves it.
 *
 * Error messages name the proxy by host and port only, never its credentials.
 */
import { isIPv4, isIPv6, type Socket, connect as netConnect } from "node:net";
import { type ConnectionOptions, connect as tlsConnect } from "node:tls";

/** The proxy schemes a kubeconfig's `proxy-url` may use, as client-go accepts them. */
export const PROXY_SCHEMES = ["http:", "https:", "socks5:"] as const;

/** Where a proxied request goes. */
export interface ProxyTarget {
  readonly proxy: URL;
  /** How an https proxy's certificate is checked. */
  readonly tls: Pick<ConnectionOptions, "ca" | "rejectUnauthorized">;
  readonly timeoutMs: number;
}

/** The longest CONNECT answer read before giving up on it. */
const MAX_ANSWER = 16 * 1024;

/** A host name as sockets take it: an IPv6 literal without its brackets. */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

/** The port a URL names, or its scheme's default. */
export function portOf(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : url.protocol === "socks5:" ? 1080 : 80;
}

/** `Basic …` for credentials in the proxy URL, or undefined when it has none. */
export function proxyAuthorization(proxy: URL): string | undefined {
  if (proxy.username === "" && proxy.password === "") return undefined;
  return `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64")}`;
}

/** Connects to the proxy itself (TLS for an https proxy); the error names the proxy. */
export function dialProxy(t: ProxyTarget): Promise<Socket> {
  const host = bareHost(t.proxy);
  const port = portOf(t.proxy);
  const secure = t.proxy.protocol === "https:";
  return new Promise((resolve, reject) => {
    const socket: Socket = secure
      ? tlsConnect({ host, port, ...t.tls, ...(isIPv4(host) || isIPv6(host) ? {} : { servername: host }) })
      : netConnect({ host, port });
    const fail = (e: Error): void => {
      socket.destroy();
      reject(new Error(`proxy ${t.proxy.host}: ${e.message}`));
    };
    socket.setTimeout(t.timeoutMs, () => fail(new Error(`no connection within ${t.timeoutMs} ms`)));
    socket.once("error", fail);
    socket.once(secure ? "secureConnect" : "connect", () => {
      socket.off("error", fail);
      socket.setTimeout(0);
      resolve(socket);
    });
  });
}

/**
 * Opens a tunnel through the proxy to `server`'s host and port and resolves
 * with the socket, now a byte stream to the server (TLS to the server is the
 * caller's). Rejects, naming the proxy, when it cannot be reached or refuses.
 */
export async function tunnelTo(server: URL, t: ProxyTarget): Promise<Socket> {
  const socket = await dialProxy(t);
  const host = bareHost(server);
  const port = portOf(server);
  return t.proxy.protocol === "socks5:"
    ? socks5Connect(socket, host, port, t)
    : httpConnect(socket, `${server.hostname}:${port}`, t);
}

/** Reads a proxy's answers off `socket` in paused mode, so nothing past them is consumed. */
class Handshake {
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private readonly onReadable = (): void => this.signal();
  private readonly onEnd = (): void => this.signal(new Error("closed the connection before it answered"));
  private readonly onError = (e: Error): void => this.signal(e);
  private readonly onTimeout = (): void => this.signal(new Error(`gave no answer within ${this.t.timeoutMs} ms`));

  constructor(
    private readonly socket: Socket,
    private readonly t: ProxyTarget,
  ) {
    socket.on("readable", this.onReadable);
    socket.once("end", this.onEnd);
    socket.once("close", this.onEnd);
    socket.once("error", this.onError);
    socket.setTimeout(t.timeoutMs, this.onTimeout);
  }

  send(bytes: Buffer | string): void {
    this.socket.write(bytes);
  }

  /** Exactly `n` bytes of answer. */
  async take(n: number): Promise<Buffer> {
    for (;;) {
      const chunk = this.socket.read(n) as Buffer | null;
      if (chunk !== null && chunk.length === n) return chunk;
      // read(n) gives fewer than n bytes only once the stream has ended.
      if (chunk !== null) throw new Error("closed the connection in the middle of its answer");
      await this.next();
    }
  }

  /** The answer up to and including `end`, of at most `max` bytes. */
  async takeThrough(end: string, max: number): Promise<Buffer> {
    let seen = Buffer.alloc(0);
    for (;;) {
      const chunk = this.socket.read() as Buffer | null;
      if (chunk !== null) {
        seen = Buffer.concat([seen, chunk]);
        const at = seen.indexOf(end);
        if (at >= 0) {
          if (at + end.length < seen.length) this.socket.unshift(seen.subarray(at + end.length));
          return seen.subarray(0, at + end.length);
        }
        if (seen.length > max) throw new Error(`answered with more than ${max} bytes of headers`);
      }
      await this.next();
    }
  }

  /**
   * Hands the socket on as it was before the handshake: no listener of ours
   * and, with the last `readable` listener gone, neither paused nor flowing,
   * so the next reader's `data` listener starts it. Nothing may follow the
   * answer: both protocols have the client speak first once the tunnel is up.
   */
  release(): Socket {
    this.detach();
    if (this.socket.readableLength > 0) {
      this.socket.destroy();
      throw new Error("sent bytes past its answer before the client spoke");
    }
    return this.socket;
  }

  /** Gives up: the socket is closed. */
  abort(): void {
    this.detach();
    this.socket.destroy();
  }

  private detach(): void {
    this.socket.off("readable", this.onReadable);
    this.socket.off("end", this.onEnd);
    this.socket.off("close", this.onEnd);
    this.socket.off("error", this.onError);
    this.socket.setTimeout(0);
  }

  private signal(failure?: Error): void {
    this.failure ??= failure;
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private next(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.wake = () => (this.failure ? reject(this.failure) : resolve());
    });
  }
}

/** Runs a handshake on `socket`; on failure the socket is closed and the error names the proxy. */
async function handshake(socket: Socket, t: ProxyTarget, steps: (h: Handshake) => Promise<void>): Promise<Socket> {
  const h = new Handshake(socket, t);
  try {
    await steps(h);
    return h.release();
  } catch (e) {
    h.abort();
    throw new Error(`proxy ${t.proxy.host}: ${(e as Error).message}`);
  }
}

/**
 * Asks the HTTP proxy on `socket` for a tunnel to `authority` (`host:port`, an
 * IPv6 host in brackets); resolves once the proxy answers 2xx, and rejects with
 * its answer otherwise.
 */
export function httpConnect(socket: Socket, authority: string, t: ProxyTarget): Promise<Socket> {
  const auth = proxyAuthorization(t.proxy);
  return handshake(socket, t, async (h) => {
    h.send(
      `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ""}\r\n`,
    );
    const answer = await h.takeThrough("\r\n\r\n", MAX_ANSWER);
    const status = answer.subarray(0, answer.indexOf("\r\n")).toString("latin1");
    const code = /^HTTP\/1\.[01] (\d{3})/.exec(status)?.[1];
    if (code === undefined || !code.startsWith("2"))
      throw new Error(`refused CONNECT ${authority}: ${status.slice(0, 200) || "(no status line)"}`);
  });
}

/** What a SOCKS5 server's reply codes mean (RFC 1928 §6). */
const SOCKS5_REPLIES: Readonly<Record<number, string>> = {
  1: "general failure",
  2: "connection not allowed by its rules",
  3: "network unreachable",
  4: "host unreachable",
  5: "connection refused",
  6: "TTL expired",
  7: "command not supported",
  8: "address type not supported",
};

/** The RFC 1928 address of a host: IPv4 (1), a domain name (3) or IPv6 (4). */
function socks5Address(host: string): Buffer {
  if (isIPv4(host)) return Buffer.from([1, ...host.split(".").map(Number)]);
  if (isIPv6(host)) return Buffer.concat([Buffer.from([4]), ipv6Bytes(host)]);
  const name = Buffer.from(host, "utf8");
  if (name.length > 255) throw new Error(`host name ${host.slice(0, 40)}… is longer than SOCKS5's 255 bytes`);
  return Buffer.concat([Buffer.from([3, name.length]), name]);
}

/** The 16 bytes of an IPv6 address in the form URL gives (hex groups, at most one `::`). */
function ipv6Bytes(host: string): Buffer {
  const [head = "", tail] = host.split("::");
  const groups = (s: string): string[] => (s === "" ? [] : s.split(":"));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** Asks the SOCKS5 proxy on `socket` for a connection to `host`:`port` (RFC 1928, RFC 1929 credentials). */
export function socks5Connect(socket: Socket, host: string, port: number, t: ProxyTarget): Promise<Socket> {
  const user = Buffer.from(decodeURIComponent(t.proxy.username), "utf8");
  const pass = Buffer.from(decodeURIComponent(t.proxy.password), "utf8");
  const withCredentials = user.length > 0 || pass.length > 0;
  return handshake(socket, t, async (h) => {
    if (user.length > 255 || pass.length > 255) throw new Error("a SOCKS5 username or password is at most 255 bytes");
    const address = socks5Address(host);
    h.send(Buffer.from(withCredentials ? [5, 2, 0, 2] : [5, 1, 0]));
    const [version, method] = await h.take(2);
    if (version !== 5) throw new Error("is not a SOCKS5 server");
    if (method === 2 && withCredentials) {
      h.send(Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]));
      const [, status] = await h.take(2);
      if (status !== 0) throw new Error("refused the username and password");
    } else if (method !== 0) {
      throw new Error(
        withCredentials
          ? "accepts neither no authentication nor a username and password"
          : "asks for credentials, and proxy-url gives none",
      );
    }
    const portBytes = Buffer.alloc(2);
    portBytes.writeUInt16BE(port);
    h.send(Buffer.concat([Buffer.from([5, 1, 0]), address, portBytes]));
    const [, reply, , type] = await h.take(4);
    if (reply !== 0)
      throw new Error(`refused a connection to ${host}:${port}: ${SOCKS5_REPLIES[reply ?? -1] ?? `reply ${reply}`}`);
    // The address the proxy bound, which a client has no use for, then its port.
    const bound = type === 1 ? 4 : type === 4 ? 16 : type === 3 ? (await h.take(1))[0]! : -1;
    if (bound < 0) throw new Error(`answered with an unknown address type ${type}`);
    await h.take(bound + 2);
  });
}
