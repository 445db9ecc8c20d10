import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseSystemctlShow } from "./posix-collectors";

describe("systemctl show", () => {
  it("becomes the same service rows Windows gives, units systemd does not know left out", () => {
    const text = [
      "Id=winfleet-agent.service",
      "LoadState=loaded",
      "ActiveState=active",
      "SubState=running",
      "UnitFileState=enabled",
      "ExecMainStatus=0",
      "",
      "Id=kubelet.service",
      "LoadState=loaded",
      "ActiveState=failed",
      "SubState=failed",
      "UnitFileState=enabled",
      "ExecMainStatus=1",
      "",
      "Id=kube-proxy.service",
      "LoadState=not-found",
      "ActiveState=inactive",
      "SubState=dead",
      "UnitFileState=",
      "ExecMainStatus=0",
      "",
    ].join("\n");
    assert.deepEqual(parseSystemctlShow(text), [
      { name: "winfleet-agent", state: "Running", startMode: "Auto", exitCode: 0 },
      { name: "kubelet", state: "failed", startMode: "Auto", exitCode: 1 },
    ]);
  });
});
