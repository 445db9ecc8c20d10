/**
 * A soak of `winfleet-agent serve` from the bundle built for the run, verifying
 * every 100 ms (the shortest `verifyIntervalSeconds` accepts) with its broker
 * serving, started with the Node options the agent's service uses: RSS and open
 * file descriptors at the start, the middle and the end (RSS also each twentieth
 * of the way), and V8's live heap (after a full collection) from a second `serve`
 * beside it. Goal: flat once warm (the second half's RSS ceiling and the end's
 * live heap within 5% of the first half's, descriptors back to the start's).
 * `WINFLEET_SOAK_SECONDS` sets the length (default 600).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_NODE_FLAGS } from "../../agent/common";
import { buildBundles } from "../../agent/release/build";
import { goal } from "./harness";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-soak-"));
const AGENT = join(work, "dist", "agent", "bin", "winfleet-agent.js");
const SECONDS = Number(process.env.WINFLEET_SOAK_SECONDS ?? 600);

/** Content with one component laying down 50 files, so each verify hashes something. */
function content(): string {
  const dir = join(work, "content");
  mkdirSync(join(dir, "templates"), { recursive: true });
  mkdirSync(join(dir, "components"), { recursive: true });
  const metadata = { name: "app", version: "1", shell: "sh", install: { commands: ["true"] } };
  const files = Array.from({ length: 50 }, (_, i) => ({
    path: `/opt/app/f${i}`,
    mode: 420,
    overwrite: true,
    contents: { source: `data:,${"x".repeat(4096)}${i}` },
  }));
  const ign = {
    ignition: { version: "3.3.0" },
    storage: {
      files: [
        {
          path: "/bin/metadata/app_1.metadata",
          mode: 420,
          contents: { source: `data:,${encodeURIComponent(JSON.stringify(metadata))}` },
        },
        ...files,
      ],
    },
  };
  writeFileSync(join(dir, "components", "app.ign"), JSON.stringify(ign));
  writeFileSync(
    join(dir, "templates", "soak.json"),
    JSON.stringify({ name: "soak", version: "1.0.0", packages: ["app_1"] }),
  );
  return dir;
}

/** What one mark reads: RSS and descriptors from the measured process, the live heap from the probed one. */
interface Sample {
  readonly rssMb: number;
  readonly heapMb: number;
  readonly fds: number;
}

/** Waits for a file in `dir` that was not in `before` and ends in `suffix`, and for its size to settle. */
async function newFile(dir: string, before: ReadonlySet<string>, suffix: string, what: string): Promise<string> {
  let file: string | undefined;
  for (let i = 0; i < 300 && !file; i++) {
    await new Promise((r) => setTimeout(r, 100));
    file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith(suffix));
  }
  if (!file) throw new Error(`serve wrote no ${what}`);
  let size = -1;
  for (let i = 0; i < 300; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const now = statSync(join(dir, file)).size;
    if (now === size && now > 0) break;
    size = now;
  }
  return join(dir, file);
}

