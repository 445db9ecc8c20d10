/**
 * Driving the real `winfleet-agent` in tests: a process of its own (the leader
 * of its process group, so a crash can take its shell sessions with it), with
 * exit codes and output captured; plus content trees written from a compact
 * description, and host trees read back for comparison.
 */
import { type SpawnOptions, spawn } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, lstatSync, readlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { tempDir } from "./temp";

const REPO = join(__dirname, "..", "..");
const AGENT = join(REPO, "bin", "winfleet-agent.js");

/** The exit status of "reboot required" as a POSIX process reports it (3010 mod 256). */
export const REBOOT_STATUS = 3010 % 256;

/** What a finished agent process did. */
export interface AgentRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * How to run the agent: its environment, and `entry`, the file node runs (default: the checkout's launcher,
 * bin/winfleet-agent.js).
 */
export interface AgentOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly entry?: string;
}

/** Runs `winfleet-agent <args>`; `onSpawn` gets the pid (to kill it mid-run). */
export function agent(
  args: readonly string[],
  options: AgentOptions & { onSpawn?: (pid: number) => void; input?: string } = {},
): Promise<AgentRun> {
  return new Promise((resolve, reject) => {
    const spawnOptions: SpawnOptions = {
      cwd: REPO,
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    };
    const child = spawn(process.execPath, [options.entry ?? AGENT, ...args], spawnOptions);
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    child.stdin?.end(options.input ?? "");
    child.on("error", reject);
    if (child.pid !== undefined) options.onSpawn?.(child.pid);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs apply until it stops asking for a reboot (as a supervisor restarting the agent would). */
export async function applyUntilSettled(
  args: readonly string[],
  options: AgentOptions = {},
  limit = 10,
): Promise<AgentRun & { reboots: number }> {
  let reboots = 0;
  for (let i = 0; i < limit; i++) {
    const r = await agent(["apply", ...args], options);
    if (r.code !== REBOOT_STATUS) return { ...r, reboots };
    reboots++;
  }
  throw new Error(`apply still asked for a reboot after ${limit} runs`);
}

/** A component in a generated content tree. */
export interface ComponentSpec {
  readonly name: string;
  readonly version: string;
  /** Extra metadata fields (shell defaults to sh). */
  readonly metadata?: Record<string, unknown>;
  /** Files below the system drive's root: path → contents. */
  readonly files?: Record<string, string>;
}

/** A template in a generated content tree. */
export interface TemplateSpec {
  readonly name: string;
  readonly version: string;
  readonly packages: readonly string[];
  readonly variables?: Record<string, string>;
}

/** Writes a content source tree and returns its directory. */
export function writeContent(
  components: readonly ComponentSpec[],
  templates: readonly TemplateSpec[],
  dir = tempDir("content-"),
): string {
  for (const c of components) {
    const base = join(dir, "components", c.name, c.version);
    mkdirSync(join(base, "files"), { recursive: true });
    writeFileSync(
      join(base, "metadata.json"),
      JSON.stringify(
        { name: c.name, version: c.version, shell: "sh", install: { commands: [] }, ...c.metadata },
        null,
        2,
      ),
    );
    for (const [path, text] of Object.entries(c.files ?? {})) {
      const file = join(base, "files", ...path.split("/").filter(Boolean));
      mkdirSync(join(file, ".."), { recursive: true });
      writeFileSync(file, text);
    }
  }
  mkdirSync(join(dir, "templates"), { recursive: true });
  for (const t of templates)
    writeFileSync(
      join(dir, "templates", `${t.name}-${t.version}.json`),
      JSON.stringify({ ...t, variables: t.variables ?? {} }, null, 2),
    );
  return dir;
}

/** A host tree as comparable text: every path (outside .winfleet) with its type, mode and bytes or link target. */
export function hostTree(root: string, skip: (rel: string) => boolean = () => false): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      const rel = relative(root, full);
      if (rel === ".winfleet" || skip(rel)) continue;
      const s = lstatSync(full);
      const mode = (s.mode & 0o7777).toString(8);
      if (s.isDirectory()) {
        out[rel] = `dir ${mode}`;
        walk(full);
      } else if (s.isSymbolicLink()) out[rel] = `link ${readlinkSync(full)}`;
      else out[rel] = `file ${mode} ${readFileSync(full).toString("base64")}`;
    }
  };
  walk(root);
  return out;
}
