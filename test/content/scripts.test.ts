/**
 * Every script in content/ is checked by a real tool: sh scripts and the
 * commands of `shell: sh` components by shellcheck, PowerShell scripts by the
 * tree-sitter PowerShell grammar (zero syntax errors). Each check is shown to
 * fail on a broken script first, so a pass means something.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { locate, scratchDir, SHELLCHECK, skipUnlessInstalled } from "../support";

const CONTENT = join(__dirname, "..", "..", "content");

function files(dir: string, pattern: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...files(full, pattern));
    else if (pattern.test(name)) out.push(full);
  }
  return out.sort();
}

function shellcheck(paths: readonly string[]): string {
  const r = spawnSync(
    locate(SHELLCHECK) ?? "shellcheck",
    ["--shell=sh", "--severity=style", "--format=gcc", ...paths],
    { encoding: "utf8" },
  );
  return r.status === 0 ? "" : r.stdout + r.stderr;
}

const scratch = scratchDir("content-scripts-");

describe("sh content under shellcheck", { skip: skipUnlessInstalled(SHELLCHECK) }, () => {
  it("flags a broken script (the check can fail)", () => {
    const bad = join(scratch, "bad.sh");
    writeFileSync(bad, "#!/bin/sh\nrm -rf $DIR/*\nif [ $x == 1 ]; then echo; fi\n");
    assert.notEqual(shellcheck([bad]), "");
  });

  it("passes every .sh file", () => {
    const scripts = files(CONTENT, /\.sh$/);
    assert.ok(scripts.length > 0);
    assert.equal(shellcheck(scripts), "");
  });

  it("passes every command of every shell: sh component", () => {
    const commands: string[] = [];
    for (const m of files(join(CONTENT, "components"), /^metadata\.json$/)) {
      const meta = JSON.parse(readFileSync(m, "utf8")) as Record<string, unknown>;
      if (meta.shell !== "sh") continue;
      for (const section of ["install", "uninstall", "pre_upgrade", "post_upgrade"]) {
        const s = (meta[section] ?? {}) as Record<string, string[] | undefined>;
        for (const role of ["lprecmds", "commands", "lpstcmds"]) {
          (s[role] ?? []).forEach((command, i) => {
            const file = join(scratch, `${relative(CONTENT, m).replace(/[/\\]/g, "_")}.${section}.${role}.${i}.sh`);
            writeFileSync(file, `#!/bin/sh\n${command}\n`);
            commands.push(file);
          });
        }
      }
    }
    assert.ok(commands.length > 0);
    assert.equal(shellcheck(commands), "");
  });
});

describe("PowerShell content under tree-sitter-powershell", () => {
  it("reports a broken script (the check can fail)", async () => {
    assert.notDeepEqual(
      await powerShellSyntaxErrors("function Install-It {\n  if ($x -eq 1) {\n    Write-Output 'x'\n"),
      [],
    );
  });

  it("parses every .ps1, .psm1 and .psd1 file with zero syntax errors", async () => {
    const failures: string[] = [];
    for (const f of files(CONTENT, /\.(ps1|psm1|psd1)$/i)) {
      for (const e of await powerShellSyntaxErrors(readFileSync(f, "utf8")))
        failures.push(`${relative(CONTENT, f)}:${e}`);
    }
    assert.deepEqual(failures, []);
  });
});
