import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { DEFAULT_DRAIN, decodeDrainArgument } from "../agent/common";
import { powerShellSyntaxErrors } from "../agent/content/powershell-syntax";
import { brokerConfigText, fixWinsConfig, renderUpgrader, type UpgraderRenderArgs } from "./upgrader-render";

const target = {
  template: "win2022",
  templateVersion: "1.1.0",
  agentVersion: "0.2.0",
  contentSha256: "e".repeat(64),
  content: { url: "https://sa.blob.core.windows.net/winfleet/content-eeee.tgz", auth: "managedIdentity" as const },
};
const base: UpgraderRenderArgs = {
  kind: "agent",
  namespace: "winfleet-system",
  serviceAccount: "winfleet-upgrader",
  group: {
    name: "default",
    image: "registry.example/winfleet-agent:0.2.0",
    nodeSelector: {},
    tolerations: [],
    config: { whiteList: { processPaths: ["c:\\etc\\a.exe"], proxyPorts: [9796] } },
  },
  mode: "hostProcess",
  maxUnavailable: 1,
  versions: { agent: "0.2.0", content: "win2022@1.1.0" },
  pathPrefix: "c:\\",
  target,
};

type Spec = {
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: {
      spec: {
        initContainers: { command: string[] }[];
        containers: { readinessProbe: { exec: { command: string[] } } }[];
      };
    };
  };
};
const ds = (a: UpgraderRenderArgs): Spec => renderUpgrader(a).daemonSet as unknown as Spec;
const template = (a: UpgraderRenderArgs): unknown => ds(a).spec.template;
const script = (a: UpgraderRenderArgs): string => ds(a).spec.template.spec.initContainers[0]?.command.at(-1) ?? "";
const probe = (a: UpgraderRenderArgs): string[] =>
  ds(a).spec.template.spec.containers[0]?.readinessProbe.exec.command ?? [];

