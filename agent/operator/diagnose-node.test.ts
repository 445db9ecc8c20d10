import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { frameArchive } from "../diagnose/transport";
import { diagnoseNode, diagnosePod } from "./diagnose-node";
import { KubeError } from "../cluster/kube-client";
import type { OperatorApi } from "./operator-api";

const dir = mkdtempSync(join(tmpdir(), "diagnose-node-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const READY = { type: "Ready", status: "True" };
const LABELS = { "kubernetes.io/os": "windows", "winfleet.io/pool": "win" };
const UPGRADER = {
  metadata: { name: "winfleet-agent-upgrader-win" },
  spec: {
    template: {
      spec: {
        nodeSelector: LABELS,
        securityContext: { windowsOptions: { hostProcess: true } },
        initContainers: [{ name: "upgrade", image: "registry/winfleet:1", command: ["powershell.exe"] }],
      },
    },
  },
};

interface Cluster {
  node?: unknown;
  daemonSets?: unknown[];
  /** The pod's status on each read, the last repeated. */
  phases?: Record<string, unknown>[];
  log?: string;
  forbidPods?: boolean;
  streamError?: Error;
}

/** An API server's answers for one node, recording what was created and deleted. */
function fakeApi(c: Cluster) {
  const calls: string[] = [];
  let reads = 0;
  const api: OperatorApi = {
    server: "https://api.example:6443",
    json<T>(method: string, path: string, body?: unknown): Promise<T> {
      calls.push(`${method} ${path.split("?")[0] ?? ""}`);
      const ok = (v: unknown) => Promise.resolve(v as T);
      if (path === "/api/v1/nodes/n1")
        return c.node ? ok(c.node) : Promise.reject(new KubeError(404, 'nodes "n1" not found'));
      if (path === "/api/v1/nodes") return ok({ items: [{ metadata: { name: "n2" } }, { metadata: { name: "n3" } }] });
      if (path.startsWith("/apis/apps/v1/namespaces/winfleet-system/daemonsets"))
        return ok({ items: c.daemonSets ?? [UPGRADER] });
      if (method === "POST")
        return c.forbidPods
          ? Promise.reject(new KubeError(403, "pods is forbidden"))
          : ok({ metadata: { name: (body as { metadata: { name: string } }).metadata.name } });
      if (method === "GET") {
        const phases = c.phases ?? [{ phase: "Succeeded" }];
        return ok({ metadata: { name: "p" }, status: phases[Math.min(reads++, phases.length - 1)] });
      }
      return ok({});
    },
    stream(_path: string, onText: (t: string) => void): Promise<void> {
      if (c.streamError) return Promise.reject(c.streamError);
      if (c.log !== undefined) onText(c.log);
      return Promise.resolve();
    },
  };
  return { api, calls };
}

const run = (c: Cluster, o: { timeoutMs?: number; signal?: AbortSignal } = {}) => {
  const { api, calls } = fakeApi(c);
  const out = join(dir, `${randomBytes(4).toString("hex")}.tar.gz`);
  const result = diagnoseNode({
    api,
    node: "n1",
    namespace: "winfleet-system",
    timeoutMs: o.timeoutMs ?? 10_000,
    out,
    signal: o.signal ?? new AbortController().signal,
  });
  return { result, calls, out };
};
const deleted = (calls: string[]) =>
  calls.some((c) => c.startsWith("DELETE /api/v1/namespaces/winfleet-system/pods/winfleet-diagnose-n1-"));
const node = { metadata: { name: "n1", labels: LABELS }, status: { conditions: [READY] } };

describe("winfleet diagnose NODE", () => {
  it("writes the archive the agent framed, then deletes the pod", async () => {
    const archive = randomBytes(5000);
    const r = run({ node, log: `starting\n${frameArchive(archive)}` });
    const done = await r.result;
    assert.deepEqual(readFileSync(r.out), archive);
    assert.equal(done.bytes, 5000);
    assert.ok(deleted(r.calls));
  });

  it("runs the host's agent as SYSTEM in a HostProcess pod bound to the node, ending by itself", () => {
    const pod = diagnosePod({
      node: "n1",
      namespace: "ns",
      image: "img",
      sandbox: false,
      timeoutMs: 300_000,
      since: "2h",
    }) as { spec: Record<string, unknown> & { containers: { command: string[] }[] } };
    assert.equal(pod.spec.nodeName, "n1");
    assert.equal(pod.spec.restartPolicy, "Never");
    assert.equal(pod.spec.activeDeadlineSeconds, 300);
    assert.equal(pod.spec.automountServiceAccountToken, false);
    assert.deepEqual(pod.spec.securityContext, {
      windowsOptions: { hostProcess: true, runAsUserName: "NT AUTHORITY\\SYSTEM" },
    });
    assert.deepEqual(pod.spec.tolerations, [{ operator: "Exists" }]);
    assert.deepEqual(pod.spec.containers[0]?.command, [
      "C:\\ProgramData\\winfleet\\node\\package\\bin\\node.exe",
      "C:\\ProgramData\\winfleet\\current\\bin\\winfleet-agent.js",
      "diagnose",
      "--out",
      "-",
      "--timeout",
      "30s",
      "--since",
      "2h",
      "--config",
      "C:\\ProgramData\\winfleet\\agent.json",
    ]);
  });

  it("names the nodes there are when the node does not exist, and makes no pod", async () => {
    const r = run({});
    await assert.rejects(r.result, /node n1 not found in the cluster at https:\/\/api\.example:6443 \(nodes: n2, n3\)/);
    assert.ok(!r.calls.some((c) => c.startsWith("POST")));
  });

  it("refuses a NotReady node with the kubelet's reason", async () => {
    const r = run({
      node: {
        ...node,
        status: {
          conditions: [
            {
              type: "Ready",
              status: "Unknown",
              reason: "NodeStatusUnknown",
              message: "Kubelet stopped posting node status.",
            },
          ],
        },
      },
    });
    await assert.rejects(
      r.result,
      /node n1 is NotReady: Ready is Unknown \(NodeStatusUnknown: Kubelet stopped posting node status\.\)\. .*winfleet-agent diagnose/,
    );
  });

  it("refuses a node no winfleet upgrader selects, and one whose pool runs in wins mode", async () => {
    await assert.rejects(
      run({ node: { ...node, metadata: { name: "n1", labels: { "kubernetes.io/os": "linux" } } } }).result,
      /no winfleet agent upgrader in namespace winfleet-system selects node n1 \(upgraders there: winfleet-agent-upgrader-win\)/,
    );
    const wins = { ...UPGRADER, spec: { template: { spec: { ...UPGRADER.spec.template.spec, securityContext: {} } } } };
    await assert.rejects(run({ node, daemonSets: [wins] }).result, /runs in wins mode, without HostProcess containers/);
  });

  it("says which permission is missing when the API refuses", async () => {
    await assert.rejects(
      run({ node, forbidPods: true }).result,
      /creating the diagnose pod in winfleet-system: forbidden — the kubeconfig's identity needs: .*create\/get\/delete pods and get pods\/log/,
    );
  });

  it("reports a failed pod with its status and what the agent said, and deletes it", async () => {
    const r = run({
      node,
      phases: [
        {
          phase: "Failed",
          reason: "DeadlineExceeded",
          message: "Pod was active on the node longer than the specified deadline",
          containerStatuses: [{ state: { terminated: { exitCode: 137 } } }],
        },
      ],
      log: "error: --config C:\\x: no such file\n",
    });
    await assert.rejects(
      r.result,
      /pod winfleet-system\/winfleet-diagnose-n1-\w+ on n1 failed: DeadlineExceeded — Pod was active .* \(the agent exited 137\); it said:\n {2}error: --config C:\\x: no such file/,
    );
    assert.ok(deleted(r.calls));
  });

  it("reports a pod that cannot start (its image) without waiting for the deadline", async () => {
    const r = run({
      node,
      phases: [
        {
          phase: "Pending",
          containerStatuses: [
            { state: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } } },
          ],
        },
      ],
    });
    await assert.rejects(r.result, /on n1 cannot start: ImagePullBackOff — Back-off pulling image/);
    assert.ok(deleted(r.calls));
  });

  it("says when the API server cannot reach the node's kubelet for the log", async () => {
    const r = run({
      node,
      phases: [{ phase: "Running" }],
      streamError: new KubeError(
        500,
        'GET log: 500 Get "https://10.0.0.5:10250/containerLogs/…": dial tcp 10.0.0.5:10250: i/o timeout',
      ),
    });
    await assert.rejects(
      r.result,
      /could not read it from the kubelet of n1 \(kubectl logs fails the same way; is the kubelet's port, 10250 by default, reachable from the control plane\?\): .*i\/o timeout/,
    );
    assert.ok(deleted(r.calls));
  });

  it("refuses an archive whose checksum does not match, and writes nothing", async () => {
    const lines = frameArchive(randomBytes(3000)).split("\n");
    lines[0] = (lines[0] ?? "").replace(/sha256=\w+/, `sha256=${"0".repeat(64)}`);
    const r = run({ node, log: lines.join("\n") });
    await assert.rejects(r.result, /the archive from n1 is damaged: checksum mismatch: .*; nothing was written/);
    assert.equal(existsSync(r.out), false);
    assert.ok(deleted(r.calls));
  });

  it("gives up at --timeout and on Ctrl-C, deleting the pod either way", async () => {
    const pending = { node, phases: [{ phase: "Pending" }] };
    const t = run(pending, { timeoutMs: 1200 });
    await assert.rejects(
      t.result,
      /timed out after 1 s while waiting for the pod to start \(pod winfleet-system\/\S+ was Pending; --timeout gives more time\)/,
    );
    assert.ok(deleted(t.calls));
    const stop = new AbortController();
    const i = run(pending, { signal: stop.signal });
    setTimeout(() => stop.abort(), 300);
    await assert.rejects(i.result, /interrupted while waiting for the pod to start; pod winfleet-system\/\S+ deleted/);
    assert.ok(deleted(i.calls));
  });
});

describe("what the node says, printed on the operator's terminal", () => {
  const escapes = "\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\u009b2Jarchive OK \u202e";
  // eslint-disable-next-line no-control-regex -- control characters are what is looked for
  const control = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/; // newlines are the message's own

  it("shows the pod's stderr lines with their escapes made visible", async () => {
    const r = run({ node, log: `${escapes}\n`, phases: [{ phase: "Succeeded" }] });
    const e = await r.result.then(
      () => assert.fail("no archive was printed"),
      (x: unknown) => x as Error,
    );
    assert.match(e.message, /without printing the archive/);
    assert.match(e.message, /\\u001b\]52;c;/);
    assert.doesNotMatch(e.message, control);
  });

  it("shows a failed pod's status message and a NotReady reason with their escapes made visible", async () => {
    const failed = run({ node, phases: [{ phase: "Failed", reason: "Error", message: escapes }] });
    const e = await failed.result.then(
      () => assert.fail("a failed pod passed"),
      (x: unknown) => x as Error,
    );
    assert.doesNotMatch(e.message, control);
    const notReady = run({
      node: { ...node, status: { conditions: [{ type: "Ready", status: "False", reason: "X", message: escapes }] } },
    });
    const e2 = await notReady.result.then(
      () => assert.fail("a NotReady node passed"),
      (x: unknown) => x as Error,
    );
    assert.match(e2.message, /NotReady/);
    assert.doesNotMatch(e2.message, control);
  });
});
