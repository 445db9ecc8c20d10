import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { serviceProblem } from "./services";
import { parseScState } from "./services.win32";

describe("a node service's state", () => {
  it("is a problem when gone, disabled or stopped, disabled first", () => {
    assert.equal(serviceProblem({ exists: false, running: false, startType: "disabled" }), "missing");
    assert.equal(serviceProblem({ exists: true, running: false, startType: "disabled" }), "disabled");
    assert.equal(serviceProblem({ exists: true, running: true, startType: "disabled" }), "disabled");
    assert.equal(serviceProblem({ exists: true, running: false, startType: "manual" }), "stopped");
    assert.equal(serviceProblem({ exists: true, running: true, startType: "automatic" }), undefined);
  });

  it("is read from sc.exe's numeric codes, whatever the display language", () => {
    const qc =
      "SERVICE_NAME: kubelet\r\n        TYPE               : 10  WIN32_OWN_PROCESS\r\n        START_TYPE         : 4   DISABLED\r\n";
    const query = "SERVICE_NAME: kubelet\r\n        STATE              : 1  STOPPED\r\n";
    assert.deepEqual(parseScState(qc, query), { running: false, startType: "disabled" });
    assert.deepEqual(parseScState("START_TYPE : 2   AUTO_START (DELAYED)", "STATE : 4  RUNNING"), {
      running: true,
      startType: "automatic",
    });
    assert.deepEqual(parseScState("START_TYPE : 3   DEMAND_START", "STATE : 4  EN COURS"), {
      running: true,
      startType: "manual",
    });
  });
});
