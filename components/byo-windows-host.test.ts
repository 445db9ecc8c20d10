/**
 * The SSH commands that put a bring-your-own host's bootstrap in place: the
 * upload directory is restricted to SYSTEM and Administrators (owner and ACL,
 * inheritance cut, on whatever is already there) before the bootstrap is
 * written into it, and the restriction travels encoded, so neither login shell
 * reads its quotes or variables.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../agent/content/powershell-syntax";
import { UPLOAD_DIR, byoCommands, uploadDirScript } from "./byo-commands";

describe("the upload directory of a bring-your-own host", () => {
  const commands = byoCommands("windows", "a".repeat(64), "node.exe");

  it("is restricted by the prepare command, which carries the script encoded", async () => {
    const encoded = /-EncodedCommand ([A-Za-z0-9+/=]+)$/.exec(commands.prepare)?.[1];
    assert.ok(encoded, commands.prepare);
    const script = Buffer.from(encoded, "base64").toString("utf16le");
    assert.equal(script, uploadDirScript());
    assert.deepEqual(await powerShellSyntaxErrors(script), []);
    assert.match(script, /icacls\.exe '[^']+' \/setowner '\*S-1-5-32-544' \/T/);
    assert.match(
      script,
      /\/inheritance:r \/grant:r '\*S-1-5-18:\(OI\)\(CI\)F' '\*S-1-5-32-544:\(OI\)\(CI\)F' \/T/,
      "SYSTEM and Administrators only, on the directory and what is in it",
    );
    assert.match(script, /if \(\$LASTEXITCODE -ne 0\) \{ exit \$LASTEXITCODE \}/, "a refusal stops the bootstrap");
    assert.ok(script.includes(UPLOAD_DIR));
  });

  it("copies the bootstrap and the content only into that directory", () => {
    assert.ok(commands.bootstrapRemotePath.startsWith(UPLOAD_DIR.replace(/\\/g, "/")));
    assert.ok(commands.contentRemotePath.startsWith(UPLOAD_DIR.replace(/\\/g, "/")));
    assert.doesNotMatch(commands.prepare, /bootstrap\.ps1/);
  });
});
