/**
 * `winfleet local up --cluster`: the production loop on one machine. A real control plane
 * starts, the stack's real Pulumi program deploys the cluster side to it, the sandbox hosts
 * join by TLS bootstrap and turn Ready, each agent reports on its own Node with its own
 * credential, the DaemonSet controller places an upgrader pod on every host, and
 * `winfleet local down` leaves no process or port behind.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KubeClient } from "../../agent/cluster/kube-client";
import { type Fleet, REPO, killFleet, portOf, processesMentioning, startFleet, winfleet, writeStack } from "./support";
import {
  canProbeAsAnotherUser,
  CHROMIUM,
  enginesOrSkip,
  listenersOf,
  pidsMentioning,
  probeAsNobody,
  locate,
  portOpen,
  runCommand,
  skipUnlessInstalled,
  sleep,
  tempDir,
} from "../support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");

type Nodes = {
  items: {
    metadata: { name: string; labels: Record<string, string>; annotations?: Record<string, string> };
    status: { conditions?: { type: string; status: string }[] };
  }[];
};

describe(
  "winfleet local up --cluster",
  { skip: typeof engines === "string" ? engines : false, timeout: 600_000 },
  () => {
    let dir: string;
    let fleet: Fleet | undefined;
    let kube: KubeClient;

    before(async () => {
      if (typeof engines === "string") return;
      dir = tempDir("winfleet-local-cluster-");
      writeStack(join(dir, "Pulumi.lc.yaml"), {
        content: join(REPO, "content"),
        template: "sandbox",
        version: "1.0.0",
        hosts: 3,
      });
      const started = Date.now();
      fleet = startFleet([
        "--cluster",
        "--stack",
        join(dir, "Pulumi.lc.yaml"),
        "--state-dir",
        join(dir, "state"),
        "--port",
        "0",
      ]);
      await fleet.waitFor(/rollout done: local-1, local-2, local-3/, 180_000);
      process.stderr.write(
        `local cluster: 3 hosts joined and converged in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
      );
      kube = KubeClient.fromKubeconfigFile(join(dir, "state", "kubeconfig"));
    });

    after(() => {
      killFleet(fleet);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("prints the kubeconfig, and the hosts are Ready nodes of their pool", async () => {
      assert.match(fleet?.output() ?? "", new RegExp(`kubeconfig: ${join(dir, "state", "kubeconfig")}`));
      const nodes = await kube.get<Nodes>("/api/v1/nodes");
      assert.deepEqual(nodes.items.map((n) => n.metadata.name).sort(), ["local-1", "local-2", "local-3"]);
      for (const n of nodes.items) {
        assert.equal(n.status.conditions?.find((c) => c.type === "Ready")?.status, "True", `${n.metadata.name} Ready`);
        assert.equal(n.metadata.labels["winfleet.io/pool"], "local");
      }
    });

    it("each agent reports on its own Node: WinfleetReady, its template and Events", async () => {
      const nodes = await kube.waitFor(
        async () => {
          const n = await kube.get<Nodes>("/api/v1/nodes");
          return n.items.every((x) =>
            x.status.conditions?.some((c) => c.type === "WinfleetReady" && c.status === "True"),
          )
            ? n
            : undefined;
        },
        60_000,
        "every node to report WinfleetReady",
      );
      for (const n of nodes.items)
        assert.equal(n.metadata.annotations?.["winfleet.io/template-version"], "1.0.0", n.metadata.name);
      // The condition and the Event leave the agent's report queue separately; the Event may come second.
      type Events = { items: { reason: string; involvedObject: { name: string } }[] };
      const posted = (events: Events, host: string): boolean =>
        events.items.some((e) => e.involvedObject.name === host && e.reason === "Converged");
      const events = await kube.waitFor(
        async () => {
          const e = await kube.get<Events>("/api/v1/events");
          return ["local-1", "local-2", "local-3"].every((h) => posted(e, h)) ? e : undefined;
        },
        30_000,
        "every host's Converged Event",
      );
      for (const host of ["local-1", "local-2", "local-3"]) assert.ok(posted(events, host), `${host} posted Converged`);
    });

    it("the DaemonSet controller places an upgrader pod on every host, which runs there and turns Ready once its host converged", async () => {
      type Ds = {
        status: {
          desiredNumberScheduled: number;
          currentNumberScheduled: number;
          numberReady?: number;
          numberAvailable?: number;
        };
      };
      const ds = await kube.waitFor(
        async () => {
          const d = await kube.getOrUndefined<Ds>(
            "/apis/apps/v1/namespaces/winfleet-system/daemonsets/winfleet-agent-upgrader-local",
          );
          // Available: Ready for minReadySeconds, what the controller counts when it rolls.
          return d && d.status.numberReady === 3 && d.status.numberAvailable === 3 ? d : undefined;
        },
        120_000,
        "the upgrader DaemonSet's three pods to be Ready and available",
      );
      assert.equal(ds.status.desiredNumberScheduled, 3);
      const pods = await kube.get<{
        items: {
          spec: { nodeName: string };
          status: { phase: string; initContainerStatuses?: { state: { terminated?: { exitCode: number } } }[] };
        }[];
      }>("/api/v1/namespaces/winfleet-system/pods");
      assert.deepEqual(pods.items.map((p) => p.spec.nodeName).sort(), ["local-1", "local-2", "local-3"]);
      for (const p of pods.items) {
        assert.equal(p.status.phase, "Running");
        assert.equal(
          p.status.initContainerStatuses?.[0]?.state.terminated?.exitCode,
          0,
          "the upgrade init container ran on the host and succeeded",
        );
      }
    });

    it(
      "the status page shows the cluster's view beside the hosts': each Node's conditions, the DaemonSet's rollout and recent Events",
      { skip: skipUnlessInstalled(CHROMIUM) },
      async () => {
        const { chromium } = await import("playwright-core");
        const url = `http://127.0.0.1:${portOf(fleet as Fleet)}/`;
        const browser = await chromium.launch({
          executablePath: locate(CHROMIUM) ?? "/usr/bin/chromium",
          args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        });
        try {
          const page = await browser.newPage();
          await page.goto(url);
          await page.waitForSelector("#cluster:not([hidden]) #nodes tr:nth-child(3)", { timeout: 30_000 });
          const rows = async (selector: string) =>
            (await page.locator(selector).allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
          const nodes = await rows("#nodes tr");
          assert.deepEqual(nodes, [
            "local-1 True True sandbox 1.0.0",
            "local-2 True True sandbox 1.0.0",
            "local-3 True True sandbox 1.0.0",
          ]);
          const ds = await rows("#daemonsets tr");
          assert.deepEqual(ds, ["winfleet-agent-upgrader-local 3 3 3 0"]);
          const reasons = await rows("#events tr td:nth-child(3)");
          assert.ok(
            reasons.includes("Converged") || reasons.includes("SuccessfulCreate"),
            `recent Events: ${reasons.join(", ")}`,
          );
        } finally {
          await browser.close();
        }
      },
    );

    it(
      "another local user is refused by every socket the fleet listens on: etcd, the API server, kubelets, the status page, brokers",
      { skip: !canProbeAsAnotherUser() && "needs root to run a probe as another user" },
      async () => {
        const state = join(dir, "state");
        const listeners = listenersOf([...new Set([fleet?.child.pid ?? 0, ...pidsMentioning(state)])]);
        const tcp = listeners.filter((l) => l.kind === "tcp").length;
        const unix = listeners.filter((l) => l.kind === "unix").length;
        // The status page, the API server, etcd's client and peer ports, a kubelet per host; two broker sockets a host.
        assert.ok(tcp >= 7, `TCP listeners: ${JSON.stringify(listeners)}`);
        assert.ok(unix >= 6, `Unix listeners: ${JSON.stringify(listeners)}`);
        const results = await probeAsNobody(listeners);
        process.stderr.write(`probed as nobody: ${results.map((r) => `${r.listener} (${r.detail})`).join("; ")}\n`);
        const served = results.filter((r) => r.served);
        assert.deepEqual(served, [], `answered nobody:\n${served.map((r) => `${r.listener}: ${r.detail}`).join("\n")}`);
      },
    );

    it("a templateVersion bump rolls through the DaemonSet controller, never more than maxUnavailable hosts unconverged", async () => {
      writeStack(join(dir, "Pulumi.lc.yaml"), {
        content: join(REPO, "content"),
        template: "sandbox",
        version: "1.1.0",
        hosts: 3,
      });
      let worst = 0;
      let watching = true;
      const samples: string[] = [];
      // The invariant is checked as the rollout runs, at every status the DaemonSet and the nodes show.
      const watch = (async () => {
        while (watching) {
          const d = await kube.getOrUndefined<{
            status: { numberUnavailable?: number; updatedNumberScheduled?: number };
          }>("/apis/apps/v1/namespaces/winfleet-system/daemonsets/winfleet-agent-upgrader-local");
          const nodes = await kube.get<Nodes>("/api/v1/nodes");
          const unconverged = nodes.items.filter(
            (n) => n.status.conditions?.find((c) => c.type === "WinfleetReady")?.status !== "True",
          ).length;
          const unavailable = d?.status.numberUnavailable ?? 0;
          worst = Math.max(worst, unconverged, unavailable);
          samples.push(`${unavailable}/${unconverged}`);
          await sleep(100);
        }
      })();
      // Asynchronously, so the watch above keeps sampling while the rollout runs.
      const roll = await runCommand(
        process.execPath,
        [
          join(REPO, "bin", "winfleet.js"),
          "local",
          "up",
          "--cluster",
          "--stack",
          join(dir, "Pulumi.lc.yaml"),
          "--state-dir",
          join(dir, "state"),
        ],
        { cwd: REPO, timeoutMs: 300_000 },
      );
      watching = false;
      await watch;
      assert.equal(roll.code, 0, roll.stdout + roll.stderr);
      assert.match(roll.stdout, /rollout done: local-\d, local-\d, local-\d/);
      assert.ok(
        worst <= 1,
        `at most one host unconverged or unavailable at a time (unavailable/unconverged samples: ${samples.join(" ")})`,
      );
      assert.ok(
        samples.some((x) => x !== "0/0"),
        "the rollout was watched while it ran",
      );
      const nodes = await kube.get<Nodes>("/api/v1/nodes");
      for (const n of nodes.items)
        assert.equal(n.metadata.annotations?.["winfleet.io/template-version"], "1.1.0", n.metadata.name);
      const ds = await kube.get<{ status: { updatedNumberScheduled: number; numberReady: number } }>(
        "/apis/apps/v1/namespaces/winfleet-system/daemonsets/winfleet-agent-upgrader-local",
      );
      assert.equal(ds.status.updatedNumberScheduled, 3);
    });

    it("winfleet local down stops everything it started, control plane included", async () => {
      const port = Number(new URL(kube.server).port);
      assert.equal(await portOpen(port), true);
      const down = winfleet(["local", "down", "--state-dir", join(dir, "state")]);
      assert.equal(down.code, 0, down.stderr);
      assert.equal(await fleet?.exit, 0);
      assert.equal(await portOpen(port), false, "the API server's port is closed");
      assert.deepEqual(
        processesMentioning(join(dir, "state")),
        [],
        "no agent, etcd, kube-apiserver or kube-controller-manager is left",
      );
    });
  },
);