describe("upgrader DaemonSets", () => {
  it("validate against the Kubernetes 1.27 OpenAPI schema in every mode and kind", () => {
    for (const mode of ["hostProcess", "wins"] as const) {
      for (const kind of ["agent", "wins"] as const) {
        const r = renderUpgrader({ ...base, mode, kind, ...(kind === "wins" ? { target: undefined } : {}) });
        new DaemonSet(r.daemonSet).validate();
        new ConfigMap(r.configMap).validate();
      }
    }
    new DaemonSet(
      renderUpgrader({ ...base, target: { ...target, content: { configMap: "winfleet-content-eeee" } } }).daemonSet,
    ).validate();
  });

  it("run init scripts that parse as PowerShell", async () => {
    for (const a of [
      base,
      { ...base, kind: "wins" as const, target: undefined },
      { ...base, mode: "wins" as const },
      { ...base, target: { ...target, content: { configMap: "winfleet-content-eeee" } } },
    ]) {
      assert.deepEqual(await powerShellSyntaxErrors(script(a)), [], script(a));
    }
  });

  it("give every group its own selector (the chart's were shared)", () => {
    assert.notDeepEqual(
      ds(base).spec.selector.matchLabels,
      ds({ ...base, group: { ...base.group, name: "gpu" } }).spec.selector.matchLabels,
    );
  });

  it("change the pod template when and only when a version or the config changes", () => {
    const same = template(base);
    assert.deepEqual(template({ ...base }), same);
    assert.deepEqual(template({ ...base, maxUnavailable: 3 }), same, "rollout speed is not a change to roll out");
    assert.notDeepEqual(template({ ...base, versions: { ...base.versions, agent: "0.3.0" } }), same);
    assert.notDeepEqual(template({ ...base, versions: { ...base.versions, content: "win2022@1.2.0" } }), same);
    assert.notDeepEqual(template({ ...base, target: { ...target, contentSha256: "f".repeat(64) } }), same);
    assert.notDeepEqual(
      template({ ...base, group: { ...base.group, config: { ...base.group.config, debug: true } } }),
      same,
    );
  });

  it("turn Ready only when the host's agent reports the target applied", () => {
    assert.deepEqual(probe(base), [
      "C:\\ProgramData\\winfleet\\node\\package\\bin\\node.exe",
      "C:\\ProgramData\\winfleet\\current\\bin\\winfleet-agent.js",
      "ready",
      "--template",
      "win2022",
      "--template-version",
      "1.1.0",
      "--agent-version",
      "0.2.0",
    ]);
    assert.deepEqual(probe({ ...base, mode: "wins" }).slice(0, 4), [
      "C:\\winfleet\\winfleet-agent.exe",
      "ready",
      "--server",
      "rancher_wins",
    ]);
    const wins = { ...base, kind: "wins" as const, target: undefined };
    assert.deepEqual(probe(wins).slice(-2), ["--broker-config-sha256", brokerConfigText(base.group).sha256]);
  });

  it("move the host to the new content with retarget before upgrading the agent", () => {
    const s = script(base);
    assert.ok(
      s.includes(
        `& $node $agent 'retarget' '--config' 'C:\\ProgramData\\winfleet\\agent.json' '--template' 'win2022' '--template-version' '1.1.0' '--content-sha256' '${"e".repeat(64)}' '--content-url' 'https://sa.blob.core.windows.net/winfleet/content-eeee.tgz' '--content-auth' 'managedIdentity'`,
      ),
      s,
    );
    assert.ok(s.indexOf("retarget") < s.indexOf(" up --bundle"));
    assert.doesNotMatch(s, /--detach/, "a HostProcess container's job object would end a detached upgrade");
    const fromMap = script({ ...base, target: { ...target, content: { configMap: "winfleet-content-eeee" } } });
    assert.match(fromMap, /'--content-archive' "\$env:CONTAINER_SANDBOX_MOUNT_POINT\\content\\bundle\.tgz"/);
  });

  it("write the whitelist under the key current servers read", () => {
    assert.deepEqual(fixWinsConfig({ whiteList: { process_paths: ["x"], proxyPorts: [1] }, debug: false }), {
      white_list: { processPaths: ["x"], proxyPorts: [1] },
      debug: false,
    });
    const data = (renderUpgrader(base).configMap as unknown as { data: { config: string } }).data.config;
    assert.match(data, /"white_list"/);
    assert.doesNotMatch(data, /whiteList/);
  });

  it("leave the container the memory its keep-alive and readiness probes need together (Windows limits them as one job object)", () => {
    const mib = (q: string): number => {
      const m = /^(\d+)(Mi|Gi)$/.exec(q);
      assert.ok(m, q);
      return Number(m[1]) * (m[2] === "Gi" ? 1024 : 1);
    };
    for (const mode of ["hostProcess", "wins"] as const) {
      const c = (
        renderUpgrader({ ...base, mode }).daemonSet as unknown as {
          spec: {
            template: {
              spec: { containers: { resources: { requests: { memory: string }; limits?: { memory?: string } } }[] };
            };
          };
        }
      ).spec.template.spec.containers[0];
      const limit = c?.resources.limits?.memory;
      if (limit !== undefined)
        assert.ok(mib(limit) >= 256, `${mode}: a ${limit} limit starves PowerShell plus a node.exe probe`);
      assert.ok(
        mib(c?.resources.requests.memory ?? "0Mi") >= 100,
        `${mode}: the request says what the pod really uses`,
      );
    }
  });

  it("run HostProcess pods as SYSTEM on the host network, and wins pods through the pipe", () => {
    const hp = JSON.stringify(renderUpgrader(base).daemonSet);
    assert.match(hp, /"hostProcess":true/);
    assert.match(hp, /"runAsUserName":"NT AUTHORITY\\\\SYSTEM"/);
    const wins = JSON.stringify(
      renderUpgrader({ ...base, mode: "wins", masqueradeAs: "c:\\etc\\wmi-exporter\\wmi-exporter.exe" }).daemonSet,
    );
    assert.match(wins, /rancher_wins/);
    assert.match(wins, /cli prc run --path 'c:\\\\etc\\\\wmi-exporter\\\\wmi-exporter.exe'/);
    assert.doesNotMatch(wins, /hostProcess/);
  });

  it("hand each host its pool's drain knobs with the target, rolling when and only when they change", async () => {
    const drain = { ...DEFAULT_DRAIN, timeoutSeconds: 600, podSelector: "tier in (web, batch)" };
    const drained = { ...base, group: { ...base.group, drain } };
    assert.deepEqual(
      template({ ...base, group: { ...base.group } }),
      template(base),
      "a pool without knobs rolls as before",
    );
    assert.notDeepEqual(template(drained), template(base));
    for (const a of [drained, { ...drained, mode: "wins" as const }]) {
      const m = /'--drain' '([A-Za-z0-9_-]+)'|--drain ([A-Za-z0-9_-]+)/.exec(script(a));
      assert.ok(m, script(a));
      assert.deepEqual(decodeDrainArgument(m[1] ?? m[2] ?? ""), drain);
      assert.deepEqual(await powerShellSyntaxErrors(script(a)), []);
    }
    const sandbox = renderUpgrader({
      ...drained,
      group: { ...drained.group, sandbox: true },
      target: { ...target, content: { configMap: "winfleet-content-eeee" } },
    }).daemonSet as unknown as Spec;
    const argv = sandbox.spec.template.spec.initContainers[0]?.command ?? [];
    assert.deepEqual(decodeDrainArgument(argv[argv.indexOf("--drain") + 1] ?? ""), drain);
  });

  it("renders a local pool's upgrader with POSIX commands: the host's agent retargets it and the probe waits for its convergence", () => {
    const sandbox = {
      ...base,
      group: { ...base.group, sandbox: true },
      target: { ...target, content: { configMap: "winfleet-content-eeee" } },
    };
    const r = renderUpgrader(sandbox);
    new DaemonSet(r.daemonSet).validate();
    new ConfigMap(r.configMap).validate();
    type Pod = {
      spec: {
        template: {
          spec: {
            initContainers: { command: string[] }[];
            containers: { readinessProbe: { exec: { command: string[] } } }[];
          };
        };
      };
    };
    const pod = (r.daemonSet as unknown as Pod).spec.template.spec;
    assert.deepEqual(pod.initContainers[0]?.command.slice(0, 4), [
      "winfleet-agent",
      "retarget",
      "--config",
      "$(WINFLEET_AGENT_CONFIG)",
    ]);
    assert.ok(pod.initContainers[0]?.command.includes("content/bundle.tgz"));
    assert.deepEqual(pod.containers[0]?.readinessProbe.exec.command.slice(0, 4), [
      "winfleet-agent",
      "ready",
      "--server",
      "$(WINFLEET_BROKER)",
    ]);
    assert.ok(!JSON.stringify(r.daemonSet).includes("powershell"));
    // A new version changes the pod template and leaves the ConfigMap alone: the provider would replace a changed one.
    const next = renderUpgrader({ ...sandbox, target: { ...sandbox.target, templateVersion: "9.9.9" } });
    assert.deepEqual(next.configMap, r.configMap);
    assert.notDeepEqual(
      (next.daemonSet as unknown as Pod).spec.template,
      (r.daemonSet as unknown as Pod).spec.template,
    );
  });
});
