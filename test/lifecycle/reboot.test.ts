/**
 * Reboots: coalesced to one per priority group, whether a section asks
 * (`reboot: yes`) or a command does (exit 3010); taken before the next group
 * starts; the journal says why; the next start continues after it.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { agent, REBOOT_STATUS, tempDir, writeContent } from "../support";

const log = (id: string): string => `echo "${id}" >> "$WINFLEET_ROOT/order.log"`;
const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

interface Status {
  state: string;
  reboot?: { reasons: string[] };
  history: { event: string; detail: string }[];
}

describe("reboots", () => {
  const content = writeContent(
    [
      { name: "one", version: "1", metadata: { install: { priority: 10, commands: [log("one")], reboot: "yes" } } },
      { name: "two", version: "1", metadata: { install: { priority: 10, commands: [log("two")], reboot: "yes" } } },
      // A command that asks for a reboot itself, as Windows installers do with 3010 (194 from sh,
      // whose exit statuses are 8 bits); it must only run once.
      { name: "three", version: "1", metadata: { install: { priority: 10, commands: [`${log("three")}; exit 194`] } } },
      { name: "four", version: "1", metadata: { install: { priority: 20, commands: [`${log("four")}; exit 194`] } } },
      { name: "five", version: "1", metadata: { install: { priority: 30, commands: [log("five")] } } },
    ],
    [{ name: "t", version: "1", packages: ["one_1", "two_1", "three_1", "four_1", "five_1"] }],
  );

  it("happen once per priority group, before the next group, each journaled with why", async () => {
    const root = tempDir("reboot-root-");
    roots.push(root);
    const args = ["apply", "--content", content, "--template", "t", "--root", root];
    const order = (): string => readFileSync(join(root, "order.log"), "utf8");

    const first = await agent(args);
    assert.equal(first.code, REBOOT_STATUS, first.stderr);
    assert.equal(order(), "one\ntwo\nthree\n");
    const s1 = JSON.parse((await agent(["status", "--root", root, "--json"])).stdout) as Status;
    assert.equal(s1.state, "reboot-pending");
    assert.deepEqual(s1.reboot?.reasons, [
      "one 1 install asks for a reboot",
      "two 1 install asks for a reboot",
      'three 1 install.commands[0]: echo "three" >> "$WINFLEET_ROOT/order.log"; exit 194 asked for a reboot (exit 194)',
    ]);

    const second = await agent(args);
    assert.equal(second.code, REBOOT_STATUS, second.stderr);
    assert.equal(order(), "one\ntwo\nthree\nfour\n", "group 20 ran before its reboot, and only it");

    const third = await agent(args);
    assert.equal(third.code, 0, third.stderr);
    assert.equal(order(), "one\ntwo\nthree\nfour\nfive\n");
    const s3 = JSON.parse((await agent(["status", "--root", root, "--json", "--history", "50"])).stdout) as Status;
    assert.equal(s3.state, "converged");
    assert.equal(s3.history.filter((h) => h.event === "reboot-required").length, 2);
    assert.equal(s3.history.filter((h) => h.event === "reboot-done").length, 2);
    assert.equal(existsSync(join(root, ".winfleet", "lock")), false);
  });
});
