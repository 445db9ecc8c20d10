/**
 * Where each sandbox host lives on the network, made for one run and removed with it: a network
 * namespace of its own joined to this machine by a veth pair (each host its own stack, ports and
 * address, reached only through its link), or, where namespaces cannot be made (not root, no
 * `ip netns`), an address of its own in 127.0.0.0/8, where every address answers on `lo`. Names
 * and addresses carry a run id and are checked against what the machine already has, so runs side
 * by side never share one.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** How the hosts are isolated. */
export type NetworkMode = "netns" | "loopback";

/** One host's place on the network. */
export interface HostNetwork {
  /** The address the host's sshd listens on and the fleet reaches it at. */
  readonly address: string;
  /** The network namespace the host's processes run in (netns mode). */
  readonly namespace?: string;
  /** The command prefix that runs a process inside the host's namespace (empty in loopback mode). */
  readonly exec: readonly string[];
  /** Takes the host off the network (its link down) or brings it back. */
  setLink(up: boolean): Promise<void>;
}

/** Runs `ip` with `args`, naming the command in the error. */
export async function ip(args: readonly string[]): Promise<string> {
  try {
    return (await run("ip", [...args], { encoding: "utf8" })).stdout;
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr ?? (e as Error).message;
    throw new Error(`ip ${args.join(" ")} failed: ${stderr.trim()}`);
  }
}

/** Whether this process can make network namespaces (root and a working `ip netns`). */
export async function canMakeNamespaces(): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  try {
    await ip(["netns", "list"]);
    return true;
  } catch {
    return false;
  }
}

/** Every IPv4 address and route this machine's own network stack has, as text. */
async function takenV4(): Promise<string> {
  return `${await ip(["-o", "-4", "addr", "show"])}\n${await ip(["-4", "route", "show", "table", "all"])}`;
}

/** Addresses with a listening TCP socket on `port` (from /proc/net/tcp), "0.0.0.0" for a wildcard. */
async function listenersOn(port: number): Promise<Set<string>> {
  const out = new Set<string>();
  const text = await readFile("/proc/net/tcp", "utf8").catch(() => "");
  for (const line of text.split("\n").slice(1)) {
    const [, local, , state] = line.trim().split(/\s+/);
    if (state !== "0A" || !local) continue;
    const [hex, portHex] = local.split(":");
    if (!hex || Number.parseInt(portHex ?? "", 16) !== port) continue;
    const b = Number.parseInt(hex, 16);
    out.add([b & 0xff, (b >>> 8) & 0xff, (b >>> 16) & 0xff, b >>> 24].join("."));
  }
  return out;
}

/**
 * `count` loopback addresses `127.X.Y.1…` in a /24 nothing on this machine uses yet, and the SSH
 * port they can all listen on (22 unless a wildcard listener holds it).
 */
export async function loopbackAddresses(
  count: number,
  random: (n: number) => number,
): Promise<{ addresses: string[]; port: number }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const prefix = `127.${1 + random(254)}.${random(256)}`;
    const listening = [...(await listenersOn(22)), ...(await listenersOn(2222))];
    if (listening.some((a) => a.startsWith(`${prefix}.`))) continue;
    const port = (await listenersOn(22)).has("0.0.0.0") ? 2222 : 22;
    if (port === 2222 && (await listenersOn(2222)).has("0.0.0.0")) break;
    return { addresses: Array.from({ length: count }, (_, i) => `${prefix}.${i + 1}`), port };
  }
  throw new Error("no free 127.X.Y.0/24 with port 22 or 2222 free: stop what listens on 0.0.0.0:22 and :2222");
}

/**
 * Makes host `index`'s namespace `<prefix>-<index>` and its veth pair in a /30 of `subnet`
 * (10.X.Y), the host at .2 and this machine's end at .1 of its /30; loopback is up inside.
 */
export async function makeNamespace(prefix: string, index: number, subnet: string): Promise<HostNetwork> {
  const namespace = `${prefix}-${index}`;
  // Interface names hold at most 15 characters: the run's prefix without dashes, the index, a side.
  const short = prefix.replace(/-/g, "").slice(0, 10);
  const outer = `${short}${index}h`;
  const inner = `${short}${index}n`;
  const base = index * 4;
  const gateway = `${subnet}.${base + 1}`;
  const address = `${subnet}.${base + 2}`;
  await ip(["netns", "add", namespace]);
  try {
    await ip(["link", "add", outer, "type", "veth", "peer", "name", inner]);
    await ip(["link", "set", inner, "netns", namespace]);
    await ip(["addr", "add", `${gateway}/30`, "dev", outer]);
    await ip(["link", "set", outer, "up"]);
    const inside = ["-n", namespace];
    await ip([...inside, "addr", "add", `${address}/30`, "dev", inner]);
    await ip([...inside, "link", "set", inner, "up"]);
    await ip([...inside, "link", "set", "lo", "up"]);
    await ip([...inside, "route", "add", "default", "via", gateway]);
  } catch (e) {
    await removeNamespace(namespace, outer);
    throw e;
  }
  return {
    address,
    namespace,
    exec: ["ip", "netns", "exec", namespace],
    setLink: async (up) => void (await ip(["link", "set", outer, up ? "up" : "down"])),
  };
}

/** A /24 `10.X.Y` that no address or route of this machine touches. */
export async function freeSubnet(random: (n: number) => number): Promise<string> {
  const taken = await takenV4();
  for (let attempt = 0; attempt < 50; attempt++) {
    const subnet = `10.${200 + random(50)}.${random(256)}`;
    if (!taken.includes(` ${subnet}.`) && !taken.includes(`${subnet}.0/`)) return subnet;
  }
  throw new Error("no free 10.X.Y.0/24 for the hosts' links");
}

/** Deletes a namespace and its veth pair (deleting either end deletes both); what is gone already is fine. */
export async function removeNamespace(namespace: string, outer?: string): Promise<void> {
  if (outer) await ip(["link", "del", outer]).catch(() => undefined);
  await ip(["netns", "del", namespace]).catch(() => undefined);
}

/** The namespaces whose name starts with `prefix-`. */
export async function namespacesOf(prefix: string): Promise<string[]> {
  const listed = await ip(["netns", "list"]).catch(() => "");
  return listed
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter((n) => n.startsWith(`${prefix}-`));
}

/** A loopback host: its address, nothing to make or remove. */
export function loopbackHost(address: string): HostNetwork {
  return { address, exec: [], setLink: () => Promise.resolve() };
}
