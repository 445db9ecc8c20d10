/**
 * The Windows service manager as data: the sc.exe commands of a restart, the
 * reading of `sc query`'s answer, and the restart's decisions against a
 * scripted sc.exe. The same restart runs against Wine's Service Control
 * Manager in test/wine/upgrade.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AGENT_SERVICE as REGISTERED } from "../../components/agent-service";
import {
  AGENT_SERVICE,
  type ScResult,
  restartService,
  scCommands,
  serviceState,
} from "../../agent/upgrade/service-manager.win32";

const query = (state: number, name: string): string =>
  `\r\nSERVICE_NAME: winfleet-agent\r\n        TYPE               : 10  WIN32_OWN_PROCESS\r\n        STATE              : ${state}  ${name}\r\n        WIN32_EXIT_CODE    : 0  (0x0)\r\n`;

/** An sc.exe that answers from a script of states, recording the commands it was given. */
function scripted(
  states: number[],
  startCode = 0,
): { calls: string[][]; sc: (a: readonly string[]) => Promise<ScResult> } {
  const calls: string[][] = [];
  return {
    calls,
    sc: (args) => {
      calls.push([...args]);
      if (args[0] === "query") return Promise.resolve({ code: 0, output: query(states.shift() ?? 1, "X") });
      return Promise.resolve({ code: args[0] === "start" ? startCode : 0, output: "" });
    },
  };
}
const noSleep = () => Promise.resolve();

describe("the Windows service manager (as data)", () => {
  it("restarts the service the bootstrap registers", () => {
    assert.equal(AGENT_SERVICE, REGISTERED);
    assert.deepEqual(scCommands(AGENT_SERVICE), {
      query: ["query", "winfleet-agent"],
      stop: ["stop", "winfleet-agent"],
      start: ["start", "winfleet-agent"],
    });
  });

  it("reads the state number, whatever the display language calls it", () => {
    assert.equal(serviceState(query(4, "RUNNING")), 4);
    assert.equal(serviceState(query(1, "BEENDET")), 1);
    assert.equal(serviceState("[SC] EnumQueryServicesStatus:OpenService FAILED 1060"), undefined);
  });

  it("stops a running service, waits until it has stopped, then starts it", async () => {
    const { calls, sc } = scripted([4, 3, 3, 1]);
    await restartService("svc", sc, { sleep: noSleep });
    assert.deepEqual(
      calls.map((c) => c[0]),
      ["query", "stop", "query", "query", "query", "start"],
    );
  });

  it("starts a stopped service without stopping it, and takes 'already running' as started", async () => {
    const { calls, sc } = scripted([1], 1056);
    await restartService("svc", sc, { sleep: noSleep });
    assert.deepEqual(
      calls.map((c) => c[0]),
      ["query", "start"],
    );
  });

  it("fails naming the service when it is not installed, does not stop in time, or does not start", async () => {
    await assert.rejects(
      restartService("svc", () => Promise.resolve({ code: 1060, output: "FAILED 1060" }), { sleep: noSleep }),
      /the svc service is not installed/,
    );
    await assert.rejects(
      restartService("svc", scripted([4, 3, 3, 3, 3, 3, 3]).sc, { stopTimeoutMs: 0, sleep: noSleep }),
      /the svc service did not stop within 0 s/,
    );
    await assert.rejects(
      restartService("svc", scripted([1], 1053).sc, { sleep: noSleep }),
      /sc start svc failed \(1053\)/,
    );
  });
});
