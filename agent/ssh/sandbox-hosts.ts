/**
 * Sandbox hosts reached only over SSH, on this machine: what Windows' OpenSSH server is to a
 * Windows host a bring-your-own stack adopts, these are to the `sandbox` template (the BYO path's
 * POSIX twin, the way the local fleet is the Azure path's). Each host has its own address (a
 * network namespace, or a loopback address where namespaces cannot be made), its own Debian
 * `sshd` (run in the foreground with a config, host key and authorized key under the run's
 * directory), and its own user, made for the run (a system account whose home is under the run's
 * directory; its shell is /bin/sh). Stopping removes every process the hosts' users run, the
 * sshds, the users, the namespaces and their links; nothing outside the run's directory stays.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { closeSync, openSync, readFileSync, readdirSync, writeSync } from "node:fs";
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import {
  type HostNetwork,
  type NetworkMode,
  canMakeNamespaces,
  freeSubnet,
  loopbackAddresses,
  loopbackHost,
  makeNamespace,
  namespacesOf,
  removeNamespace,
} from "./network";

const run = promisify(execFile);

/** Debian's OpenSSH server, which `npm run setup` installs. */
export const SSHD = "/usr/sbin/sshd";

/** How to start the hosts. */
export interface SshHostsOptions {
  readonly count: number;
  /** The run's directory (made if missing, left world-traversable so the hosts' users reach their homes). */
  readonly dir: string;
  /** Host names, by index from 1. @default `byo-<i>` */
  readonly name?: (index: number) => string;
  /** `auto` takes namespaces where this process can make them. @default "auto" */
  readonly mode?: NetworkMode | "auto";
  /**
   * Ports on this machine's 127.0.0.1 a host must reach at the same address from inside its
   * namespace (a control plane's API server); loopback hosts reach them as they are.
   */
  readonly forwardPorts?: readonly number[];
  readonly log?: (line: string) => void;
}

/** One running host. */
export interface SshHost {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  /** The account made for the run, and its home. */
  readonly user: string;
  readonly home: string;
  /** The user's private key (OpenSSH format) the fleet logs in with, and its file. */
  readonly privateKey: string;
  readonly privateKeyFile: string;
  /** The public host key the host presents, in authorized_keys format: what a stack pins. */
  readonly hostKey: string;
  /** sshd's log (LogLevel VERBOSE), each line after the time it was written: every connection, login and session. */
  readonly sshdLog: string;
  /** The network namespace its processes run in (netns mode). */
  readonly namespace?: string;
  /** Stops its sshd and every process of its user: the host is down. */
  down(): Promise<void>;
  /**
   * Starts its sshd again; with `anotherHostKey`, presenting a second key made for the run instead of its own (as a
   * host impersonating this one would), until the next plain `up`. Resolves with the key it presents.
   */
  up(options?: { readonly anotherHostKey?: boolean }): Promise<{ readonly hostKey: string }>;
}

