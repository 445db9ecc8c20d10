/**
 * How the journal grows: 10,000 applies through the lifecycle engine (each one
 * an upgrade or a downgrade of one component between two versions, so every
 * apply runs and journals a plan), with the journal's size and `status`'s time
 * printed after 10, 100, 1,000 and 10,000 of them, in process and through the
 * agent bundle built for the run. Goal: both bounded (the last figure within
 * a small factor of the one at 100). `WINFLEET_BENCH_APPLIES` sets the count.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveWith } from "../../agent/service/lifecycle-setup";
import { apply } from "../../agent/lifecycle/engine";
import { stateDir } from "../../agent/lifecycle/journal";
import { readStatus } from "../../agent/lifecycle/status";
import { buildBundles } from "../../agent/release/build";
import { goal, medianMs } from "./harness";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-journal-"));
const AGENT = join(work, "dist", "agent", "bin", "winfleet-agent.js");
const APPLIES = Number(process.env.WINFLEET_BENCH_APPLIES ?? 10_000);

/** Content with one component in two versions, each laying down a file, and a template for each. */
function content(): string {
  const dir = join(work, "content");
  mkdirSync(join(dir, "templates"), { recursive: true });
  mkdirSync(join(dir, "components"), { recursive: true });
  for (const version of ["1", "2"]) {
    const metadata = {
      name: "app",
      version,
      shell: "sh",
      install: { commands: ["true"] },
      uninstall: { commands: ["true"] },
    };
    const ign = {
      ignition: { version: "3.3.0" },
      storage: {
        files: [
          {
            path: `/bin/metadata/app_${version}.metadata`,
            mode: 420,
            contents: { source: `data:,${encodeURIComponent(JSON.stringify(metadata))}` },
          },
          { path: "/opt/app/version", mode: 420, overwrite: true, contents: { source: `data:,${version}` } },
        ],
      },
    };
    writeFileSync(join(dir, "components", `app-${version}.ign`), JSON.stringify(ign));
    writeFileSync(
      join(dir, "templates", `t${version}.json`),
      JSON.stringify({ name: `t${version}`, version: "1", packages: [`app_${version}`] }),
    );
  }
  return dir;
}

void (async () => {
  try {
    await buildBundles(REPO, join(work, "dist"), ["agent"]);
    const dir = content();
    const root = join(work, "root");
    mkdirSync(root, { recursive: true });
    const env = { ...process.env, WINFLEET_CODE_CACHE: join(work, "code-cache") };
    const marks = new Set([10, 100, 1000, 10_000, APPLIES].filter((n) => n <= APPLIES));
    const rows: { applies: number; bytes: number; statusMs: number; cliMs: number; applyMs: number }[] = [];
    let sinceMark = performance.now();
    let sinceCount = 0;
    for (let i = 1; i <= APPLIES; i++) {
      const template = i % 2 === 1 ? "t1" : "t2";
      const r = resolveWith(undefined, { root, content: dir, template });
      const outcome = await apply({ content: dir, template }, r.deps({ event() {} }, "journal bench"));
      if (outcome.kind !== "converged") throw new Error(`apply ${i} ended ${outcome.kind}`);
      sinceCount++;
      if (!marks.has(i)) continue;
      const applyMs = (performance.now() - sinceMark) / sinceCount;
      const statusMs = await medianMs(9, () => readStatus(root));
      const cliMs = await medianMs(5, () => {
        const s = spawnSync(process.execPath, [AGENT, "status", "--root", root], { encoding: "utf8", env });
        if (s.status !== 0) throw new Error(`status: ${s.stderr}`);
      });
      rows.push({ applies: i, bytes: statSync(join(stateDir(root), "journal.json")).size, statusMs, cliMs, applyMs });
      console.log(
        `after ${String(i).padStart(6)} applies: journal ${(statSync(join(stateDir(root), "journal.json")).size / 1024).toFixed(1).padStart(7)} KiB | status ${statusMs.toFixed(2).padStart(6)} ms in process, ${cliMs.toFixed(1).padStart(6)} ms CLI | ${applyMs.toFixed(1)} ms per apply since the last mark`,
      );
      sinceMark = performance.now();
      sinceCount = 0;
    }
    const first = rows.find((r) => r.applies === 100) ?? rows[0];
    const last = rows.at(-1);
    if (first && last) {
      const growth = last.bytes / first.bytes;
      goal(
        `journal after ${last.applies} applies`,
        `${(last.bytes / 1024).toFixed(1)} KiB, ${growth.toFixed(2)}x its size after ${first.applies}`,
        "bounded: <= 1.5x",
        growth <= 1.5,
      );
      const slower = last.cliMs / first.cliMs;
      goal(
        `status after ${last.applies} applies`,
        `${last.cliMs.toFixed(1)} ms CLI, ${slower.toFixed(2)}x its time after ${first.applies}`,
        "bounded: <= 1.5x",
        slower <= 1.5,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
})();
