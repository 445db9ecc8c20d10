import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ProcessPathPolicy, normaliseHostPath } from "./whitelist";

describe("Windows path rules (as data)", () => {
  it("normalise drive paths and refuse what Windows would reinterpret", () => {
    assert.equal(normaliseHostPath("C:\\etc\\Kubelet.exe", "win32"), "c:/etc/Kubelet.exe");
    for (const bad of [
      "C:\\etc\\x.exe:stream",
      "C:\\etc\\CON",
      "C:\\etc\\nul.txt",
      "C:\\etc\\COM\u00b9.log",
      "C:\\etc\\lpt3",
      "C:\\etc\\x.exe.",
      "\\\\?\\C:\\x.exe",
      "etc\\x.exe",
      "C:\\etc\\..\\x.exe",
    ]) {
      assert.throws(() => normaliseHostPath(bad, "win32"), /invalid path/, bad);
    }
  });

  it("match whitelist entries case-insensitively on Windows", async () => {
    const policy = new ProcessPathPolicy(["C:\\etc\\wins\\wins-upgrade.exe"], false, "win32", () =>
      Promise.resolve({ isSymbolicLink: () => false }),
    );
    await policy.check("c:/ETC/wins/WINS-upgrade.exe");
    await assert.rejects(policy.check("C:\\etc\\wins\\other.exe"), /not in the process whitelist/);
  });
});
