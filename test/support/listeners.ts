/**
 * Every socket a set of processes listens on, read from the kernel (`/proc/net`
 * and each process's descriptors), and a probe that tries each one as another
 * local user (`nobody`, through setpriv): what a stranger on the machine meets.
 */
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { runCommand } from "./engines";

/** A listening socket and the process that holds it. */
export type Listener =
  | { readonly kind: "tcp"; readonly address: string; readonly port: number; readonly pid: number }
  | { readonly kind: "unix"; readonly path: string; readonly pid: number };

function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m?.[1]) out.add(m[1]);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // the process is gone
  }
  return out;
}

function ipv4(hex: string): string {
  return (hex.match(/../g) ?? [])
    .reverse()
    .map((b) => parseInt(b, 16))
    .join(".");
}

function ipv6(hex: string): string {
  const words = (hex.match(/.{8}/g) ?? []).map((w) => (w.match(/../g) ?? []).reverse().join(""));
  const groups = words.join("").match(/.{4}/g) ?? [];
  const text = groups.map((g) => g.replace(/^0+(?=.)/, "")).join(":");
  return text === "0:0:0:0:0:0:0:1" ? "::1" : text === "0:0:0:0:0:0:0:0" ? "::" : text;
}

/** The live processes whose command line mentions `needle` (a state directory they were started with). */
export function pidsMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(needle)) out.push(Number(pid));
    } catch {
      // gone
    }
  }
  return out;
}

/** The sockets `pids` listen on: TCP (IPv4 and IPv6) and Unix (paths, and abstract names as `@name`). */
export function listenersOf(pids: readonly number[]): Listener[] {
  const owner = new Map<string, number>();
  for (const pid of pids) for (const inode of socketInodes(pid)) owner.set(inode, pid);
  const out: Listener[] = [];
  for (const [file, v6] of [
    ["/proc/net/tcp", false],
    ["/proc/net/tcp6", true],
  ] as const) {
    for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] !== "0A") continue; // LISTEN
      const pid = owner.get(f[9] ?? "");
      if (pid === undefined) continue;
      const [addr = "", port = ""] = (f[1] ?? "").split(":");
      out.push({ kind: "tcp", address: v6 ? ipv6(addr) : ipv4(addr), port: parseInt(port, 16), pid });
    }
  }
  for (const line of readFileSync("/proc/net/unix", "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // Num RefCount Protocol Flags Type St Inode Path; __SO_ACCEPTCON (0x10000) marks a listener.
    if (!f[3] || (parseInt(f[3], 16) & 0x10000) === 0) continue;
    const pid = owner.get(f[6] ?? "");
    if (pid === undefined || f[7] === undefined) continue;
    out.push({ kind: "unix", path: f[7], pid });
  }
  return out;
}

/** What one listener did for the stranger. */
export interface ProbeResult {
  readonly listener: string;
  /** Whether anything answered with data: an HTTP success, or bytes from a bare socket. */
  readonly served: boolean;
  readonly detail: string;
}

// Run as the other user: for TCP, plain HTTP then TLS without a client certificate, each with the
// requests that read something from the servers the fleet runs (status page, API server, etcd's
// gateway, kubelet); for a Unix socket, a connection and a wait for any byte (a gRPC server sends
// its settings at once).
const PROBE = String.raw`
const net = require("node:net"), tls = require("node:tls");
const targets = JSON.parse(process.argv[1]);
const requests = [
  "GET / HTTP/1.1", "GET /api/status HTTP/1.1", "GET /version HTTP/1.1", "GET /api/v1/secrets HTTP/1.1",
  "GET /healthz HTTP/1.1", "GET /containerLogs/x/y/z HTTP/1.1",
  "POST /v3/kv/range HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: 15\r\n\r\n{\"key\":\"AA==\"}",
];
function once(connect, text) {
  return new Promise((resolve) => {
    let data = "";
    let settled = false;
    const done = (why) => { if (!settled) { settled = true; s.destroy(); resolve({ data, why }); } };
    let s;
    try { s = connect(); } catch (e) { return resolve({ data, why: String(e.code || e) }); }
    s.setTimeout(3000, () => done("timeout"));
    s.on("error", (e) => done(String(e.code || e.message)));
    s.on("data", (c) => { data += c.toString("latin1"); if (data.length > 4096) done("data"); });
    s.on("end", () => done("closed"));
    const send = () => { if (text !== null) s.write(text); };
    if (s.encrypted) s.once("secureConnect", send); else s.once("connect", send);
  });
}
function served(r) {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(r.data);
  return m ? Number(m[1]) < 400 : false;
}
(async () => {
  const out = [];
  for (const t of targets) {
    const results = [];
    if (t.kind === "tcp") {
      const host = t.address === "0.0.0.0" || t.address === "::" ? "127.0.0.1" : t.address;
      for (const req of requests) {
        const text = req.replace(" HTTP/1.1", " HTTP/1.1\r\nhost: " + (host.includes(":") ? "[" + host + "]" : host) + ":" + t.port + "\r\nconnection: close") + (req.startsWith("POST") ? "" : "\r\n\r\n");
        results.push(await once(() => net.connect(t.port, host), text));
        results.push(await once(() => tls.connect({ port: t.port, host, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] }), text));
      }
      const ok = results.filter(served);
      out.push({ listener: "tcp " + host + ":" + t.port, served: ok.length > 0,
        detail: ok.length > 0 ? ok[0].data.split("\r\n")[0] : [...new Set(results.map((r) => (/^HTTP\S* \d+/.exec(r.data) || [r.why])[0]))].join(", ") });
    } else {
      const path = t.path.startsWith("@") ? "\0" + t.path.slice(1) : t.path;
      const r = await once(() => net.connect(path), null);
      out.push({ listener: "unix " + t.path, served: r.data.length > 0, detail: r.data.length > 0 ? r.data.length + " bytes" : r.why });
    }
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

/** Whether this process can run a probe as another user (it must be root). */
export function canProbeAsAnotherUser(): boolean {
  return process.getuid?.() === 0;
}

/** Tries every listener as `nobody` and says what each did (asynchronously: a server in this process must answer). */
export async function probeAsNobody(listeners: readonly Listener[]): Promise<ProbeResult[]> {
  const r = await runCommand(
    "setpriv",
    [
      "--reuid=65534",
      "--regid=65534",
      "--clear-groups",
      "--",
      process.execPath,
      "-e",
      PROBE,
      JSON.stringify(listeners),
    ],
    { cwd: "/", timeoutMs: 300_000 },
  );
  if (r.code !== 0) throw new Error(`the probe as nobody failed (${String(r.code)}): ${r.stderr}`);
  return JSON.parse(r.stdout) as ProbeResult[];
}
