/**
 * Faults in the middle of a rollout through the DaemonSet controller, on one local cluster of four real hosts
 * (`winfleet local up --cluster`), each a version bump with something broken while it runs: kube-apiserver and
 * etcd killed (the control plane starts them again), agents killed with `kill -9` at seeded random moments, a host
 * stopped with SIGSTOP past the node grace period, content that fails on one host, a host's disk filling during an
 * apply. Each ends with every host on the target, or the rollout halted at the host named, every report its agent
 * logged posted once on its Node and none left queued; and `winfleet local down` leaves nothing.
 *
 * The cluster comes up the way the README leads a new user: `winfleet local up` (no cluster), stopped, then
 * `winfleet local up --cluster` on the hosts kept from the first run, which must report to their Nodes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KubeClient } from "../../agent/cluster/kube-client";
import { NODE_MONITOR_GRACE_SECONDS } from "../../agent/cluster/control-plane";
import { hostPaths } from "../../agent/fleet/spec";
import { type Fleet, REPO, killFleet, processesMentioning, startFleet, winfleet } from "../fleet/support";
import { Rng, enginesOrSkip, portOpen, runCommand, sleep, tempDir, writeContent } from "../support";
import {
  DAEMONSET,
  type DaemonSetStatus,
  agentPid,
  describeDaemonSet,
  freeBytes,
  generation,
  logOffsets,
  loggedReports,
  midRollout,
  nodes,
  pidsOf,
  postedReports,
  queued,
  rolledOut,
  watchUnavailable,
} from "./rollout-watch";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");
const HOSTS = ["local-1", "local-2", "local-3", "local-4"];
/** The host whose content trips on what it has installed, and the host with a small disk of its own. */
const QUIRKY = "local-2";
const SMALL_DISK = "local-3";
const MiB = 1024 * 1024;
/** A small disk needs a mount: root may make one, and CI runs as root. */
const canMount = process.getuid?.() === 0;
const diskSkip = canMount || process.env.CI === "true" ? false : "needs root to mount a small tmpfs as one host's disk";

/** Version n of the one component: quick commands, one that trips on a quirk of one host, one with a 3 MiB file. */
function contentDir(dir: string): string {
  const ok = { install: { commands: ["sleep 0.2"] }, pre_upgrade: { commands: ["sleep 0.2"] } };
  const versions = Array.from({ length: 10 }, (_, i) => i + 1);
  const trips = 6;
  const large = 8;
  return writeContent(
    versions.map((v) => ({
      name: "app",
      version: String(v),
      metadata:
        v === trips
          ? {
              install: { commands: ["true"] },
              pre_upgrade: {
                commands: [
                  `if [ -e "$WINFLEET_ROOT/legacy-driver" ]; then echo 'app ${v} cannot replace the legacy driver' >&2; exit 9; fi`,
                ],
              },
            }
          : ok,
      ...(v >= large ? { files: { "/opt/app/blob.bin": "x".repeat(3 * MiB) } } : {}),
    })),
    versions.map((v) => ({ name: "svc", version: String(v), packages: [`app_${v}`] })),
    join(dir, "content"),
  );
}

