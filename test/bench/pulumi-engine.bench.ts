/**
 * `pulumi preview` through the real engine (the CLI, language host and kubernetes plugin
 * set-up built) against a throwaway control plane, for fleets of 10, 100 and 1,000 pools,
 * beside `winfleet render` of the same fleets in process, in the same run: seconds per
 * resource for each, and each size's per-resource time against the 10-pool fleet's.
 *
 * The pools are `local` pools that name the cluster, so each adds the cluster side's
 * resources (an upgrader DaemonSet and its ConfigMap). Fleets of BYO hosts would add
 * `command` resources, whose plugin set-up cannot build (the module proxy serves no
 * release of it), so the engine could not preview them here.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { renderStack } from "../../infra/render";
import { findEngines } from "../../agent/cluster/engines";
import { pulumiProject, startTestControlPlane } from "../support";

const SIZES = [10, 100, 1000] as const;

function fleetYaml(server: string, caCertHash: string, pools: number, contentDir: string): string {
  const lines = [
    "config:",
    "  winfleet:fleet:",
    "    cluster:",
    "      name: bench",
    "      join: { method: kubeadm, apiServer: " +
      server +
      ", caCertHash: " +
      caCertHash +
      ", tokenId: bench1, tokenSecret: bootstrapTokenSecret }",
    `    content: { dir: ${contentDir}, template: sandbox, templateVersion: 1.0.0 }`,
    `    agent: { version: 0.1.0, bundle: { url: "https://artifacts.example.test/agent.tgz", sha256: "${"0".repeat(64)}" } }`,
    "    upgrader: { mode: hostProcess, maxUnavailable: 1, image: winfleet-agent:bench }",
    "    pools:",
  ];
  for (let i = 1; i <= pools; i++)
    lines.push(`      - { name: p${String(i).padStart(4, "0")}, kind: local, hosts: 1 }`);
  lines.push("  winfleet:bootstrapTokenSecret: q2w3e4r5t6y7u8i9", "");
  return lines.join("\n");
}

void (async () => {
  const engines = findEngines(["kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes"]);
  const cp = await startTestControlPlane(engines);
  const project = pulumiProject(engines, { KUBECONFIG: cp.adminKubeconfig });
  const work = mkdtempSync(join(tmpdir(), "bench-pulumi-"));
  try {
    const init = await project.pulumi(["stack", "init", "bench", "--secrets-provider", "passphrase"]);
    if (init.code !== 0) throw new Error(`pulumi stack init: ${init.stderr}`);
    const rows: { pools: number; resources: number; previewMs: number; renderMs: number }[] = [];
    for (const pools of SIZES) {
      const yaml = fleetYaml(cp.server, cp.caCertHash, pools, "content");
      project.writeStack("bench", yaml);
      const t = performance.now();
      const r = await project.pulumi(["preview", "--json"], { timeoutMs: 3_600_000 });
      const previewMs = performance.now() - t;
      if (r.code !== 0) throw new Error(`pulumi preview of ${pools} pools exited ${r.code}: ${r.stderr.slice(-2000)}`);
      const resources = ((JSON.parse(r.stdout) as { steps?: unknown[] }).steps ?? []).length;
      const file = join(work, `Pulumi.bench${pools}.yaml`);
      writeFileSync(file, fleetYaml(cp.server, cp.caCertHash, pools, join(project.dir, "content")));
      const t2 = performance.now();
      await renderStack(file);
      rows.push({ pools, resources, previewMs, renderMs: performance.now() - t2 });
    }
    const base = rows[0];
    for (const r of rows) {
      const perPreview = r.previewMs / r.resources;
      const perRender = r.renderMs / r.resources;
      console.log(
        `${String(r.pools).padStart(5)} pools, ${String(r.resources).padStart(5)} resources | pulumi preview ${(r.previewMs / 1000).toFixed(1).padStart(7)} s, ${perPreview.toFixed(1).padStart(6)} ms/resource (${(perPreview / ((base?.previewMs ?? NaN) / (base?.resources ?? NaN))).toFixed(2)}x the 10-pool rate) | winfleet render ${(r.renderMs / 1000).toFixed(2).padStart(6)} s, ${perRender.toFixed(2)} ms/resource | preview/render ${(r.previewMs / r.renderMs).toFixed(1)}x`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
    project.dispose();
    await cp.stop();
  }
})().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
