/**
 * The lifecycle engine's two hot paths, each against a baseline measured in the
 * same run:
 * - 30 short commands through the sh session runner vs one `sh` process per
 *   command (spawned the same way, with the same environment);
 * - `verify` over 200 files / 50 MB vs `sha512sum` over the same files, both
 *   in-process (engine) and as the CLI (the agent bundle built for the run, its code cache
 *   warm, as a node runs it).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootedMapper } from "../../agent/ignition";
import { buildBundles } from "../../agent/release/build";
import { verifyHost } from "../../agent/lifecycle/verify";
import { ShSession } from "../../agent/shell/sh-session";
import { goal, medianMs, report } from "./harness";

const work = mkdtempSync(join(tmpdir(), "bench-lifecycle-"));
const REPO = join(__dirname, "..", "..");
/** The agent bundle built for this run; the CLI rows time it, as a node runs it. */
const AGENT = join(work, "dist", "agent", "bin", "winfleet-agent.js");
const agentEnv = { ...process.env, WINFLEET_CODE_CACHE: join(work, "code-cache") };

const env: Record<string, string> = {
  WINFLEET_ROOT: work,
  WINFLEET_NODE_NAME: "bench",
  WINFLEET_COMPONENT: "bench",
  WINFLEET_COMPONENT_VERSION: "1.0.0",
  WINFLEET_PHASE: "install",
  WINFLEET_SECTION: "install",
  GREETING: "hello from winfleet",
};
// Short commands as content writes them: tests, variable use, a file write.
const commands = Array.from(
  { length: 30 },
  (_, i) =>
    [
      `test -n "$WINFLEET_ROOT"`,
      `echo "step ${i}: $GREETING"`,
      `printf '%s\\n' "$WINFLEET_COMPONENT" > "$WINFLEET_ROOT/out-${i}"`,
    ][i % 3] ?? "true",
);

