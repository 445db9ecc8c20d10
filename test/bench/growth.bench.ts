/**
 * How cost grows with size, through the agent bundle built for the run:
 * - `ignition apply` of configs of 1,000, 10,000 and 50,000 small files into a
 *   fresh root (fsync on, as it ships);
 * - `apply` of a template of 10, 100 and 500 components, each one file and one
 *   install command, onto a fresh root.
 * Each size's time per item is printed against a reference size's, measured in
 * the same run. Goal: linear (the largest size's cost per item within 1.5× of
 * the reference's, once the process start is taken off). The reference is the
 * smallest size, except for `apply`: at 10 components its per-run costs (the
 * content read, the plan, the process's own start-up work) still outweigh the
 * components, so 100 is the size it is held to.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBundles } from "../../agent/release/build";
import { goal, medianMs } from "./harness";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-growth-"));
const AGENT = join(work, "dist", "agent", "bin", "winfleet-agent.js");
const env = { ...process.env, WINFLEET_CODE_CACHE: join(work, "code-cache") };

let roots = 0;
function freshRoot(): string {
  const root = join(work, `root-${roots++}`);
  mkdirSync(root);
  return root;
}

function agent(args: readonly string[]): void {
  // Its report of every file goes unread: 50,000 files outgrow spawnSync's buffer.
  const r = spawnSync(process.execPath, [AGENT, ...args], {
    encoding: "utf8",
    env,
    stdio: ["ignore", "ignore", "pipe"],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0)
    throw new Error(`winfleet-agent ${args.join(" ")}: ${r.error?.message ?? r.signal ?? r.stderr.slice(-2000)}`);
}

function ignitionConfig(files: number): string {
  const entries = Array.from({ length: files }, (_, i) => ({
    path: `/data/d${Math.floor(i / 1000)}/f${i}`,
    mode: 420,
    contents: { source: `data:,file%20${i}` },
  }));
  const file = join(work, `ign-${files}.json`);
  writeFileSync(file, JSON.stringify({ ignition: { version: "3.3.0" }, storage: { files: entries } }));
  return file;
}

function contentWith(components: number): { dir: string; template: string } {
  const dir = join(work, `content-${components}`);
  mkdirSync(join(dir, "templates"), { recursive: true });
  mkdirSync(join(dir, "components"), { recursive: true });
  for (let i = 0; i < components; i++) {
    const metadata = {
      name: `c${i}`,
      version: "1",
      shell: "sh",
      install: { commands: [`test -f "$WINFLEET_ROOT/opt/c${i}/conf"`] },
    };
    const ign = {
      ignition: { version: "3.3.0" },
      storage: {
        files: [
          {
            path: `/bin/metadata/c${i}_1.metadata`,
            mode: 420,
            contents: { source: `data:,${encodeURIComponent(JSON.stringify(metadata))}` },
          },
          { path: `/opt/c${i}/conf`, mode: 420, contents: { source: `data:,component%20${i}` } },
        ],
      },
    };
    writeFileSync(join(dir, "components", `c${i}.ign`), JSON.stringify(ign));
  }
  writeFileSync(
    join(dir, "templates", "grow.json"),
    JSON.stringify({ name: "grow", version: "1", packages: Array.from({ length: components }, (_, i) => `c${i}_1`) }),
  );
  return { dir, template: "grow" };
}

async function series(
  label: string,
  unit: string,
  sizes: readonly number[],
  run: (size: number) => () => void,
  runs: (size: number) => number,
  reference: number = sizes[0] ?? 1,
): Promise<void> {
  // What a process costs with nothing to do: taken off each figure before it is divided.
  const emptyConfig = ignitionConfig(0);
  const start = await medianMs(5, () => agent(["ignition", "apply", "--root", freshRoot(), emptyConfig]));
  const rows: { size: number; ms: number }[] = [];
  for (const size of sizes) rows.push({ size, ms: await medianMs(runs(size), run(size)) });
  const per = (r: { size: number; ms: number }): number => (r.ms - start) / r.size;
  const first = rows.find((r) => r.size === reference);
  for (const r of rows) {
    console.log(
      `${label} ${String(r.size).padStart(6)} ${unit}   ${(r.ms / 1000).toFixed(2).padStart(7)} s | ${per(r).toFixed(3).padStart(7)} ms per ${unit.replace(/s$/, "")} | vs ${first?.size}: ${first ? (per(r) / per(first)).toFixed(2) : "?"}x`,
    );
  }
  const last = rows.at(-1);
  if (first && last)
    goal(
      `${label}, ${last.size} ${unit}`,
      `${(per(last) / per(first)).toFixed(2)}x the cost per item at ${first.size}`,
      "linear: <= 1.5x",
      per(last) <= 1.5 * per(first),
    );
  console.log(`  (a process that applies nothing: ${start.toFixed(0)} ms, taken off each figure)`);
}

void (async () => {
  try {
    await buildBundles(REPO, join(work, "dist"), ["agent"]);
    const configs = new Map([1000, 10_000, 50_000].map((n) => [n, ignitionConfig(n)]));
    await series(
      "ignition apply",
      "files",
      [1000, 10_000, 50_000],
      (n) => () => agent(["ignition", "apply", "--root", freshRoot(), configs.get(n) ?? ""]),
      (n) => (n >= 50_000 ? 1 : 3),
    );
    const contents = new Map([10, 100, 500].map((n) => [n, contentWith(n)]));
    await series(
      "apply",
      "components",
      [10, 100, 500],
      (n) => () => {
        const c = contents.get(n);
        if (c) agent(["apply", "--content", c.dir, "--template", c.template, "--root", freshRoot()]);
      },
      (n) => (n >= 500 ? 1 : 3),
      100,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
})();
