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
import { UPLOAD_DIR, byoCommands, uploadDirScript } from "./byo-windows-host";

describe("the upload directory of a bring-your-own host", () => {
  const commands = byoCommands("a".repeat(64));

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

  it("writes the bootstrap only into that directory, which prepare made first", () => {
    assert.ok(commands.writeBootstrap.includes(`${UPLOAD_DIR}\\bootstrap.ps1`));
    assert.doesNotMatch(commands.prepare, /bootstrap\.ps1/);
  });
});