function perProcess(command: string): Promise<number | null> {
  return new Promise((resolve) => {
    const c = spawn("/bin/sh", ["-c", command], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    c.stdout.resume();
    c.stderr.resume();
    c.on("close", resolve);
  });
}

// The same commands without the file write: rewriting a non-empty file makes ext4 flush it on
// close (auto_da_alloc, about 1 ms here), a cost both sides pay that hides the runner's own.
const builtins = commands.map((c, i) => (i % 3 === 2 ? `printf '%s\\n' "$WINFLEET_COMPONENT" >/dev/null` : c));

async function commandsBench(label: string, set: readonly string[]): Promise<void> {
  const session = new ShSession({ cwd: work });
  await session.run({ command: "true", env, timeoutMs: 10_000 }); // the session starts once per apply
  const ours = await medianMs(15, async () => {
    for (const command of set) {
      const r = await session.run({ command, env, timeoutMs: 10_000 });
      if (r.exitCode !== 0) throw new Error(`${command}: ${r.stderr.toString()}`);
    }
  });
  const baseline = await medianMs(15, async () => {
    for (const command of set) if ((await perProcess(command)) !== 0) throw new Error(command);
  });
  await session.close();
  report(label, { name: "session", ms: ours }, { name: "sh per command", ms: baseline });
  console.log(
    `  ${(baseline / ours).toFixed(1)}x faster than a process per command; ${(ours / set.length).toFixed(3)} ms per command through the session`,
  );
  goal(label, `${(baseline / ours).toFixed(1)}x faster than one sh per command`, ">= 10x", baseline / ours >= 10);
}

async function verifyBench(): Promise<void> {
  const root = join(work, "host");
  const files: string[] = [];
  const content: { path: string; contents: { source: string }; mode: number }[] = [];
  // 200 files, 50 MB: a few large ones and many small, as a node's binaries and configs are.
  for (let i = 0; i < 200; i++) {
    const size =
      i < 10
        ? 4 * 1024 * 1024 + 512 * 1024
        : Math.floor((50 * 1024 * 1024 - 10 * (4 * 1024 * 1024 + 512 * 1024)) / 190);
    const rel = `opt/app/d${i % 10}/f${i}.bin`;
    files.push(join(root, rel));
    content.push({ path: `/${rel}`, contents: { source: `bundle:///files/f${i}.bin` }, mode: 0o644 });
    mkdirSync(join(work, "bundle", "files"), { recursive: true });
    writeFileSync(join(work, "bundle", "files", `f${i}.bin`), randomBytes(size));
  }
  // Install them through the real engine so the ledger and journal are the real thing.
  const contentDir = join(work, "content");
  mkdirSync(join(contentDir, "templates"), { recursive: true });
  mkdirSync(join(contentDir, "components"), { recursive: true });
  const { createHash } = await import("node:crypto");
  const { readFileSync } = await import("node:fs");
  const ign = {
    ignition: { version: "3.3.0" },
    storage: {
      files: [
        {
          path: "/bin/metadata/big_1.metadata",
          mode: 420,
          contents: {
            source: `data:,${encodeURIComponent(JSON.stringify({ name: "big", version: "1", shell: "sh", install: { commands: [] } }))}`,
          },
        },
        ...content.map((c, i) => {
          const data = readFileSync(join(work, "bundle", "files", `f${i}.bin`));
          return {
            ...c,
            contents: {
              source: `bundle:///components/files/f${i}.bin`,
              verification: { hash: `sha512-${createHash("sha512").update(data).digest("hex")}` },
            },
          };
        }),
      ],
    },
  };
  mkdirSync(join(contentDir, "components", "files"), { recursive: true });
  for (let i = 0; i < 200; i++)
    writeFileSync(
      join(contentDir, "components", "files", `f${i}.bin`),
      readFileSync(join(work, "bundle", "files", `f${i}.bin`)),
    );
  writeFileSync(join(contentDir, "components", "big.ign"), JSON.stringify(ign));
  writeFileSync(
    join(contentDir, "templates", "big.json"),
    JSON.stringify({ name: "big", version: "1", packages: ["big_1"] }),
  );
  mkdirSync(root, { recursive: true });
  const applied = spawnSync(
    process.execPath,
    [AGENT, "apply", "--content", contentDir, "--template", "big", "--root", root],
    { encoding: "utf8", env: agentEnv },
  );
  if (applied.status !== 0) throw new Error(`apply failed: ${applied.stderr}`);

  const engine = await medianMs(7, async () => {
    const r = await verifyHost(root, rootedMapper(root));
    if (r.items.length !== 0 || r.checked !== 201)
      throw new Error(`verify saw drift: ${JSON.stringify(r.items.slice(0, 3))}`);
  });
  const cli = await medianMs(5, () => {
    const r = spawnSync(process.execPath, [AGENT, "verify", "--root", root], { encoding: "utf8", env: agentEnv });
    if (r.status !== 0) throw new Error(r.stdout + r.stderr);
  });
  const sha = await medianMs(7, () => {
    const r = spawnSync("sha512sum", files, { stdio: "ignore" });
    if (r.status !== 0) throw new Error("sha512sum failed");
  });
  report("verify 200 files / 50 MB", { name: "engine", ms: engine }, { name: "sha512sum", ms: sha });
  report("verify 200 files / 50 MB", { name: "CLI   ", ms: cli }, { name: "sha512sum", ms: sha });
  console.log("  (the CLI adds the process start, which a node pays once per timer tick in serve)");
  goal("verify, engine", `${(engine / sha).toFixed(2)}x sha512sum`, "<= 1.0x", engine <= sha);
  goal("verify, CLI", `${(cli / sha).toFixed(2)}x sha512sum`, "<= 1.5x", cli <= 1.5 * sha);
}

void (async () => {
  try {
    await buildBundles(REPO, join(work, "dist"), ["agent"]);
    await commandsBench("30 commands (sh)", commands);
    await commandsBench("30 commands, no file I/O", builtins);
    await verifyBench();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
})();
