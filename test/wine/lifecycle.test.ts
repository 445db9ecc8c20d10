/**
 * The lifecycle engine on Windows' Node: its journal, reboot requests, resume
 * and crash safety on Windows paths and files, with the components' commands
 * run by cmd.exe (cmd-shell.ts, a test-only runner: the content's own scripts
 * need PowerShell, which Wine lacks) and a reboot taken as the engine's exit
 * 3010, after which the test starts it again as a supervisor would.
 *
 * Relies on (Windows): a file renamed over another replacing it whole (the
 * journal's atomic writes), the lock's named pipe (created as its first
 * instance, given back when its agent ends however it ends), TerminateProcess
 * ending the agent at once (the crash seam's kill), cmd's exit codes, and the
 * state directory's DACL, which each run sets with icacls and reads back
 * through PowerShell's Get-Acl (state-acl.win32.ts).
 * Wine differs: it does not enforce a named pipe's first instance, on which the
 * lock relies to keep a second agent out, so only a Windows host confirms that
 * a second agent is refused; no suite here starts one, natively either (one
 * agent runs at a time; the lock's own tests run on Linux, where it is an
 * abstract socket). Wine's icacls changes nothing and its powershell.exe prints
 * nothing, so the state directory's DACL is applied but left unconfirmed: only
 * a Windows host confirms it (the Windows workflow, where a run whose state
 * directory is not private after icacls fails). A reboot here is this exit, not
 * shutdown.exe.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { hostTree, writeContent } from "../support";
import { program, scratch, start } from "./support";

const T = { timeout: 600_000 };
const dir = scratch("lifecycle");

/** A command appending its own name to runs.log, so the log says which steps ran and how often. */
const cmd = (id: string): string => `>>"%WINFLEET_ROOT%\\runs.log" echo ${id}`;
const content = writeContent(
  ["a", "b", "c"].map((name, i) => ({
    name,
    version: "1",
    files: { [`/opt/${name}/config`]: `config of ${name}\n`, [`/opt/${name}/bin/run.cmd`]: `@echo ${name}\r\n` },
    metadata: {
      shell: "powershell",
      install: {
        priority: [10, 20, 30][i],
        lprecmds: i === 0 ? [cmd(`${name} lprecmds 0`)] : [],
        commands: [cmd(`${name} commands 0`)],
        reboot: i === 1 ? "yes" : "no",
      },
    },
  })),
  [{ name: "windowsy", version: "1", packages: ["a_1", "b_1", "c_1"] }],
  scratch("content"),
);
const ALL = ["a lprecmds 0", "a commands 0", "b commands 0", "c commands 0"];

/** One run of the engine (lifecycle-program.ts); `crashed` when the crash seam ended it. */
async function run(
  root: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; crashed: boolean; stderr: string }> {
  const r = await start(program("lifecycle"), ["--content", content, "--template", "windowsy", "--root", root], {
    env,
  }).done;
  const crashed = r.stdout === "" && r.code !== 0;
  if (!crashed && r.code !== 0 && r.code !== 3010) assert.fail(`the engine failed (${r.code}): ${r.stderr}`);
  return { code: r.code, crashed, stderr: r.stderr };
}

/** Runs the engine until it converges (at most `limit` runs); returns how many runs it took. */
async function untilConverged(root: string, limit = 5): Promise<number> {
  for (let runs = 1; runs <= limit; runs++) if ((await run(root)).code === 0) return runs;
  throw new Error(`not converged after ${limit} runs`);
}

const runs = (root: string): string[] =>
  existsSync(join(root, "runs.log"))
    ? readFileSync(join(root, "runs.log"), "utf8")
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean)
    : [];
const tree = (root: string) => hostTree(root, (rel) => rel === "runs.log");

interface JournalView {
  run?: { next: number; plan: { file: string } };
}

/** The commands the journal records as done (the steps before `next` of the plan it refers to). */
function doneCommands(root: string): string[] {
  const file = join(root, ".winfleet", "journal.json");
  if (!existsSync(file)) return [];
  const journal = JSON.parse(readFileSync(file, "utf8")) as JournalView; // whole, old or new: never torn
  if (!journal.run) return ALL;
  const plan = JSON.parse(readFileSync(join(root, ".winfleet", journal.run.plan.file), "utf8")) as {
    steps: { kind: string; command?: string }[];
  };
  return plan.steps
    .slice(0, journal.run.next)
    .flatMap((s) => (s.kind === "command" && s.command ? [/echo (.*)$/.exec(s.command)?.[1] ?? ""] : []));
}

describe("the lifecycle engine through cmd.exe", () => {
  let reference: Record<string, string> = {};

  it("installs, stops for its reboot, resumes after it, and a second apply changes nothing", T, async () => {
    const root = join(dir, "install");
    const first = await run(root);
    assert.equal(first.code, 3010, `b asks for a reboot: ${first.stderr}`);
    assert.deepEqual(runs(root), ALL.slice(0, 3), "a and b installed before the reboot");
    assert.equal(await untilConverged(root), 1, "the next start continues after the reboot and converges");
    assert.deepEqual(runs(root), ALL);
    assert.equal(readFileSync(join(root, "opt", "c", "config"), "utf8"), "config of c\n");
    reference = tree(root);
    assert.equal(await untilConverged(root), 1);
    assert.deepEqual(runs(root), ALL, "the same template again runs nothing");
    assert.deepEqual(tree(root), reference);
  });

  it(
    "survives being killed after every third journal write: converges, runs every step, repeats no done one",
    T,
    async (t) => {
      // Every third write keeps the suite short; the Linux crash test kills the agent after every one.
      assert.ok(Object.keys(reference).length > 0, "the install above made the reference tree");
      let n = 1;
      for (; n < 100; n += 3) {
        const root = join(dir, `crash-${n}`);
        const counter = join(dir, `crash-${n}.count`);
        let crashed = false;
        for (let tries = 0; tries < 5 && !crashed; tries++) {
          const r = await run(root, { WINFLEET_TEST_CRASH_AT: String(n), WINFLEET_TEST_CRASH_COUNTER: counter });
          crashed = r.crashed;
          if (r.code === 0) break;
        }
        if (!crashed) break; // the install writes fewer than n times
        const done = doneCommands(root);
        const before = runs(root);
        await untilConverged(root);
        const after = runs(root).slice(before.length);
        assert.deepEqual(tree(root), reference, `killed after write ${n}: the tree`);
        for (const step of ALL) assert.ok(runs(root).includes(step), `killed after write ${n}: ${step} never ran`);
        for (const step of done) assert.ok(!after.includes(step), `killed after write ${n}: ${step} ran again`);
      }
      t.diagnostic(
        `killed after writes 1, 4 … ${n - 3} (${(n - 1) / 3} kills) of the ${n - 3} to ${n - 1} an install makes`,
      );
      assert.ok(n > 12, `only ${n - 1} journal writes or fewer in an install with a reboot`);
    },
  );
});
