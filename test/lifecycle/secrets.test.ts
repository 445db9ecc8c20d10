/**
 * Secrets through the real CLI and real sh commands: a variable a component
 * declares secret is never written down, however it was given (`--var`, the
 * agent config's variables); a secret of any length is masked; and commands
 * get their step's values on a minimal environment, not the agent's own.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { agent, tempDir, writeContent } from "../support";

const roots: string[] = [];
const fresh = (): string => {
  const r = tempDir("secrets-root-");
  roots.push(r);
  return r;
};
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** The journal, its run's plan file and every step log of `root`, as text. */
function kept(root: string): string[] {
  const out = [readFileSync(join(root, ".winfleet", "journal.json"), "utf8")];
  for (const f of readdirSync(join(root, ".winfleet")).filter((n) => n.startsWith("plan-")))
    out.push(readFileSync(join(root, ".winfleet", f), "utf8"));
  const logs = join(root, ".winfleet", "logs");
  for (const run of readdirSync(logs))
    for (const f of readdirSync(join(logs, run))) out.push(readFileSync(join(logs, run, f), "utf8"));
  return out;
}

// Writes the value where the test can see the command got it, then prints it.
const joinComponent = {
  name: "join",
  version: "1",
  metadata: {
    variables: { JOIN_TOKEN: { secret: true }, REGION: {} },
    install: { commands: ['printf "%s" "$JOIN_TOKEN" > "$WINFLEET_ROOT/got"; echo "token $JOIN_TOKEN in $REGION"'] },
  },
};

describe("variables a component declares secret", () => {
  it("are not journaled when given with --var, yet the command gets them", async () => {
    const root = fresh();
    const secret = "var-given-t0ken";
    const c = writeContent([joinComponent], [{ name: "t", version: "1", packages: ["join_1"] }]);
    const r = await agent([
      "apply",
      "--content",
      c,
      "--template",
      "t",
      "--root",
      root,
      "--var",
      `JOIN_TOKEN=${secret}`,
      "--var",
      "REGION=west",
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(join(root, "got"), "utf8"), secret);
    for (const text of [r.stdout, r.stderr, ...kept(root)])
      assert.equal(text.includes(secret), false, `the secret was kept: ${text.slice(0, 400)}`);
    assert.match(
      readFileSync(join(root, ".winfleet", "journal.json"), "utf8"),
      /"REGION": ?"west"/,
      "plain variables are still journaled",
    );
  });

  it("are not journaled when given in the agent config's variables", async () => {
    const root = fresh();
    const secret = "config-var-t0ken";
    const c = writeContent([joinComponent], [{ name: "t", version: "1", packages: ["join_1"] }]);
    const config = join(root, "agent.json");
    writeFileSync(
      config,
      JSON.stringify({ content: c, template: "t", root, variables: { JOIN_TOKEN: secret, REGION: "east" } }),
    );
    const r = await agent(["apply", "--config", config]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(join(root, "got"), "utf8"), secret);
    for (const text of kept(root)) assert.equal(text.includes(secret), false, "the secret was journaled");
  });
});

describe("masking", () => {
  it("masks a secret shorter than four characters in output, journal and logs", async () => {
    const root = fresh();
    const secret = "Q7z";
    const c = writeContent(
      [
        {
          name: "short",
          version: "1",
          metadata: {
            variables: { PIN: { secret: true } },
            install: { commands: ['echo "pin=$PIN"; echo "pin=$PIN" >&2; exit 5'] },
          },
        },
      ],
      [{ name: "t", version: "1", packages: ["short_1"] }],
    );
    const config = join(root, "agent.json");
    writeFileSync(config, JSON.stringify({ content: c, template: "t", root, secrets: { PIN: secret } }));
    const r = await agent(["apply", "--config", config]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /pin=\*\*\*/);
    for (const text of [r.stdout, r.stderr, ...kept(root)])
      assert.equal(text.includes(secret), false, "a short secret was shown");
  });
});

describe("a command's environment", () => {
  it("does not carry the agent's own environment, only a base and the step's values", async () => {
    const root = fresh();
    const c = writeContent(
      [
        {
          name: "env",
          version: "1",
          metadata: {
            install: {
              commands: [
                'printf "%s|%s|%s" "${WINFLEET_TEST_AGENT_ONLY:-absent}" "${WINFLEET_COMPONENT}" "${PATH:+path}" > "$WINFLEET_ROOT/env"',
              ],
            },
          },
        },
      ],
      [{ name: "t", version: "1", packages: ["env_1"] }],
    );
    const r = await agent(["apply", "--content", c, "--template", "t", "--root", root], {
      env: { WINFLEET_TEST_AGENT_ONLY: "agent-secret" },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(join(root, "env"), "utf8"), "absent|env|path");
  });
});