function rssMb(child: ChildProcess): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid ?? -1}/status`, "utf8"))?.[1] ?? NaN) / 1024;
}

/** The fewest of a few reads a moment apart: a verify every 100 ms has files open at any instant. */
async function openFds(child: ChildProcess): Promise<number> {
  let fds = Infinity;
  for (let i = 0; i < 5; i++) {
    fds = Math.min(fds, readdirSync(`/proc/${child.pid ?? -1}/fd`).length);
    await new Promise((r) => setTimeout(r, 37));
  }
  return fds;
}

/**
 * The live heap, from a diagnostic report the process writes on SIGUSR2 right after a heap snapshot
 * on SIGWINCH: writing a snapshot runs a full collection first, so the report's heap in use is the
 * live set, not wherever the last collection left it.
 */
async function liveHeapMb(child: ChildProcess, reports: string): Promise<number> {
  const snapshots = new Set(readdirSync(reports));
  child.kill("SIGWINCH");
  rmSync(await newFile(reports, snapshots, ".heapsnapshot", "heap snapshot"));
  const before = new Set(readdirSync(reports));
  child.kill("SIGUSR2");
  const file = await newFile(reports, before, ".json", "diagnostic report");
  const report = JSON.parse(readFileSync(file, "utf8")) as { javascriptHeap: { usedMemory: number } };
  return report.javascriptHeap.usedMemory / 1024 / 1024;
}

/** One `serve` with a root, content and broker of its own. */
interface Served {
  readonly child: ChildProcess;
  readonly root: string;
  readonly log: () => string;
}

function serve(name: string, probes: readonly string[], env: NodeJS.ProcessEnv): Served {
  const dir = join(work, name);
  const root = join(dir, "root");
  mkdirSync(root, { recursive: true });
  const config = join(dir, "agent.json");
  writeFileSync(
    config,
    JSON.stringify({
      content: join(work, "content"),
      template: "soak",
      templateVersion: "1.0.0",
      root,
      nodeName: name,
      verifyIntervalSeconds: 0.1,
      autoCorrect: true,
      broker: { listen: join(dir, "broker.sock"), proxy: join(dir, "proxy.sock"), white_list: { processPaths: [] } },
    }),
  );
  // As the agent's service starts it: the heap option lets garbage grow further between full collections.
  const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, ...probes, AGENT, "serve", "--config", config], {
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  let log = "";
  const take = (d: Buffer): void => {
    log = (log + d.toString()).slice(-100_000);
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  return { child, root, log: () => log };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

void (async () => {
  const children: ChildProcess[] = [];
  try {
    await buildBundles(REPO, join(work, "dist"), ["agent"]);
    content();
    const reports = join(work, "reports");
    mkdirSync(reports);
    const env = { ...process.env, WINFLEET_CODE_CACHE: join(work, "code-cache") };
    // Two alike, side by side: a heap snapshot leaves the allocator holding tens of MB, so the one
    // whose RSS is judged is never probed, and the other gives the live heap.
    const measured = serve("measured", [], env);
    const probed = serve(
      "probed",
      [
        "--heapsnapshot-signal=SIGWINCH",
        `--diagnostic-dir=${reports}`,
        "--report-on-signal",
        "--report-signal=SIGUSR2",
        `--report-directory=${reports}`,
      ],
      env,
    );
    children.push(measured.child, probed.child);
    // Settled: the first apply done and a few verifies run.
    await sleep(10_000);
    for (const s of [measured, probed])
      if (s.child.exitCode !== null) throw new Error(`serve exited ${s.child.exitCode}: ${s.log().slice(-2000)}`);
    const mark = async (): Promise<Sample> => ({
      rssMb: rssMb(measured.child),
      fds: await openFds(measured.child),
      heapMb: await liveHeapMb(probed.child, reports),
    });
    const marks: { at: string; s: Sample }[] = [{ at: "start", s: await mark() }];
    // A clean verify logs nothing: drift made at the start and corrected by the middle shows the
    // verifies ran, and the repair it takes is part of warming up, not of the half judged flat.
    const drifted = join(measured.root, "opt", "app", "f0");
    writeFileSync(drifted, "drift");
    // RSS each twentieth of the way: V8's memory reducer and glibc give pages back now and then, so
    // one read may land in a dip; a leak raises the ceiling the reads reach.
    const trend: number[] = [];
    for (let i = 1; i <= 20; i++) {
      await sleep((SECONDS * 1000) / 20);
      trend.push(rssMb(measured.child));
      if (i === 10) marks.push({ at: "middle", s: await mark() });
    }
    const corrected = readFileSync(drifted, "utf8") !== "drift";
    marks.push({ at: "end", s: await mark() });
    for (const { at, s } of marks)
      console.log(
        `serve soak, ${at.padEnd(6)}  RSS ${s.rssMb.toFixed(1).padStart(6)} MB | live heap ${s.heapMb.toFixed(1).padStart(5)} MB | open fds ${s.fds}`,
      );
    console.log(`  RSS each twentieth: ${trend.map((r) => r.toFixed(1)).join(", ")} MB`);
    if (!corrected)
      console.log(
        measured
          .log()
          .split("\n")
          .filter((l) => /drift|verif|error|repair|step|apply/.test(l))
          .slice(-12)
          .join("\n"),
      );
    console.log(
      `  ${SECONDS} s, verify every 100 ms; drift made at the start ${corrected ? "was corrected by the middle" : "was NOT corrected by the middle"}`,
    );
    // The first half includes warming up (compiled code, the allocator's arenas for the thread
    // pool's hashing): a leak shows as growth in the second half as well.
    const [start, middle, end] = [marks[0]?.s, marks[1]?.s, marks[2]?.s];
    if (start && middle && end) {
      const pct = (to: number, from: number): string => `${((to / from - 1) * 100).toFixed(1)}%`;
      console.log(`  start to end: RSS ${pct(end.rssMb, start.rssMb)}, heap ${pct(end.heapMb, start.heapMb)}`);
      const ceiling = (reads: readonly number[]): number => Math.max(...reads);
      const [first, second] = [ceiling(trend.slice(0, 10)), ceiling(trend.slice(10))];
      goal(
        "serve soak, second half",
        `RSS ceiling ${pct(second, first)} (${first.toFixed(1)} -> ${second.toFixed(1)} MB), live heap ${pct(end.heapMb, middle.heapMb)}, fds ${start.fds} / ${middle.fds} / ${end.fds}`,
        "flat: the second half's RSS ceiling and the end's live heap within 5% of the first half's, fds back to the start's",
        second <= first * 1.05 && end.heapMb <= middle.heapMb * 1.05 && end.fds === start.fds && corrected,
      );
    }
  } finally {
    for (const c of children) c.kill("SIGTERM");
    await sleep(500);
    rmSync(work, { recursive: true, force: true });
  }
})();
