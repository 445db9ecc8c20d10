/**
 * An agent upgraded in place finds the state the earlier agent left: the
 * journal with its run's plan inline and the Ignition ledger as one JSON
 * document. Here that state is made from a run stopped part-way (kill -9
 * through the crash seam), put back into the earlier formats as that agent
 * wrote them; the next apply must resume it, run none of the steps the
 * journal recorded done, converge, and leave the state in the current formats.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readLedger } from "../../agent/ignition";
import { agent, applyUntilSettled, hostTree, tempDir, writeContent } from "../support";

const cmd = (id: string): string => `echo "${id}" >> "$WINFLEET_ROOT/runs.log"`;
const NAMES = ["a", "b", "c"];
const content = writeContent(
  NAMES.map((name) => ({
    name,
    version: "1",
    files: { [`/opt/${name}/config`]: `config of ${name}\n` },
    metadata: { install: { commands: [cmd(`${name} 0`), cmd(`${name} 1`)] } },
  })),
  [{ name: "t", version: "1", packages: NAMES.map((n) => `${n}_1`) }],
);
const roots: string[] = [];
after(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));
const fresh = (): string => {
  const r = tempDir("upgrade-in-place-");
  roots.push(r);
  return r;
};
const args = (root: string): string[] => ["--content", content, "--template", "t", "--root", root];
const state = (root: string, name: string): string => join(root, ".winfleet", name);
const runs = (root: string): string[] => readFileSync(join(root, "runs.log"), "utf8").split("\n").filter(Boolean);

interface Stored {
  run: { next: number; steps?: { kind: string; command?: string }[]; plan?: { file: string } };
}

describe("state the earlier agent wrote", () => {
  it("a run stopped part-way, journal with its plan inline and a one-document ledger: resumed, converged", async () => {
    const reference = fresh();
    assert.equal((await applyUntilSettled(args(reference))).code, 0);

    const root = fresh();
    // Stop the install after its fifth durable write: its first step done, the rest to run.
    const stopped = await agent(["apply", ...args(root)], { env: { WINFLEET_TEST_CRASH_AT: "5" } });
    assert.equal(stopped.signal, "SIGKILL", stopped.stderr);

    // The journal and ledger as the earlier agent wrote them.
    const journal = JSON.parse(readFileSync(state(root, "journal.json"), "utf8")) as Stored;
    const planFile = journal.run.plan?.file ?? "";
    const plan = JSON.parse(readFileSync(state(root, planFile), "utf8")) as { steps: Stored["run"]["steps"] };
    const run = { ...journal.run, plan: undefined, steps: plan.steps }; // JSON leaves the undefined plan out
    writeFileSync(state(root, "journal.json"), `${JSON.stringify({ ...journal, run }, null, 1)}\n`);
    rmSync(state(root, planFile));
    const ledgerLines = readFileSync(state(root, "ignition-ledger.json"), "utf8").split("\n").filter(Boolean);
    const files = Object.assign(
      {},
      ...ledgerLines.slice(1).map((l) => (JSON.parse(l) as { set?: Record<string, unknown> }).set ?? {}),
    ) as Record<string, unknown>;
    assert.ok(Object.keys(files).length > 0, "the stopped run recorded files in the ledger");
    writeFileSync(state(root, "ignition-ledger.json"), `${JSON.stringify({ version: 1, files }, null, 2)}\n`);

    const done = (plan.steps ?? [])
      .slice(0, journal.run.next)
      .flatMap((s) => (s.kind === "command" && s.command ? [/echo "([^"]*)"/.exec(s.command)?.[1] ?? ""] : []));
    const status = await agent(["status", "--json", "--root", root]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /"total": \d+/, "status reads the earlier journal's run");

    const settled = await applyUntilSettled(args(root));
    assert.equal(settled.code, 0, settled.stderr);
    const skip = (rel: string): boolean => rel === "runs.log";
    assert.deepEqual(hostTree(root, skip), hostTree(reference, skip), "the tree differs from an uninterrupted install");
    const counts = new Map<string, number>();
    for (const id of runs(root)) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const id of done) assert.equal(counts.get(id), 1, `${id} was recorded done, yet ran again`);
    for (const n of NAMES) for (const i of [0, 1]) assert.ok(counts.has(`${n} ${i}`), `${n} ${i} never ran`);

    // The same records as an uninterrupted install's, in whichever format the last update left.
    const digests = async (r: string): Promise<Record<string, string>> =>
      Object.fromEntries(
        Object.entries((await readLedger(state(r, "ignition-ledger.json"))).files).map(([p, x]) => [p, x.sha512]),
      );
    assert.deepEqual(await digests(root), await digests(reference));
    assert.ok(
      (plan.steps ?? []).slice(journal.run.next).some((s) => s.kind === "files"),
      "the resumed run laid files down",
    );
    const ledger = readFileSync(state(root, "ignition-ledger.json"), "utf8");
    assert.equal(ledger.split("\n")[0], '{"winfleet-ignition-ledger":2}', "the ledger's first update made it a log");
    assert.deepEqual(
      readdirSync(join(root, ".winfleet")).filter((n) => n.startsWith("plan-")),
      [],
      "no plan file is left once the run ended",
    );
    assert.ok(existsSync(state(root, "journal.json")));
    const verify = await agent(["verify", "--root", root]);
    assert.equal(verify.code, 0, `${verify.stdout}${verify.stderr}`);
  });
});
