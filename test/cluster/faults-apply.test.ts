/**
 * Faults during an apply, in the middle of a rollout through the DaemonSet controller, on one local cluster of four
 * real hosts (`winfleet local up --cluster`, fault-cluster.ts): content that fails on one host, and a host whose disk
 * (a 16 MiB tmpfs of its own) fills during the apply. Each halts the rollout at that host, naming it and the step,
 * within `maxUnavailable`, with nothing half-written; and a fix, bumped again, finishes it. After each, every report
 * each agent logged is on its Node once and none is left queued; `winfleet local down` leaves nothing.
 */
import assert from "node:assert/strict";
import { rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe } from "node:test";
import { KubeClient } from "../../agent/cluster/kube-client";
import { hostPaths } from "../../agent/fleet/spec";
import { startFleet } from "../fleet/support";
import { enginesOrSkip, sleep } from "../support";
import { MiB, QUIRKY, SMALL_DISK, diskSkip, downLeavesNothing, faultCluster } from "./fault-cluster";
import {
  DAEMONSET,
  type DaemonSetStatus,
  describeDaemonSet,
  freeBytes,
  nodes,
  watchUnavailable,
} from "./rollout-watch";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");

describe(
  "faults during an apply, mid-rollout, on a local cluster",
  { skip: typeof engines === "string" ? engines : false, timeout: 1_200_000 },
  () => {
    const c = faultCluster("winfleet-faults-apply-", { smallDisk: true });

    c.fault("the cluster comes up with every host on svc 5 and reporting", async () => {
      c.writeStack(5, 2);
      // Fresh hosts: every report their agents log is counted, from the start of each log.
      c.fleet = startFleet(["--cluster", "--stack", c.stack(), "--state-dir", c.state, "--port", "0"]);
      await c.fleet.waitFor(/rollout done: local-1, local-2, local-3, local-4/, 240_000);
      c.kube = KubeClient.fromKubeconfigFile(join(c.state, "kubeconfig"));
      await c.settledOn(5);
    });

    c.fault(
      "content that fails on one host halts the rollout within maxUnavailable; fixed content finishes it",
      async () => {
        const watch = await watchUnavailable(c.kube);
        const halted = await c.up(6, 1);
        assert.equal(halted.code, 1, halted.stdout + halted.stderr);
        assert.match(
          halted.stdout,
          new RegExp(`rollout halted at ${QUIRKY}: app pre_upgrade: .*exit 9: app 6 cannot replace the legacy driver`),
        );
        // The rollout halts on the agent's word through its broker; its Node's report follows through the queue.
        await c.kube
          .waitFor(
            async () => (await nodes(c.kube)).find((x) => x.name === QUIRKY)?.state === "failed",
            30_000,
            `${QUIRKY}'s Node to report the failed apply`,
          )
          .catch(async (e: unknown) => assert.fail(`${String(e)}: ${JSON.stringify(await nodes(c.kube))}`));
        const atHalt = await nodes(c.kube);
        await sleep(15_000); // past minReadySeconds: a controller that went on would have moved another host by now
        const { worst, samples } = await watch.stop();
        assert.ok(worst <= 1, `never more than maxUnavailable (1) unavailable: ${samples.join(" ")}`);
        const ds = await c.kube.get<DaemonSetStatus>(DAEMONSET);
        assert.equal(ds.status.numberUnavailable, 1, `the halted host's pod stays unready: ${describeDaemonSet(ds)}`);
        const n = await nodes(c.kube);
        assert.deepEqual(n, atHalt, "no host moved after the halt");
        assert.deepEqual(
          n.find((x) => x.name === QUIRKY),
          { name: QUIRKY, ready: "True", winfleetReady: "False", version: "6", state: "failed" },
        );
        for (const x of n.filter((y) => y.name !== QUIRKY))
          assert.ok(
            ["5", "6"].includes(x.version) && x.winfleetReady === "True",
            `the other hosts stay converged on 5, or on 6 where the rollout reached them first: ${JSON.stringify(x)}`,
          );
        await c.reportsMatch();
        const fixed = await c.up(7, 2);
        assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
        await c.settledOn(7);
      },
    );

    c.fault(
      "a disk that fills during an apply: the rollout halts at that host, with an Event naming the step, and nothing half-written",
      async () => {
        const root = hostPaths(c.state, SMALL_DISK).root;
        assert.ok(c.mounted, "the host's disk is a file system of its own");
        // Leave 1 MiB: the journal and the queue fit; version 8's 3 MiB file does not.
        const filler = join(root, "filler.bin");
        writeFileSync(filler, Buffer.alloc(Math.max(0, freeBytes(root) - MiB)));
        const halted = await c.up(8, 1);
        assert.equal(halted.code, 1, halted.stdout + halted.stderr);
        assert.match(halted.stdout, new RegExp(`rollout halted at ${SMALL_DISK}: .*(ENOSPC|no space left)`, "i"));
        // The rollout halts on the agent's word through its broker; its Event follows through the report queue.
        let messages: string[] = [];
        const failure = await c.kube
          .waitFor(
            async () => {
              const events = await c.kube.get<{ items: { reason: string; message: string; type: string }[] }>(
                `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${SMALL_DISK}`)}`,
              );
              messages = events.items.map((e) => e.message);
              return events.items.find((e) => e.reason === "ApplyFailed" && /ENOSPC|no space/i.test(e.message));
            },
            30_000,
            `an ApplyFailed Event on ${SMALL_DISK}`,
          )
          .catch(() => assert.fail(`an ApplyFailed Event on ${SMALL_DISK}: ${JSON.stringify(messages)}`));
        assert.match(failure.message, /^app failed in /, "the Event names the component and its step");
        assert.throws(() => statSync(join(root, "opt", "app", "blob.bin")), "no part of the file was left");
        assert.ok(freeBytes(root) >= MiB / 2, "what was staged for the apply was removed");
        await c.reportsMatch();
        rmSync(filler);
        const fixed = await c.up(9, 2);
        assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
        await c.settledOn(9);
        assert.equal(statSync(join(root, "opt", "app", "blob.bin")).size, 3 * MiB);
      },
      { skip: diskSkip },
    );

    downLeavesNothing(c);
  },
);
