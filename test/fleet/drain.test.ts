/**
 * Workload-safe upgrades on `winfleet local up --cluster`, through the real API server: a
 * Deployment's pods run on the sandbox nodes (the node stand-in runs them as host processes) under
 * a PodDisruptionBudget, watched throughout. A version that disrupts nothing evicts nothing; the
 * sandbox's disruptive version cordons each node before its first disruptive step, evicts its pods
 * never beyond the budget, converges, uncordons, and the rollout is done; and a disruptive version
 * meeting a budget that can never be satisfied halts the rollout at the first node, with the
 * Events naming pods and budget, and nothing disruptive run there. One cluster for every case.
 */
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KubeClient } from "../../agent/cluster/kube-client";
import { hostPaths } from "../../agent/fleet/spec";
import { type Fleet, REPO, killFleet, processesMentioning, startFleet, winfleet, writeStack } from "./support";
import { enginesOrSkip, pollUntil, runCommand, tempDir } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");
const HOSTS = ["local-1", "local-2"];
const REPLICAS = 4;

type Meta = { name: string; uid: string; deletionTimestamp?: string; annotations?: Record<string, string> };
type Pod = {
  metadata: Meta;
  spec: { nodeName?: string };
  status?: { conditions?: { type: string; status: string }[] };
};
type Node = { metadata: Meta; spec?: { unschedulable?: boolean } };
type Event = { reason: string; message: string; type: string; involvedObject: { name: string } };

