/**
 * scripts/check-words.mjs, which `npm run lint` runs: the words it refuses
 * (each reported as file:line with the words, exit 1) and the product words
 * that look alike and pass, through the real script on real files. The refused
 * phrases are written here with a `|` inside, taken out before the run, so this
 * file passes the check itself.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import { scratchDir } from "../support";

const ROOT = join(__dirname, "..", "..");
const SCRIPT = join(ROOT, "scripts", "check-words.mjs");
const scratch = scratchDir("check-words-");

const check = (...files: string[]) => spawnSync(process.execPath, [SCRIPT, ...files], { encoding: "utf8", cwd: ROOT });

const unbar = (s: string): string => s.replaceAll("|", "");

/** Writes `lines` (with every `|` removed) to a file and returns its path. */
function fileOf(name: string, lines: readonly string[]): string {
  const path = join(scratch, name);
  writeFileSync(path, lines.map(unbar).join("\n") + "\n");
  return path;
}

describe("check-words", () => {
  it("refuses build history and outside files, naming file:line and the words", () => {
    const refused = [
      "measured again in st|op 12 on a faster machine",
      "figures from st|ops 23 and 24",
      "as we did in this ses|sion",
      "added in ses|sion 4",
      "an earlier ses|sion tried it",
      "blocked, see iss|ue #|14",
      "fixed (#|12) by the reporter",
      "no registry the|se machines reach carries it",
      "none is reachable from the|se build machines",
      "contract in ../sha|red/DES|IGN.md",
      "see sha|red/reference/wins.md",
      "from sha|red/seeds/004.txt",
      "read /wo|rk/shared/notes",
      "as DES|IGN.md says",
      'Built by the iss|ue "Pulumi program".',
    ];
    const path = fileOf("refused.md", refused);
    const r = check(path);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    const flagged = new Set(
      r.stdout
        .trim()
        .split("\n")
        .map((l) => Number(/:(\d+): /.exec(l)?.[1])),
    );
    assert.deepEqual(
      [...flagged].sort((a, b) => a - b),
      refused.map((_, i) => i + 1),
    );
    const lines = r.stdout.trim().split("\n");
    assert.equal(lines[0], `${path}:1: "${unbar("st|op 12")}" (a numbered step of the work)`);
    assert.ok(lines.includes(`${path}:6: "${unbar("iss|ue #|14")}" (an issue number)`), r.stdout);
    assert.match(r.stderr, /check-words: \d+ place\(s\)/);
  });

  it("passes product words that look alike", () => {
    const path = fileOf("passed.ts", [
      "// one long-lived session per apply; the next command gets a new session",
      "/** Ends the PowerShell session, or the SSH session, and the session's process group. */",
      "const css = `background: #8882; border-bottom: 1px solid #8884; color:#123`;",
      "a PKCS#8 key, https://example.org/page#12, stop the agent, it stops at 12 hosts",
      "the host machines this deploys, and stacks/Pulumi.dev.yaml in this repository",
    ]);
    const r = check(path);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, "");
  });

  it("lets CI's script alone name the module proxy beside the checkout, and nothing else outside it", async () => {
    const { findWords } = (await import(pathToFileURL(SCRIPT).href)) as {
      findWords: (text: string, tracked: ReadonlySet<string>, file: string) => { words: string }[];
    };
    const proxy = unbar('GOPROXY="file://$(cd ../sha|red/goproxy && pwd),$(go env GOPROXY)"');
    assert.deepEqual(findWords(proxy, new Set(), ".ci/run"), []);
    assert.equal(findWords(proxy, new Set(), "scripts/setup.sh").length, 1, "the same line anywhere else is refused");
    assert.equal(findWords(unbar("see ../sha|red/reference/x.md"), new Set(), ".ci/run").length, 1);
    assert.equal(findWords(unbar("read /wo|rk/shared/goproxy"), new Set(), ".ci/run").length, 1);
  });

  it("an unreadable file is a usage error (exit 2), not a pass", () => {
    const r = check(join(scratch, "missing.md"));
    assert.equal(r.status, 2);
    assert.match(r.stderr, /cannot read .*missing\.md/);
  });

  it("finds nothing in this repository's tracked files", () => {
    const r = check();
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});