/** The running hosts. */
export interface SshHosts {
  readonly mode: NetworkMode;
  readonly hosts: readonly SshHost[];
  /** Stops everything the run started and removes users, namespaces and links. Safe to call twice. */
  stop(): Promise<void>;
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const runId = (): string => Array.from({ length: 5 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");

async function sh(command: string, args: readonly string[]): Promise<string> {
  try {
    return (await run(command, [...args], { encoding: "utf8" })).stdout;
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr ?? (e as Error).message;
    throw new Error(`${command} ${args.join(" ")} failed: ${stderr.trim()}`);
  }
}

/** The pids of processes running as `uid` (read from /proc, so no process is named by a pattern). */
function pidsOf(uid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (real !== undefined && Number(real) === uid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Kills every process of `uid` and waits (bounded) until none is left. */
async function killUser(uid: number): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = pidsOf(uid);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, round < 10 ? "SIGTERM" : "SIGKILL");
      } catch {
        // exited already
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`processes of uid ${uid} are still running after SIGKILL: ${pidsOf(uid).join(", ")}`);
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

const live = new Set<ChildProcess>();
let hooked = false;
function track(child: ChildProcess): ChildProcess {
  if (!hooked) {
    hooked = true;
    // A runner that dies without stop() must not leave sshds listening.
    process.once("exit", () => {
      for (const c of live) c.kill("SIGKILL");
    });
  }
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}

function sshdConfig(dir: string, address: string, port: number, user: string, hostKey: string): string {
  return `${[
    `ListenAddress ${address}:${port}`,
    `HostKey ${join(dir, hostKey)}`,
    `PidFile ${join(dir, "sshd.pid")}`,
    `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
    `AllowUsers ${user}`,
    "PermitRootLogin no",
    "PubkeyAuthentication yes",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "UsePAM no",
    // The run's directory lies under a world-writable /tmp, which StrictModes would refuse.
    "StrictModes no",
    "AllowTcpForwarding no",
    "X11Forwarding no",
    "PermitUserEnvironment no",
    "PrintMotd no",
    // CopyToRemote copies over SFTP, as Windows' OpenSSH server serves it.
    "Subsystem sftp internal-sftp",
    "LogLevel VERBOSE",
  ].join("\n")}\n`;
}

async function keygen(file: string, comment: string): Promise<void> {
  await rm(file, { force: true });
  await rm(`${file}.pub`, { force: true });
  await sh("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file]);
}

/** The authorized_keys form of a public key file: type and key, no comment. */
async function publicKey(file: string): Promise<string> {
  const [type, key] = (await readFile(file, "utf8")).trim().split(/\s+/);
  return `${type} ${key}`;
}

/**
 * Starts `count` hosts and resolves once each sshd accepts connections.
 * @throws naming what failed; whatever was started is removed first.
 */
export async function startSshHosts(options: SshHostsOptions): Promise<SshHosts> {
  const log = options.log ?? (() => undefined);
  const mode: NetworkMode =
    options.mode === undefined || options.mode === "auto"
      ? (await canMakeNamespaces())
        ? "netns"
        : "loopback"
      : options.mode;
  if (process.getuid?.() !== 0)
    throw new Error("sandbox hosts make a user each and run sshd as root: run as root (the CI machines are)");
  const id = runId();
  const prefix = `wf${id}`;
  await mkdir(options.dir, { recursive: true });
  await chmod(options.dir, 0o755);
  // sshd reads a user's authorized keys as that user, and the user's shell starts in its home: every directory
  // above the run's must let others through.
  for (let d = dirname(resolve(options.dir)); d !== dirname(d); d = dirname(d)) {
    if (((await stat(d)).mode & 0o001) === 0)
      throw new Error(
        `${d} does not let other users through (chmod o+x): the hosts' users could not reach their homes`,
      );
  }
  await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  const cleanups: (() => Promise<void>)[] = [];
  const hosts: SshHost[] = [];
  const stop = async (): Promise<void> => {
    const errors: string[] = [];
    for (const c of cleanups.splice(0).reverse()) await c().catch((e: unknown) => errors.push(String(e)));
    for (const ns of await namespacesOf(prefix)) await removeNamespace(ns);
    if (errors.length > 0) throw new Error(`stopping the sandbox hosts: ${errors.join("; ")}`);
  };
  try {
    const loopback = mode === "loopback" ? await loopbackAddresses(options.count, randomInt) : undefined;
    const subnet = mode === "netns" ? await freeSubnet(randomInt) : "";
    for (let i = 1; i <= options.count; i++) {
      const name = options.name?.(i) ?? `byo-${i}`;
      const dir = join(options.dir, name);
      await mkdir(dir, { recursive: true, mode: 0o755 });
      const net: HostNetwork = loopback
        ? loopbackHost(loopback.addresses[i - 1] ?? "")
        : await makeNamespace(prefix, i, subnet);
      if (net.namespace) {
        const ns = net.namespace;
        cleanups.push(() => removeNamespace(ns));
      }
      const port = loopback?.port ?? 22;
      const user = `${prefix}${i}`;
      const home = join(dir, "home");
      await sh("useradd", [
        "--system",
        "--gid",
        "nogroup",
        "--home-dir",
        home,
        "--no-create-home",
        "--shell",
        "/bin/sh",
        // '*': no password, yet not a locked account (sshd refuses locked ones).
        "--password",
        "*",
        user,
      ]);
      const uid = Number((await sh("id", ["-u", user])).trim());
      cleanups.push(async () => {
        await killUser(uid);
        await sh("userdel", [user]);
      });
      await mkdir(home, { recursive: true, mode: 0o700 });
      await chown(home, uid, Number((await sh("id", ["-g", user])).trim()));
      const privateKeyFile = join(dir, "id_ed25519");
      await keygen(privateKeyFile, `${user}@winfleet-sandbox`);
      await writeFile(join(dir, "authorized_keys"), `${await publicKey(`${privateKeyFile}.pub`)}\n`, { mode: 0o644 });
      await keygen(join(dir, "ssh_host_ed25519_key"), `${name}-host-key`);
      await keygen(join(dir, "other_host_ed25519_key"), `${name}-another-host-key`);
      const configFile = join(dir, "sshd_config");
      const otherConfig = join(dir, "sshd_config.other");
      await writeFile(configFile, sshdConfig(dir, net.address, port, user, "ssh_host_ed25519_key"));
      await writeFile(otherConfig, sshdConfig(dir, net.address, port, user, "other_host_ed25519_key"));
      await sh(SSHD, ["-t", "-f", configFile]);
      const sshdLog = join(dir, "sshd.log");
      let sshd: ChildProcess | undefined;
      const forwarders: ChildProcess[] = [];
      const startSshd = async (config = configFile): Promise<void> => {
        const from = (await readFile(sshdLog, "utf8").catch(() => "")).length;
        const [command = SSHD, ...args] = [...net.exec, SSHD, "-D", "-e", "-f", config];
        const child = track(spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] }));
        sshd = child;
        timestamped(child, sshdLog);
        await listening(sshdLog, from, `Server listening on ${net.address} port ${port}`, child);
      };
      const startForwarders = (): void => {
        if (!net.namespace) return;
        for (const p of options.forwardPorts ?? []) {
          // Inside the namespace, 127.0.0.1:<p> leads to this machine's 127.0.0.1:<p>: socat accepts there and,
          // per connection, connects from this process's own network namespace (nsenter into it).
          const back = `EXEC:nsenter --net=/proc/${process.pid}/ns/net socat STDIO TCP\\:127.0.0.1\\:${p}`;
          const [command = "ip", ...args] = [
            ...net.exec,
            "socat",
            `TCP-LISTEN:${p},bind=127.0.0.1,reuseaddr,fork`,
            back,
          ];
          forwarders.push(track(spawn(command, args, { stdio: "ignore" })));
        }
      };
      await startSshd();
      startForwarders();
      const down = async (): Promise<void> => {
        await stopChild(sshd);
        await killUser(uid);
      };
      cleanups.push(async () => {
        await down();
        for (const f of forwarders.splice(0)) await stopChild(f);
      });
      const host: SshHost = {
        name,
        address: net.address,
        port,
        user,
        home,
        privateKey: await readFile(privateKeyFile, "utf8"),
        privateKeyFile,
        hostKey: await publicKey(join(dir, "ssh_host_ed25519_key.pub")),
        sshdLog,
        ...(net.namespace ? { namespace: net.namespace } : {}),
        down,
        up: async (opts = {}) => {
          await stopChild(sshd);
          await startSshd(opts.anotherHostKey ? otherConfig : configFile);
          const presented = opts.anotherHostKey ? "other_host_ed25519_key" : "ssh_host_ed25519_key";
          return { hostKey: await publicKey(join(dir, `${presented}.pub`)) };
        },
      };
      hosts.push(host);
      log(`${name}: ${user}@${net.address}:${port}${net.namespace ? ` (namespace ${net.namespace})` : ""}`);
    }
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
  return { mode, hosts, stop };
}

/** Appends each line `child` writes on stderr to `file`, after the time it was written (sshd -e writes none). */
function timestamped(child: ChildProcess, file: string): void {
  const fd = openSync(file, "a");
  const lines = createInterface({ input: child.stderr ?? Readable.from([]) });
  lines.on("line", (line) => writeSync(fd, `${new Date().toISOString()} ${line}\n`));
  lines.once("close", () => closeSync(fd));
}

/** Waits (bounded) until `line` is in the log after `from`; fails with the log's tail if the process exits first. */
async function listening(logFile: string, from: number, line: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const text = (await readFile(logFile, "utf8").catch(() => "")).slice(from);
    if (text.includes(line)) return;
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline)
      throw new Error(
        `sshd did not start listening (${line}): ${text.split("\n").slice(-8).join("\n") || "no output"}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}
