import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { fixWinsConfig, renderUpgrader, type UpgraderRenderArgs } from "./upgrader-render";

const base: UpgraderRenderArgs = {
  kind: "agent",
  namespace: "winfleet-system",
  serviceAccount: "winfleet-upgrader",
  group: { name: "default", image: "registry.example/winfleet-agent:0.2.0", nodeSelector: {}, tolerations: [], config: { whiteList: { processPaths: ["c:\\etc\\a.exe"], proxyPorts: [9796] } } },
  mode: "hostProcess",
  maxUnavailable: 1,
  versions: { agent: "0.2.0", content: "sandbox@1.1.0" },
  pathPrefix: "c:\\",
};

const template = (a: UpgraderRenderArgs): unknown => (renderUpgrader(a).daemonSet as { spec: { template: unknown } }).spec.template;

describe("upgrader DaemonSets", () => {
  it("validate against the Kubernetes 1.27 OpenAPI schema in both modes", () => {
    for (const mode of ["hostProcess", "wins"] as const) {
      const r = renderUpgrader({ ...base, mode });
      new DaemonSet(r.daemonSet).validate();
      new ConfigMap(r.configMap).validate();
    }
  });

  it("give every group its own selector (the chart's were shared)", () => {
    const a = renderUpgrader(base).daemonSet as { spec: { selector: { matchLabels: Record<string, string> } } };
    const b = renderUpgrader({ ...base, group: { ...base.group, name: "gpu" } }).daemonSet as typeof a;
    assert.notDeepEqual(a.spec.selector.matchLabels, b.spec.selector.matchLabels);
  });

  it("change the pod template when and only when a version or the config changes", () => {
    const same = template(base);
    assert.deepEqual(template({ ...base }), same);
    assert.deepEqual(template({ ...base, maxUnavailable: 3 }), same, "rollout speed is not a change to roll out");
    assert.notDeepEqual(template({ ...base, versions: { ...base.versions, agent: "0.3.0" } }), same);
    assert.notDeepEqual(template({ ...base, versions: { ...base.versions, content: "sandbox@1.2.0" } }), same);
    assert.notDeepEqual(template({ ...base, group: { ...base.group, config: { ...base.group.config, debug: true } } }), same);
  });

  it("write the whitelist under the key current servers read", () => {
    assert.deepEqual(fixWinsConfig({ whiteList: { process_paths: ["x"], proxyPorts: [1] }, debug: false }), { white_list: { processPaths: ["x"], proxyPorts: [1] }, debug: false });
    const data = (renderUpgrader(base).configMap as { data: { config: string } }).data.config;
    assert.match(data, /"white_list"/);
    assert.doesNotMatch(data, /whiteList/);
  });

  it("run HostProcess pods as SYSTEM on the host network, and wins pods through the pipe", () => {
    const hp = JSON.stringify(renderUpgrader(base).daemonSet);
    assert.match(hp, /"hostProcess":true/);
    assert.match(hp, /"runAsUserName":"NT AUTHORITY\\\\SYSTEM"/);
    const wins = JSON.stringify(renderUpgrader({ ...base, mode: "wins", masqueradeAs: "c:\\etc\\wmi-exporter\\wmi-exporter.exe" }).daemonSet);
    assert.match(wins, /rancher_wins/);
    assert.match(wins, /cli prc run --path 'c:\\\\etc\\\\wmi-exporter\\\\wmi-exporter.exe'/);
    assert.doesNotMatch(wins, /hostProcess/);
  });
});
