/**
 * `winfleet render` of fleets of 10, 100, 500 and 1,000 BYO hosts (the byoh stack
 * with its host list grown), as it ships: the operator bundle built for the run,
 * one process per render (its start and Pulumi's load included). Time per host,
 * and the cost of each added host from 100 to 1,000 hosts against from 10 to
 * 100, in the same run. Goal: linear (that ratio near 1), 1,000 hosts in under 5 s.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { buildBundles } from "../../agent/release/build";
import { STACKS_DIR } from "../../infra/stack-file";
import { goal, medianMs } from "./harness";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-render-"));
const WINFLEET = join(work, "dist", "winfleet", "bin", "winfleet.js");

function stackWith(hosts: number): string {
  const doc = parseYaml(readFileSync(join(STACKS_DIR, "Pulumi.byoh.yaml"), "utf8")) as {
    config: Record<string, { content: Record<string, unknown>; pools: { hosts: unknown[] }[] }>;
  };
  const fleet = doc.config["winfleet:fleet"];
  if (!fleet) throw new Error("Pulumi.byoh.yaml has no winfleet:fleet");
  fleet.content.dir = join(REPO, "content");
  fleet.pools[0]!.hosts = Array.from({ length: hosts }, (_, i) => ({
    name: `win-${String(i + 1).padStart(4, "0")}`,
    address: `10.${Math.floor(i / 250)}.${i % 250}.10`,
    user: "Administrator",
    privateKeySecret: "sshKeyOps",
    hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICXNVOzIIm1BJv7lEfBEQ5F0Gf3qntI7gbw6dHIL99mE",
  }));
  const file = join(work, `Pulumi.byo${hosts}.yaml`);
  writeFileSync(file, toYaml(doc));
  return file;
}

/** Renders `file` through the bundle into a fresh directory; the resources it reports. */
function render(file: string, keep?: string): number {
  const out = keep ?? mkdtempSync(join(work, "out-"));
  rmSync(out, { recursive: true, force: true });
  const r = spawnSync(process.execPath, [WINFLEET, "render", "--stack", file, "--out", out], {
    encoding: "utf8",
    env: { ...process.env, WINFLEET_CODE_CACHE: join(work, "code-cache") },
  });
  if (r.status !== 0) throw new Error(`winfleet render ${file}: ${r.stderr}`);
  if (!keep) rmSync(out, { recursive: true, force: true });
  return Number(/: (\d+) resources/.exec(r.stdout)?.[1] ?? NaN);
}

// The floor under a render: a bare Node process that writes the files the render wrote (read into memory first),
// one after the other, into a fresh folder on the same disk. Thousands of small files are not free on every disk.
const WRITE_FILES = `
const fs = require("node:fs"), path = require("node:path");
const [src, dst] = process.argv.slice(1);
const files = [];
const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
  const f = path.join(d, e.name);
  if (e.isDirectory()) walk(f); else files.push([path.relative(src, f), fs.readFileSync(f)]);
} };
walk(src);
for (const dir of new Set(files.map(([rel]) => path.dirname(path.join(dst, rel))))) fs.mkdirSync(dir, { recursive: true });
for (const [rel, data] of files) fs.writeFileSync(path.join(dst, rel), data);
`;

/** Wall time of bare Node writing the files of the render in `src`. */
function floorMs(src: string): number {
  const dst = join(work, "floor");
  rmSync(dst, { recursive: true, force: true });
  const t = performance.now();
  const r = spawnSync(process.execPath, ["-e", WRITE_FILES, src, dst], { encoding: "utf8" });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`writing the files of ${src}: ${r.stderr}`);
  rmSync(dst, { recursive: true, force: true });
  return ms;
}

void (async () => {
  try {
    await buildBundles(REPO, join(work, "dist"), ["winfleet"]);
    render(stackWith(1)); // the first start writes the bundle's code cache, as a node's first does
    const results: { hosts: number; ms: number; resources: number }[] = [];
    for (const hosts of [10, 100, 500, 1000]) {
      const file = stackWith(hosts);
      let resources = 0;
      const ms = await medianMs(hosts >= 500 ? 1 : 3, () => {
        resources = render(file);
      });
      results.push({ hosts, ms, resources });
    }
    // Each render pays a fixed cost first (the process, loading Pulumi, the content build, the
    // cluster side), so linearity is read from the cost of each added host: between 100 and 1,000
    // hosts against between 10 and 100.
    const at = (hosts: number): number => results.find((r) => r.hosts === hosts)?.ms ?? NaN;
    const marginal = (from: number, to: number): number => (at(to) - at(from)) / (to - from);
    for (const r of results) {
      console.log(
        `render ${String(r.hosts).padStart(4)} BYO hosts      ${(r.ms / 1000).toFixed(2).padStart(7)} s | ${(r.ms / r.hosts).toFixed(2).padStart(7)} ms per host | ${r.resources} resources`,
      );
    }
    const early = marginal(10, 100);
    const late = marginal(100, 1000);
    console.log(
      `  each added host: ${early.toFixed(2)} ms from 10 to 100 hosts, ${marginal(100, 500).toFixed(2)} ms from 100 to 500, ${marginal(500, 1000).toFixed(2)} ms from 500 to 1,000`,
    );
    // The same 1,000-host render once more, kept, against bare Node writing its files, back to back.
    const kept = join(work, "kept");
    const t = performance.now();
    render(stackWith(1000), kept);
    const ours = performance.now() - t;
    const floor = floorMs(kept);
    rmSync(kept, { recursive: true, force: true });
    console.log(
      `  1,000 hosts again: ${(ours / 1000).toFixed(2)} s | bare Node writing the same files: ${(floor / 1000).toFixed(2)} s | ratio ${(ours / floor).toFixed(2)}x`,
    );
    goal(
      "render 1,000 BYO hosts",
      `${(at(1000) / 1000).toFixed(2)} s; each host from 100 to 1,000 costs ${(late / early).toFixed(2)}x one from 10 to 100`,
      "< 5 s, <= 1.2x",
      at(1000) < 5000 && late <= 1.2 * early,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
})();
