/**
 * The drain against the real control plane, driven by the real agent (`winfleet-agent apply`, a
 * process of its own) with its node's own credential: a node stand-in runs a Deployment's pods as
 * host processes, and a disruptive upgrade (which also asks for a reboot) cordons the node,
 * evicts them through the eviction API, runs only then, and uncordons the node once the host has
 * converged after the reboot. The agent killed with SIGKILL at each of the drain's journaled
 * steps, and the API server restarted while the drain waits, each end converged and uncordoned.
 * And what the node's credential may do: cordon itself and evict its own pods, nothing of
 * another node's.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient, KubeError } from "../../agent/cluster/kube-client";
import { NodeStandIn, tlsBootstrap } from "../../agent/cluster/node-stand-in";
import { PodRunner } from "../../agent/cluster/pod-runner";
import {
  agent,
  agentBundle,
  type AgentOptions,
  applyUntilSettled,
  enginesOrSkip,
  joinableBy,
  pollUntil,
  sleep,
  startTestControlPlane,
  tempDir,
  waitFor,
  writeContent,
} from "../support";

const engines = enginesOrSkip("kubernetes", "etcd");
const TOKEN = { id: "dra1n0", secret: "0123456789abcdef" };
const NODE = "drain-a";
const OTHER = "drain-b";

type Pod = {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
};
type Node = { spec?: { unschedulable?: boolean } };

describe(
  "draining a node for a disruptive upgrade",
  { skip: typeof engines === "string" ? engines : false, timeout: 600_000 },
  () => {
    let cp: ControlPlane;
    let admin: KubeClient;
    let dir: string;
    let marks: string;
    let root: string;
    let config: string;
    const stop: (() => Promise<void>)[] = [];
    const kubeconfigs = new Map<string, string>();

    /** The disruptive step leaves its time in disrupted.log; each pod its own when SIGTERM reached it. */
    const content = (): string =>
      writeContent(
        [
          {
            name: "rt",
            version: "1",
            metadata: { install: { commands: ["true"] }, pre_upgrade: { commands: ["true"] } },
          },
          {
            name: "rt",
            version: "2",
            metadata: {
              disrupts: { upgrade: ["runtime"] },
              install: { commands: ["true"] },
              pre_upgrade: { commands: ['date +%s%N >> "$WINFLEET_ROOT/disrupted.log"'] },
              post_upgrade: { commands: ["true"], reboot: "yes" },
            },
          },
          { name: "quiet", version: "1", metadata: { install: { commands: ["true"] } } },
        ],
        [
          { name: "node", version: "1", packages: ["rt_1", "quiet_1"] },
          { name: "node", version: "2", packages: ["rt_2", "quiet_1"] },
        ],
        join(dir, "content"),
      );

    /** The pod runners' own lines, shown when a case fails: what the node side saw of the API server. */
    const runnerLog: string[] = [];
    const joinNode = async (name: string): Promise<void> => {
      const labels = { "kubernetes.io/os": "windows" };
      const credential = await tlsBootstrap({
        server: cp.server,
        caPem: cp.caPem,
        bootstrapToken: `${TOKEN.id}.${TOKEN.secret}`,
        nodeName: name,
        labels,
        dir: join(dir, name),
      });
      kubeconfigs.set(name, credential.kubeconfig);
      const node = new NodeStandIn({ server: cp.server, caPem: cp.caPem, credential, nodeName: name, labels });
      await node.start();
      const runner = new PodRunner(node.client, name, {
        dir: join(dir, name, "pods"),
        env: {},
        commands: {},
        retryMs: 250,
        log: (line) => runnerLog.push(`${new Date().toISOString()} ${line}`),
      });
      runner.start();
      stop.push(async () => {
        await runner.stop();
        await node.stop();
      });
    };

    // The released agent (its bundle), which starts in a fraction of the sources' time: each case starts it often.
    let shipped: AgentOptions = {};
    let stopApprover = (): void => undefined;
    const apply = (version: string, env: NodeJS.ProcessEnv = {}) =>
      agent(["apply", "--config", config, "--template", `node@${version}`], {
        ...shipped,
        env: { ...shipped.env, ...env },
      });
    const settle = (version: string) =>
      applyUntilSettled(["--config", config, "--template", `node@${version}`], shipped);
    const unschedulable = async (): Promise<boolean> =>
      (await admin.get<Node>(`/api/v1/nodes/${NODE}`)).spec?.unschedulable === true;
    const webPods = async (): Promise<Pod[]> =>
      (await admin.get<{ items: Pod[] }>("/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")).items;
    /** Two web pods running on the node, ready: what each case starts from. */
    const webRunning = async (): Promise<void> => {
      let seen: Pod[] = [];
      const ok = await pollUntil(
        async () => {
          seen = await webPods();
          const pods = seen.filter((p) => !p.metadata.deletionTimestamp);
          return (
            pods.length === 2 &&
            pods.every(
              (p) =>
                p.spec.nodeName === NODE &&
                p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
            )
          );
        },
        60_000,
        250,
      );
      const shown = seen.map((p) => ({
        node: p.spec.nodeName,
        deleting: p.metadata.deletionTimestamp,
        status: p.status,
      }));
      if (!ok) assert.fail(`no two ready web pods on the node; the web pods: ${JSON.stringify(shown)}`);
    };
    /** Back to version 1 (a downgrade its metadata says disrupts nothing: no drain) with the web pods running. */
    const reset = async (): Promise<void> => {
      const r = await settle("1");
      assert.equal(r.code, 0, r.stderr);
      assert.equal(await unschedulable(), false);
      await webRunning();
      rmSync(join(root, "disrupted.log"), { force: true });
    };
    const journal = () =>
      JSON.parse(readFileSync(join(root, ".winfleet", "journal.json"), "utf8")) as {
        drain?: unknown;
        applied?: { template: { version: string } };
        history: { event: string }[];
      };
    /** Every pod that was on the node was gone (its SIGTERM handled) before the disruptive step ran. */
    const terminatedBefore = (uids: readonly string[], where: string): void => {
      const disrupted = readFileSync(join(root, "disrupted.log"), "utf8").trim().split("\n").map(BigInt);
      for (const uid of uids) {
        const file = join(marks, `${uid}.term`);
        assert.ok(existsSync(file), `${where}: pod ${uid} was never asked to stop`);
        const term = BigInt(readFileSync(file, "utf8").trim());
        for (const d of disrupted) assert.ok(term < d, `${where}: the disruptive step ran before pod ${uid} stopped`);
      }
    };
    const settledClean = async (where: string): Promise<void> => {
      const j = journal();
      assert.equal(j.applied?.template.version, "2", `${where}: converged to version 2`);
      assert.equal(j.drain, undefined, `${where}: the drain ended`);
      assert.equal(await unschedulable(), false, `${where}: uncordoned`);
    };

    before(async () => {
      if (typeof engines === "string") return;
      dir = tempDir("winfleet-drain-");
      const scratch = join(dir, "bundle");
      shipped = { entry: await agentBundle(scratch), env: { WINFLEET_CODE_CACHE: join(scratch, "code-cache") } };
      marks = join(dir, "marks");
      mkdirSync(marks);
      cp = await startTestControlPlane(engines);
      admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
      stopApprover = await joinableBy(admin, TOKEN, [NODE, OTHER]);
      await joinNode(NODE);
      await joinNode(OTHER);
      root = join(dir, "root");
      config = join(dir, "agent.json");
      writeFileSync(
        config,
        JSON.stringify({
          nodeName: NODE,
          root,
          content: content(),
          kubeconfig: kubeconfigs.get(NODE),
          reboot: "exit",
          report: { enabled: false },
          drain: { timeoutSeconds: 120 },
        }),
      );
      const first = await settle("1");
      assert.equal(first.code, 0, first.stderr);
      // A pod ends when SIGTERM reaches it, leaving the time it did.
      const script = `trap 'date +%s%N > "${marks}/$(basename "$CONTAINER_SANDBOX_MOUNT_POINT").term"; exit 0' TERM; while :; do sleep 0.1; done`;
      await waitFor(
        async () => (await admin.getOrUndefined("/api/v1/namespaces/default/serviceaccounts/default")) !== undefined,
        30_000,
        "the default service account",
      );
      await admin.post("/apis/apps/v1/namespaces/default/deployments", {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web", namespace: "default" },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              nodeSelector: { "kubernetes.io/hostname": NODE },
              terminationGracePeriodSeconds: 10,
              containers: [{ name: "web", image: "sandbox", command: ["sh", "-c", script] }],
            },
          },
        },
      });
      await webRunning();
    });

    after(async () => {
      for (const s of stop) await s().catch(() => undefined);
      stopApprover();
      await cp?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("the node's own credential may cordon its Node and evict the pods bound to it, and nothing of another node's", async () => {
      const own = KubeClient.fromKubeconfigFile(kubeconfigs.get(NODE) ?? "");
      await own.patch(`/api/v1/nodes/${NODE}`, { spec: { unschedulable: true } });
      await own.patch(`/api/v1/nodes/${NODE}`, { spec: { unschedulable: null } });
      const refused = async (p: Promise<unknown>): Promise<number> =>
        p.then(
          () => 0,
          (e: unknown) => (e instanceof KubeError ? e.status : -1),
        );
      assert.equal(await refused(own.patch(`/api/v1/nodes/${OTHER}`, { spec: { unschedulable: true } })), 403);
      // A pod bound to the other node, which the first node's credential may not evict.
      await admin.post("/api/v1/namespaces/default/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "elsewhere", namespace: "default" },
        spec: { nodeName: OTHER, containers: [{ name: "c", image: "sandbox", command: ["sleep", "600"] }] },
      });
      // Running there: NodeRestriction reads pods from its cache, which must have seen this one.
      await waitFor(
        async () => (await admin.get<Pod>("/api/v1/namespaces/default/pods/elsewhere")).status?.phase === "Running",
        30_000,
        "the pod on the other node",
      );
      const eviction = (name: string) => ({
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name, namespace: "default" },
      });
      const status = await refused(
        own.post("/api/v1/namespaces/default/pods/elsewhere/eviction", eviction("elsewhere")),
      );
      assert.equal(status, 403, "NodeRestriction: a node evicts only pods bound to it");
      const other = KubeClient.fromKubeconfigFile(kubeconfigs.get(OTHER) ?? "");
      assert.equal(
        await refused(other.post("/api/v1/namespaces/default/pods/elsewhere/eviction", eviction("elsewhere"))),
        0,
      );
      assert.deepEqual(
        await own.allowed(`system:node:${NODE}`, ["system:nodes"], {
          verb: "get",
          resource: "poddisruptionbudgets",
          group: "policy",
          namespace: "default",
        }),
        false,
        "a node reads no budget: it learns them from the refusals",
      );
    });

    it("a disruptive upgrade cordons the node and evicts its pods first, and uncordons once the host converged after its reboot", async () => {
      const before = (await webPods()).map((p) => p.metadata.uid);
      const first = await apply("2");
      assert.equal(first.code, 194, `the upgrade asks for a reboot: ${first.stderr}`);
      assert.equal(await unschedulable(), true, "cordoned across the reboot");
      terminatedBefore(before, "first run");
      const pending = (await webPods()).filter((p) => !p.metadata.deletionTimestamp);
      assert.ok(
        pending.every((p) => p.spec.nodeName === undefined),
        "their replacements wait: the node takes none",
      );
      const history = journal().history.map((h) => h.event);
      assert.deepEqual(
        history.filter((e) => ["drain-started", "cordoned", "pod-evicted", "drained"].includes(e)),
        ["drain-started", "cordoned", "pod-evicted", "pod-evicted", "drained"],
      );
      const second = await settle("2");
      assert.equal(second.code, 0, second.stderr);
      await settledClean("after the reboot");
      await webRunning();
    });

    it("kill -9 of the agent at each step of the drain: every restart ends converged and uncordoned, nothing disruptive before the pods are gone", async () => {
      for (const step of [
        "drain-started",
        "cordoned",
        "pod-evicted",
        "pod-evicted#2",
        "drained",
        "reboot-required",
        "converged",
        "uncordoned",
      ]) {
        await reset();
        const before = (await webPods()).map((p) => p.metadata.uid);
        let crashed = false;
        for (let i = 0; i < 3 && !crashed; i++) {
          const r = await apply("2", { WINFLEET_TEST_CRASH_AFTER: step });
          crashed = r.signal === "SIGKILL";
          if (!crashed) assert.equal(r.code, 194, `${step}: ${r.stderr}`);
        }
        assert.ok(crashed, `the agent was killed after ${step}`);
        const r = await settle("2");
        assert.equal(r.code, 0, `after a crash at ${step}: ${r.stderr}`);
        await settledClean(`crash at ${step}`);
        terminatedBefore(before, `crash at ${step}`);
      }
    });

    it("an API server restarted while the drain waits: the drain waits for it, then ends converged and uncordoned", async () => {
      await reset();
      // Pods that take their time to stop: the drain is still waiting when the API server goes.
      await admin.patch("/apis/apps/v1/namespaces/default/deployments/web", {
        spec: {
          template: {
            spec: {
              containers: [
                { name: "web", image: "sandbox", command: ["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"] },
              ],
              terminationGracePeriodSeconds: 6,
            },
          },
        },
      });
      await waitFor(
        async () => (await webPods()).every((p) => !p.metadata.deletionTimestamp) && (await webPods()).length === 2,
        60_000,
        "the new web pods",
      );
      await webRunning();
      const run = apply("2");
      await waitFor(
        () => existsSync(join(root, ".winfleet", "journal.json")) && journal().history.at(-1)?.event === "pod-evicted",
        30_000,
        "the first eviction",
      );
      await cp.stopApiServer();
      await sleep(3000);
      await cp.startApiServer();
      const first = await run;
      assert.equal(first.code, 194, `${first.stderr}\npod runners:\n${runnerLog.slice(-30).join("\n")}`);
      const r = await settle("2");
      assert.equal(r.code, 0, r.stderr);
      await settledClean("after the API server restart");
      const history = journal().history.map((h) => h.event);
      assert.ok(history.includes("drained") && history.includes("uncordoned"), history.join(", "));
    });
  },
);