describe(
  "draining nodes on winfleet local up --cluster",
  { skip: typeof engines === "string" ? engines : false, timeout: 900_000 },
  () => {
    let dir: string;
    let content: string;
    let fleet: Fleet | undefined;
    let kube: KubeClient;
    const stack = () => join(dir, "Pulumi.drain.yaml");
    const state = () => join(dir, "state");
    const marks = () => join(dir, "marks");
    /** What the watches saw, with when: every web pod change, every node change. */
    const pods = new Map<string, Pod & { since: number }>();
    const cordons: { node: string; unschedulable: boolean; at: number }[] = [];
    let worstReady = Infinity;
    const watches: { stop(): void }[] = [];

    /** Rolls `version` with the drain's `timeoutSeconds` (knobs travel with the rollout). */
    const roll = (version: string, timeoutSeconds = 120) => {
      writeStack(stack(), {
        content,
        template: "sandbox",
        version,
        hosts: HOSTS.length,
        drain: `{ timeoutSeconds: ${timeoutSeconds} }`,
      });
      return runCommand(
        process.execPath,
        [join(REPO, "bin", "winfleet.js"), "local", "up", "--cluster", "--stack", stack(), "--state-dir", state()],
        { cwd: REPO, timeoutMs: 480_000 },
      );
    };
    const ready = (p: Pod) =>
      !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    /** Events of `reason` the agents posted since `since` (the names of those posted before it). */
    const events = async (reason: string, since: ReadonlySet<string> = new Set()) =>
      (await kube.get<{ items: (Event & { metadata: { name: string } })[] }>("/api/v1/events")).items.filter(
        (e) => e.reason === reason && !since.has(e.metadata.name),
      );
    const eventNames = async () =>
      new Set(
        (await kube.get<{ items: { metadata: { name: string } }[] }>("/api/v1/events")).items.map(
          (e) => e.metadata.name,
        ),
      );
    const budget = (maxUnavailable: number) =>
      kube.patch("/apis/policy/v1/namespaces/default/poddisruptionbudgets/web-pdb", { spec: { maxUnavailable } });
    /** When the host's disruptive step ran (the sandbox service's stop leaves heartbeat.stopped), if it did. */
    const disruptedAt = (host: string): number | undefined => {
      const f = join(hostPaths(state(), host).root, "winfleet", "sandbox", "services", "heartbeat.stopped");
      return existsSync(f) ? statSync(f).mtimeMs : undefined;
    };
    /** When SIGTERM reached a pod (its container left the time), in ms. */
    const stoppedAt = (uid: string): number | undefined => {
      const f = join(marks(), `${uid}.term`);
      return existsSync(f) ? Number(BigInt(readFileSync(f, "utf8").trim()) / 1_000_000n) : undefined;
    };
    const allReady = () =>
      pollUntil(() => [...pods.values()].filter(ready).length === REPLICAS, 120_000, 250).then((ok) =>
        assert.ok(ok, `${REPLICAS} ready web pods`),
      );

    before(async () => {
      if (typeof engines === "string") return;
      dir = tempDir("winfleet-local-drain-");
      mkdirSync(marks());
      // The checkout's content, and one more disruptive version for the budget that never lets a pod go.
      content = join(dir, "content");
      cpSync(join(REPO, "content"), content, { recursive: true });
      const service = join(content, "components", "sandbox-service");
      cpSync(join(service, "1.1.0"), join(service, "1.2.0"), { recursive: true });
      const meta = join(service, "1.2.0", "metadata.json");
      writeFileSync(meta, readFileSync(meta, "utf8").replace('"version": "1.1.0"', '"version": "1.2.0"'));
      const template = JSON.parse(readFileSync(join(content, "templates", "sandbox-1.2.0.json"), "utf8")) as {
        version: string;
        packages: string[];
      };
      template.version = "1.3.0";
      template.packages = template.packages.map((p) => p.replace("sandbox-service_1.1.0", "sandbox-service_1.2.0"));
      writeFileSync(join(content, "templates", "sandbox-1.3.0.json"), JSON.stringify(template));

      writeStack(stack(), { content, template: "sandbox", version: "1.0.0", hosts: HOSTS.length });
      const started = Date.now();
      fleet = startFleet(["--cluster", "--stack", stack(), "--state-dir", state(), "--port", "0"]);
      await fleet.waitFor(/rollout done: local-1, local-2/, 240_000);
      kube = KubeClient.fromKubeconfigFile(join(state(), "kubeconfig"));
      await pollUntil(
        async () => (await kube.getOrUndefined("/api/v1/namespaces/default/serviceaccounts/default")) !== undefined,
        30_000,
      );
      // Each pod leaves the time SIGTERM reached it, then ends.
      const script = `trap 'date +%s%N > "${marks()}/$(basename "$CONTAINER_SANDBOX_MOUNT_POINT").term"; exit 0' TERM; while :; do sleep 0.1; done`;
      await kube.post("/apis/apps/v1/namespaces/default/deployments", {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web", namespace: "default" },
        spec: {
          replicas: REPLICAS,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              terminationGracePeriodSeconds: 5,
              topologySpreadConstraints: [
                {
                  maxSkew: 1,
                  topologyKey: "kubernetes.io/hostname",
                  whenUnsatisfiable: "ScheduleAnyway",
                  labelSelector: { matchLabels: { app: "web" } },
                },
              ],
              containers: [{ name: "web", image: "sandbox", command: ["sh", "-c", script] }],
            },
          },
        },
      });
      await kube.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", {
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "web-pdb", namespace: "default" },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: "web" } } },
      });
      const podWatch = kube.watch("/api/v1/namespaces/default/pods?labelSelector=app%3Dweb", (type, o) => {
        const p = o as unknown as Pod;
        if (type === "DELETED") pods.delete(p.metadata.uid);
        else pods.set(p.metadata.uid, { ...p, since: Date.now() });
        if (worstReady !== Infinity || [...pods.values()].filter(ready).length === REPLICAS)
          worstReady = Math.min(worstReady, [...pods.values()].filter(ready).length);
      });
      const nodeWatch = kube.watch("/api/v1/nodes", (_type, o) => {
        const n = o as unknown as Node;
        const unschedulable = n.spec?.unschedulable === true;
        const last = cordons.filter((c) => c.node === n.metadata.name).at(-1);
        if ((last?.unschedulable ?? false) !== unschedulable)
          cordons.push({ node: n.metadata.name, unschedulable, at: Date.now() });
      });
      watches.push(podWatch, nodeWatch);
      await Promise.all([podWatch.ready, nodeWatch.ready]);
      await allReady();
      process.stderr.write(
        `local cluster with a Deployment under a budget in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
      );
    });

    after(() => {
      for (const w of watches) w.stop();
      killFleet(fleet);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("a bump that disrupts nothing evicts nothing and cordons nothing", async () => {
      const before = new Set(pods.keys());
      const earlier = await eventNames();
      const r = await roll("1.1.0");
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /rollout done: local-\d, local-\d/);
      assert.deepEqual(new Set(pods.keys()), before, "the same pods, none replaced");
      assert.ok([...pods.values()].every((p) => !p.metadata.deletionTimestamp));
      assert.deepEqual(cordons, [], "no node was cordoned");
      assert.deepEqual(await events("DrainStarted", earlier), []);
    });

    it("a disruptive bump drains each node before its first disruptive step, never beyond the budget, and uncordons it once converged", async () => {
      // Which pods were on which node as the rollout began, and when each node was cordoned and uncordoned.
      const onNode = new Map(HOSTS.map((h) => [h, [] as string[]]));
      const place = () => {
        for (const p of pods.values()) if (p.spec.nodeName) onNode.get(p.spec.nodeName)?.push(p.metadata.uid);
      };
      place();
      const placing = setInterval(place, 200);
      const earlier = await eventNames();
      const r = await roll("1.2.0");
      clearInterval(placing);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /rollout done: local-\d, local-\d/);
      assert.ok(worstReady >= REPLICAS - 1, `never more than one pod unavailable (at worst ${worstReady} ready)`);
      // Each agent reports on its Node a moment after it converged.
      let nodes: { items: Node[] } = { items: [] };
      await pollUntil(
        async () =>
          (nodes = await kube.get<{ items: Node[] }>("/api/v1/nodes")).items.every(
            (n) => n.metadata.annotations?.["winfleet.io/template-version"] === "1.2.0",
          ),
        30_000,
        250,
      );
      for (const host of HOSTS) {
        const disrupted = disruptedAt(host);
        assert.ok(disrupted !== undefined, `${host}: its disruptive step ran`);
        const mine = cordons.filter((c) => c.node === host);
        assert.deepEqual(
          mine.map((c) => c.unschedulable),
          [true, false],
          `${host}: cordoned once, uncordoned once`,
        );
        assert.ok((mine[0]?.at ?? Infinity) < disrupted, `${host}: cordoned before its first disruptive step`);
        assert.ok((mine[1]?.at ?? 0) > disrupted, `${host}: uncordoned after it`);
        // Every pod the node had by the time it was cordoned stopped before the disruptive step.
        for (const uid of new Set(onNode.get(host))) {
          const stopped = stoppedAt(uid);
          if (stopped === undefined) continue; // it was never asked to go: it left before the rollout reached its node
          assert.ok(stopped < disrupted, `${host}: pod ${uid} stopped before the disruptive step`);
        }
        const node = nodes.items.find((n) => n.metadata.name === host);
        assert.notEqual(node?.spec?.unschedulable, true, `${host}: uncordoned`);
        assert.equal(node?.metadata.annotations?.["winfleet.io/template-version"], "1.2.0", `${host}: converged`);
      }
      const evicted = await events("PodEvicted", earlier);
      assert.ok(evicted.length >= REPLICAS - 1, `the pods were evicted: ${evicted.map((e) => e.message).join("; ")}`);
      for (const host of HOSTS) {
        const on = (e: Event) => e.involvedObject.name === host;
        assert.ok((await events("DrainStarted", earlier)).some(on), `${host}: DrainStarted`);
        assert.ok((await events("DrainFinished", earlier)).some(on), `${host}: DrainFinished`);
        assert.ok((await events("Uncordoned", earlier)).some(on), `${host}: Uncordoned`);
      }
      await allReady();
    });

    it("a budget that can never be satisfied halts the rollout at the first node, with the Events, and nothing disruptive ran there", async () => {
      // The last node drained above had its pods replaced on the other: spread them again (a rollout restart, both
      // nodes schedulable), so that whichever node the DaemonSet moves first has a pod the budget holds there.
      await kube.patch("/apis/apps/v1/namespaces/default/deployments/web", {
        spec: { template: { metadata: { annotations: { "winfleet.test/restarted": String(Date.now()) } } } },
      });
      const spread = await pollUntil(
        async () => {
          // The old pods gone, not only terminating: the pods below are the ones the budget holds. And the Deployment's
          // rollout over: between two of its steps there can be four ready pods, spread, and an old one it then deletes
          // (which no budget holds back).
          const live = [...pods.values()];
          if (
            live.length !== REPLICAS ||
            !live.every(ready) ||
            !HOSTS.every((h) => live.some((p) => p.spec.nodeName === h))
          )
            return false;
          const web = await kube.get<{
            metadata: { generation: number };
            status: {
              observedGeneration?: number;
              replicas?: number;
              updatedReplicas?: number;
              availableReplicas?: number;
            };
          }>("/apis/apps/v1/namespaces/default/deployments/web");
          const s = web.status;
          return (
            s.observedGeneration === web.metadata.generation &&
            s.replicas === REPLICAS &&
            s.updatedReplicas === REPLICAS &&
            s.availableReplicas === REPLICAS
          );
        },
        120_000,
        250,
      );
      assert.ok(spread, "the web pods run on both nodes again");
      await budget(0);
      const before = new Set(pods.keys());
      const disruptedBefore = new Map(HOSTS.map((h) => [h, disruptedAt(h)]));
      const r = await roll("1.3.0", 10);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      const m =
        /rollout halted at (local-\d): sandbox-service pre_upgrade: drain the node \(cordon, evict its pods\): exit null: the drain did not finish within 10 s: still in the way: default\/web-\S+ \(PodDisruptionBudget default\/web-pdb/.exec(
          r.stdout,
        );
      assert.ok(m, r.stdout);
      const host = m[1] ?? "";
      const on = (e: Event) => e.involvedObject.name === host;
      const failed = (await events("DrainFailed")).filter(on);
      assert.ok(
        failed.length > 0 && /default\/web-\S+ \(PodDisruptionBudget default\/web-pdb/.test(failed[0]?.message ?? ""),
      );
      assert.equal(failed[0]?.type, "Warning");
      assert.ok((await events("DrainBlocked")).filter(on).some((e) => /web-pdb/.test(e.message)));
      const components = (await kube.get<Node>(`/api/v1/nodes/${host}`)).metadata.annotations?.[
        "winfleet.io/components"
      ];
      assert.match(components ?? "", /sandbox-service=1\.1\.0/, "the service was not upgraded");
      assert.equal(
        disruptedAt(host),
        disruptedBefore.get(host),
        "nothing disruptive ran there: the service never stopped",
      );
      assert.deepEqual(new Set(pods.keys()), before, "no pod was let go");
      // Halted there: that host's upgrader stays unready, so the DaemonSet's rollout cannot finish, and nothing
      // disruptive ran anywhere.
      const upgraders = await kube.get<{ items: Pod[] }>("/api/v1/namespaces/winfleet-system/pods");
      const mine = upgraders.items.filter((p) => p.spec.nodeName === host && !p.metadata.deletionTimestamp);
      assert.ok(mine.length > 0 && mine.every((p) => !ready(p)), `${host}: its upgrader pod is not Ready`);
      for (const other of HOSTS)
        assert.equal(disruptedAt(other), disruptedBefore.get(other), `${other}: its service never stopped`);
    });

    it("stops cleanly", async () => {
      for (const w of watches) w.stop();
      assert.equal(winfleet(["local", "down", "--state-dir", state()]).code, 0);
      assert.equal(await fleet?.exit, 0);
      assert.deepEqual(processesMentioning(state()), []);
    });
  },
);
