/**
 * Faults in the middle of a rollout through the DaemonSet controller, on one local cluster of four real hosts
 * (`winfleet local up --cluster`, fault-cluster.ts), each a version bump with something broken while it runs:
 * kube-apiserver and etcd killed (the control plane starts them again), agents killed with `kill -9` at seeded random
 * moments, a host stopped with SIGSTOP past the node grace period. Each ends with every host on the target, every
 * report its agent logged posted once on its Node and none left queued; and `winfleet local down` leaves nothing.
 * Faults during an apply (content that fails, a disk that fills) are in faults-apply.test.ts, on a cluster of their
 * own, so that each file stays well inside the test runner's time limit per file.
 *
 * The cluster comes up the way the README leads a new user: `winfleet local up` (no cluster), stopped, then
 * `winfleet local up --cluster` on the hosts kept from the first run, which must report to their Nodes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe } from "node:test";
import { KubeClient } from "../../agent/cluster/kube-client";
import { NODE_MONITOR_GRACE_SECONDS } from "../../agent/cluster/control-plane";
import { startFleet, winfleet } from "../fleet/support";
import { Rng, enginesOrSkip, sleep } from "../support";
import { HOSTS, downLeavesNothing, faultCluster } from "./fault-cluster";
import { agentPid, generation, logOffsets, midRollout, nodes, pidsOf } from "./rollout-watch";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");

describe(
  "faults in the middle of a rollout on a local cluster",
  { skip: typeof engines === "string" ? engines : false, timeout: 1_200_000 },
  () => {
    const c = faultCluster("winfleet-faults-", { smallDisk: false });

    c.fault(
      "the README's order: hosts kept from `winfleet local up` join `--cluster` and every Node reports",
      async () => {
        const plain = startFleet(["--stack", c.stack(), "--state-dir", c.state, "--port", "0"]);
        try {
          await plain.waitFor(/rollout done: local-1, local-2, local-3, local-4/, 120_000);
        } finally {
          assert.equal(winfleet(["local", "down", "--state-dir", c.state]).code, 0);
          await plain.exit;
        }
        c.offsets = logOffsets(c.state, HOSTS);
        c.fleet = startFleet(["--cluster", "--stack", c.stack(), "--state-dir", c.state, "--port", "0"]);
        await c.fleet.waitFor(/rollout done: every host already there/, 240_000);
        c.kube = KubeClient.fromKubeconfigFile(join(c.state, "kubeconfig"));
        await c.settledOn(1);
        for (const n of await nodes(c.kube)) assert.equal(n.state, "converged", n.name);
      },
    );

    c.fault(
      "kube-apiserver killed with SIGKILL mid-rollout: the control plane starts it again and the rollout finishes",
      async () => {
        const before = await generation(c.kube);
        const rolling = c.up(2, 2);
        await midRollout(c.kube, before, HOSTS.length);
        const [pid] = pidsOf(c.state, "kube-apiserver");
        assert.ok(pid, "the API server runs");
        process.kill(pid, "SIGKILL");
        const r = await rolling;
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.notEqual(pidsOf(c.state, "kube-apiserver")[0], pid, "a new API server runs");
        assert.match(c.fleet?.output() ?? "", /kube-apiserver exited \(SIGKILL\); starting it again/);
        await c.settledOn(2);
      },
    );

    c.fault("etcd killed with SIGKILL mid-rollout: started again on its data, the rollout finishes", async () => {
      const before = await generation(c.kube);
      const rolling = c.up(3, 2);
      await midRollout(c.kube, before, HOSTS.length);
      const [pid] = pidsOf(join(c.state, "cluster"), "--data-dir");
      assert.ok(pid, "etcd runs");
      process.kill(pid, "SIGKILL");
      const r = await rolling;
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(c.fleet?.output() ?? "", /etcd exited \(SIGKILL\); starting it again/);
      await c.settledOn(3);
    });

    c.fault(
      "agents killed with kill -9 at seeded random moments of the rollout: each comes back and converges once",
      async () => {
        const seed = Number(process.env.WINFLEET_FAULT_SEED ?? Date.now() % 100_000);
        process.stderr.write(`agent kill -9 seed: ${seed} (WINFLEET_FAULT_SEED=${seed} repeats it)\n`);
        const rng = new Rng(seed);
        const before = await generation(c.kube);
        const rolling = c.up(4, 2);
        let done = false;
        void rolling.finally(() => (done = true));
        await midRollout(c.kube, before, HOSTS.length);
        const killed: string[] = [];
        for (let i = 0; i < 4 && !done; i++) {
          await sleep(300 + rng.int(2500));
          const host = rng.pick(HOSTS);
          const pid = agentPid(c.state, host);
          if (pid === undefined || done) continue;
          process.kill(-pid, "SIGKILL");
          killed.push(`${host}@${i}`);
        }
        const r = await rolling;
        assert.equal(r.code, 0, `killed ${killed.join(", ")}: ${r.stdout}${r.stderr}`);
        assert.ok(killed.length > 0, "at least one agent was killed mid-rollout");
        await c.settledOn(4);
      },
    );

    c.fault(
      `a host stopped with SIGSTOP past the ${NODE_MONITOR_GRACE_SECONDS} s grace period: its Node goes NotReady, the rollout waits, and it finishes once the host is resumed`,
      async () => {
        const frozen = "local-4";
        const pid = agentPid(c.state, frozen);
        assert.ok(pid);
        process.kill(-pid, "SIGSTOP");
        let finished = false;
        try {
          const rolling = c.up(5, 2);
          void rolling.finally(() => (finished = true));
          await c.kube.waitFor(
            async () => (await nodes(c.kube)).find((n) => n.name === frozen)?.ready === "Unknown",
            NODE_MONITOR_GRACE_SECONDS * 1000 + 60_000,
            `${frozen}'s Node to go NotReady`,
          );
          assert.equal(finished, false, "the rollout waits for the stopped host");
          process.kill(-pid, "SIGCONT");
          const r = await rolling;
          assert.equal(r.code, 0, r.stdout + r.stderr);
        } finally {
          process.kill(-pid, "SIGCONT");
        }
        // The rollout may finish on the pod's word before the resumed host's next heartbeat posts its Node Ready.
        await c.kube.waitFor(
          async () => (await nodes(c.kube)).find((n) => n.name === frozen)?.ready === "True",
          60_000,
          `${frozen}'s Node to be Ready again`,
        );
        await c.settledOn(5);
      },
    );

    downLeavesNothing(c);
  },
);
