import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { processName } from "./binary";

describe("process naming", () => {
  it("strips exactly one .exe, not a character set as wins's TrimRight did", () => {
    assert.equal(processName("C:\\etc\\nginx\\nginx.exe"), "rancher-wins-nginx");
    assert.equal(processName("C:\\etc\\rancher\\wins\\wins-upgrade.exe"), "rancher-wins-wins-upgrade");
    assert.equal(processName("/opt/bin/exe.exe.EXE"), "rancher-wins-exe.exe");
    assert.equal(processName("/opt/bin/tool.sh"), "rancher-wins-tool.sh");
  });
});
