/**
 * A real `winfleet-agent serve` on the sandbox content, reporting to the fake
 * API server: the apply, its reboot and convergence arrive as Events on the
 * Node, the Node is cordoned for the reboot (no pods to evict) and uncordoned
 * once converged, and ends with its annotations and WinfleetReady True.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import { NODE, apiServer, kubeconfig } from "./fake-api";
import { exitOf, killedAfterTests, pollUntil, REBOOT_STATUS, tempDir } from "../support";

const REPO = join(__dirname, "..", "..");
const dir = tempDir("serve-report-");
const children = killedAfterTests();
after(() => rmSync(dir, { recursive: true, force: true }));

function serve(config: string): { child: ChildProcess; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [join(REPO, "bin", "winfleet-agent.js"), "serve", "--config", config], {
    cwd: REPO,
    stdio: "ignore",
    detached: true,
  });
  children.push(child);
  return { child, exit: exitOf(child) };
}

it("serve reports its apply, reboot and convergence to the Node", async () => {
  const api = await apiServer();
  const root = join(dir, "host");
  mkdirSync(root);
  const config = join(dir, "agent.json");
  writeFileSync(
    config,
    JSON.stringify({
      content: join(REPO, "content"),
      template: "sandbox",
      templateVersion: "1.0.0",
      root,
      nodeName: NODE,
      kubeconfig: kubeconfig(api.port, dir),
      report: { stopTimeoutSeconds: 5 },
    }),
  );
  assert.equal(await serve(config).exit, REBOOT_STATUS, "stops for the sandbox's reboot");
  const second = serve(config);
  await pollUntil(() => api.got.events.some((e) => e.reason === "Converged"), 20_000);
  const condition = (): Record<string, string> | undefined =>
    (api.got.statusPatches.at(-1)?.status as { conditions: Record<string, string>[] } | undefined)?.conditions[0];
  await pollUntil(() => condition()?.status === "True", 5000);
  second.child.kill("SIGTERM");
  await second.exit;
  await api.close();
  assert.deepEqual(api.got.refused, []);
  assert.deepEqual(api.got.cordons, [true, false], "cordoned before the reboot, uncordoned once converged");
  const reasons = api.got.events.map((e) => e.reason);
  for (const r of ["ApplyStarted", "ComponentInstalled", "RebootRequired", "Rebooted", "Converged"])
    assert.ok(reasons.includes(r), `${r} in ${reasons.join(", ")}`);
  assert.ok(reasons.indexOf("RebootRequired") < reasons.lastIndexOf("Converged"));
  const annotations = (api.got.nodePatches.at(-1)?.metadata as { annotations: Record<string, string> }).annotations;
  assert.deepEqual(
    [
      annotations["winfleet.io/template"],
      annotations["winfleet.io/template-version"],
      annotations["winfleet.io/state"],
    ],
    ["sandbox", "1.0.0", "converged"],
  );
  assert.equal(condition()?.status, "True");
});