describe(
  "faults in the middle of a rollout on a local cluster",
  { skip: typeof engines === "string" ? engines : false, timeout: 1_200_000 },
  () => {
    let dir: string;
    let state: string;
    let content: string;
    let fleet: Fleet | undefined;
    let kube: KubeClient;
    let offsets: Record<string, number>;
    let mounted = false;
    const stack = () => join(dir, "Pulumi.faults.yaml");
    const writeStack = (version: number, maxUnavailable: number) =>
      writeFileSync(
        stack(),
        `config:\n  winfleet:fleet:\n    content: { dir: ${content}, template: svc, templateVersion: "${version}" }\n    pools:\n      - { name: local, kind: local, hosts: ${HOSTS.length}, maxUnavailable: ${maxUnavailable} }\n`,
      );
    const up = (version: number, maxUnavailable: number) => {
      writeStack(version, maxUnavailable);
      return runCommand(
        process.execPath,
        [join(REPO, "bin", "winfleet.js"), "local", "up", "--cluster", "--stack", stack(), "--state-dir", state],
        { cwd: REPO, timeoutMs: 420_000 },
      );
    };
    /** Every host on `version`, converged, and every report its agent logged on its Node once, none left queued. */
    const settledOn = async (version: number, except: readonly string[] = []) => {
      const want = HOSTS.filter((h) => !except.includes(h));
      await kube
        .waitFor(
          async () => {
            const n = await nodes(kube);
            return want.every((h) => {
              const x = n.find((y) => y.name === h);
              return x?.version === String(version) && x.winfleetReady === "True";
            });
          },
          60_000,
          `hosts ${want.join(", ")} to report svc ${version} converged`,
        )
        .catch(async (e: unknown) => assert.fail(`${String(e)}: ${JSON.stringify(await nodes(kube))}`));
      // The next fault starts from a DaemonSet at rest: every pod of this template available.
      if (except.length === 0) await rolledOut(kube, HOSTS.length);
      await reportsMatch();
    };
    const reportsMatch = async () => {
      for (const host of HOSTS) {
        let posted: Record<string, number> = {};
        let logged: Record<string, number> = {};
        await kube
          .waitFor(
            async () => {
              logged = loggedReports(state, host, offsets[host] ?? 0);
              posted = await postedReports(kube, host);
              return (
                queued(state, host).length === 0 &&
                JSON.stringify(sortKeys(posted)) === JSON.stringify(sortKeys(logged))
              );
            },
            60_000,
            `${host}'s reports to be posted`,
          )
          .catch(() =>
            assert.deepEqual(
              { posted: sortKeys(posted), queued: queued(state, host) },
              { posted: sortKeys(logged), queued: [] },
              `${host}: every report its agent logged is posted once`,
            ),
          );
      }
    };

    before(() => {
      if (typeof engines === "string") return;
      dir = tempDir("winfleet-faults-");
      state = join(dir, "state");
      content = contentDir(dir);
      if (canMount) {
        // One host's disk is a 16 MiB file system of its own, as a small system drive is.
        const disk = hostPaths(state, SMALL_DISK).root;
        mkdirSync(disk, { recursive: true });
        const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", disk], { encoding: "utf8" });
        assert.equal(m.status, 0, `mount a tmpfs at ${disk}: ${m.stderr}`);
        mounted = true;
      }
      mkdirSync(hostPaths(state, QUIRKY).root, { recursive: true });
      writeFileSync(join(hostPaths(state, QUIRKY).root, "legacy-driver"), "installed by hand\n");
      writeStack(1, 2);
    });

    after(() => {
      killFleet(fleet);
      for (const pid of [...pidsOf(state)]) {
        try {
          process.kill(pid, "SIGCONT");
          process.kill(pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      if (mounted) spawnSync("umount", ["-l", hostPaths(state, SMALL_DISK).root]);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** A fault test: when it fails, the fleet's last lines (the control plane's and the nodes' own) say why. */
    const fault = (name: string, fn: () => Promise<void>, options: { skip?: string | false } = {}): void => {
      it(name, options, async () => {
        try {
          await fn();
        } catch (e) {
          const tail = (fleet?.output() ?? "").split("\n").slice(-60).join("\n");
          if (e instanceof Error) e.message += `\n--- the fleet's last lines ---\n${tail}`;
          throw e;
        }
      });
    };

    fault(
      "the README's order: hosts kept from `winfleet local up` join `--cluster` and every Node reports",
      async () => {
        const plain = startFleet(["--stack", stack(), "--state-dir", state, "--port", "0"]);
        try {
          await plain.waitFor(/rollout done: local-1, local-2, local-3, local-4/, 120_000);
        } finally {
          assert.equal(winfleet(["local", "down", "--state-dir", state]).code, 0);
          await plain.exit;
        }
        offsets = logOffsets(state, HOSTS);
        fleet = startFleet(["--cluster", "--stack", stack(), "--state-dir", state, "--port", "0"]);
        await fleet.waitFor(/rollout done: every host already there/, 240_000);
        kube = KubeClient.fromKubeconfigFile(join(state, "kubeconfig"));
        await settledOn(1);
        for (const n of await nodes(kube)) assert.equal(n.state, "converged", n.name);
      },
    );

    fault(
      "kube-apiserver killed with SIGKILL mid-rollout: the control plane starts it again and the rollout finishes",
      async () => {
        const before = await generation(kube);
        const rolling = up(2, 2);
        await midRollout(kube, before, HOSTS.length);
        const [pid] = pidsOf(state, "kube-apiserver");
        assert.ok(pid, "the API server runs");
        process.kill(pid, "SIGKILL");
        const r = await rolling;
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.notEqual(pidsOf(state, "kube-apiserver")[0], pid, "a new API server runs");
        assert.match(fleet?.output() ?? "", /kube-apiserver exited \(SIGKILL\); starting it again/);
        await settledOn(2);
      },
    );

    fault("etcd killed with SIGKILL mid-rollout: started again on its data, the rollout finishes", async () => {
      const before = await generation(kube);
      const rolling = up(3, 2);
      await midRollout(kube, before, HOSTS.length);
      const [pid] = pidsOf(join(state, "cluster"), "--data-dir");
      assert.ok(pid, "etcd runs");
      process.kill(pid, "SIGKILL");
      const r = await rolling;
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(fleet?.output() ?? "", /etcd exited \(SIGKILL\); starting it again/);
      await settledOn(3);
    });

    fault(
      "agents killed with kill -9 at seeded random moments of the rollout: each comes back and converges once",
      async () => {
        const seed = Number(process.env.WINFLEET_FAULT_SEED ?? Date.now() % 100_000);
        process.stderr.write(`agent kill -9 seed: ${seed} (WINFLEET_FAULT_SEED=${seed} repeats it)\n`);
        const rng = new Rng(seed);
        const before = await generation(kube);
        const rolling = up(4, 2);
        let done = false;
        void rolling.finally(() => (done = true));
        await midRollout(kube, before, HOSTS.length);
        const killed: string[] = [];
        for (let i = 0; i < 4 && !done; i++) {
          await sleep(300 + rng.int(2500));
          const host = rng.pick(HOSTS);
          const pid = agentPid(state, host);
          if (pid === undefined || done) continue;
          process.kill(-pid, "SIGKILL");
          killed.push(`${host}@${i}`);
        }
        const r = await rolling;
        assert.equal(r.code, 0, `killed ${killed.join(", ")}: ${r.stdout}${r.stderr}`);
        assert.ok(killed.length > 0, "at least one agent was killed mid-rollout");
        await settledOn(4);
      },
    );

    fault(
      `a host stopped with SIGSTOP past the ${NODE_MONITOR_GRACE_SECONDS} s grace period: its Node goes NotReady, the rollout waits, and it finishes once the host is resumed`,
      async () => {
        const frozen = "local-4";
        const pid = agentPid(state, frozen);
        assert.ok(pid);
        process.kill(-pid, "SIGSTOP");
        let finished = false;
        try {
          const rolling = up(5, 2);
          void rolling.finally(() => (finished = true));
          await kube.waitFor(
            async () => (await nodes(kube)).find((n) => n.name === frozen)?.ready === "Unknown",
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
        await kube.waitFor(
          async () => (await nodes(kube)).find((n) => n.name === frozen)?.ready === "True",
          60_000,
          `${frozen}'s Node to be Ready again`,
        );
        await settledOn(5);
      },
    );

    fault(
      "content that fails on one host halts the rollout within maxUnavailable; fixed content finishes it",
      async () => {
        const watch = await watchUnavailable(kube);
        const halted = await up(6, 1);
        assert.equal(halted.code, 1, halted.stdout + halted.stderr);
        assert.match(
          halted.stdout,
          new RegExp(`rollout halted at ${QUIRKY}: app pre_upgrade: .*exit 9: app 6 cannot replace the legacy driver`),
        );
        // The rollout halts on the agent's word through its broker; its Node's report follows through the queue.
        await kube
          .waitFor(
            async () => (await nodes(kube)).find((x) => x.name === QUIRKY)?.state === "failed",
            30_000,
            `${QUIRKY}'s Node to report the failed apply`,
          )
          .catch(async (e: unknown) => assert.fail(`${String(e)}: ${JSON.stringify(await nodes(kube))}`));
        const atHalt = await nodes(kube);
        await sleep(15_000); // past minReadySeconds: a controller that went on would have moved another host by now
        const { worst, samples } = await watch.stop();
        assert.ok(worst <= 1, `never more than maxUnavailable (1) unavailable: ${samples.join(" ")}`);
        const ds = await kube.get<DaemonSetStatus>(DAEMONSET);
        assert.equal(ds.status.numberUnavailable, 1, `the halted host's pod stays unready: ${describeDaemonSet(ds)}`);
        const n = await nodes(kube);
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
        await reportsMatch();
        const fixed = await up(7, 2);
        assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
        await settledOn(7);
      },
    );

    fault(
      "a disk that fills during an apply: the rollout halts at that host, with an Event naming the step, and nothing half-written",
      async () => {
        const root = hostPaths(state, SMALL_DISK).root;
        assert.ok(mounted, "the host's disk is a file system of its own");
        // Leave 1 MiB: the journal and the queue fit; version 8's 3 MiB file does not.
        const filler = join(root, "filler.bin");
        writeFileSync(filler, Buffer.alloc(Math.max(0, freeBytes(root) - MiB)));
        const halted = await up(8, 1);
        assert.equal(halted.code, 1, halted.stdout + halted.stderr);
        assert.match(halted.stdout, new RegExp(`rollout halted at ${SMALL_DISK}: .*(ENOSPC|no space left)`, "i"));
        // The rollout halts on the agent's word through its broker; its Event follows through the report queue.
        let messages: string[] = [];
        const failure = await kube
          .waitFor(
            async () => {
              const events = await kube.get<{ items: { reason: string; message: string; type: string }[] }>(
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
        await reportsMatch();
        rmSync(filler);
        const fixed = await up(9, 2);
        assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
        await settledOn(9);
        assert.equal(statSync(join(root, "opt", "app", "blob.bin")).size, 3 * MiB);
      },
      { skip: diskSkip },
    );

    fault("winfleet local down leaves no process, port or mount in use", async () => {
      const port = Number(new URL(kube.server).port);
      const down = winfleet(["local", "down", "--state-dir", state]);
      assert.equal(down.code, 0, down.stderr);
      assert.equal(await fleet?.exit, 0);
      assert.equal(await portOpen(port), false);
      assert.deepEqual(processesMentioning(state), []);
    });
  },
);

function sortKeys(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}
