/**
 * The local cluster the fault tests break: four real hosts (`winfleet local up --cluster`), content whose versions
 * are quick except one that trips on a file one host has (version 6) and those with a 3 MiB file (8 and up), and one
 * host whose disk is a 16 MiB tmpfs of its own when asked. Each fault bumps the version with `up` and ends with
 * `settledOn`: every host on the target, converged, and every report its agent logged posted once on its Node, none
 * left queued. Registers its own `before` and `after` hooks: call it inside the `describe`.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, it } from "node:test";
import type { KubeClient } from "../../agent/cluster/kube-client";
import { hostPaths } from "../../agent/fleet/spec";
import { type Fleet, REPO, killFleet, processesMentioning, winfleet } from "../fleet/support";
import { portOpen, runCommand, tempDir, writeContent } from "../support";
import { loggedReports, nodes, pidsOf, postedReports, queued, rolledOut } from "./rollout-watch";

export const HOSTS = ["local-1", "local-2", "local-3", "local-4"];
/** The host whose content trips on what it has installed, and the host with a small disk of its own. */
export const QUIRKY = "local-2";
export const SMALL_DISK = "local-3";
export const MiB = 1024 * 1024;
/** A small disk needs a mount: root may make one, and CI runs as root. */
const canMount = process.getuid?.() === 0;
/** Why the disk test cannot run here, or false. */
export const diskSkip: string | false =
  canMount || process.env.CI === "true" ? false : "needs root to mount a small tmpfs as one host's disk";

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

/** What a fault test reads and drives; `fleet`, `kube` and `offsets` are set once the cluster is up. */
export interface FaultCluster {
  dir: string;
  state: string;
  fleet: Fleet | undefined;
  kube: KubeClient;
  /** Where each host's agent log stood when the cluster came up: reports are counted from there. */
  offsets: Record<string, number>;
  /** Whether SMALL_DISK's root is a tmpfs of its own. */
  mounted: boolean;
  stack(): string;
  writeStack(version: number, maxUnavailable: number): void;
  /** `winfleet local up --cluster` with the stack at `version`, paced by `maxUnavailable`. */
  up(version: number, maxUnavailable: number): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Every host but `except` on `version`, converged, and every report logged posted once, none queued. */
  settledOn(version: number, except?: readonly string[]): Promise<void>;
  reportsMatch(): Promise<void>;
  /** A test that, when it fails, adds the fleet's last lines (the control plane's and the nodes' own). */
  fault(name: string, fn: () => Promise<void>, options?: { skip?: string | false }): void;
}

/** Sets up the cluster's directory (and the small disk when `smallDisk`) before the tests and removes all after. */
export function faultCluster(prefix: string, options: { smallDisk: boolean }): FaultCluster {
  const c: FaultCluster = {
    dir: "",
    state: "",
    fleet: undefined,
    kube: undefined as unknown as KubeClient, // set by the first test, which brings the cluster up
    offsets: {},
    mounted: false,
    stack: () => join(c.dir, "Pulumi.faults.yaml"),
    writeStack: (version, maxUnavailable) =>
      writeFileSync(
        c.stack(),
        `config:\n  winfleet:fleet:\n    content: { dir: ${content}, template: svc, templateVersion: "${version}" }\n    pools:\n      - { name: local, kind: local, hosts: ${HOSTS.length}, maxUnavailable: ${maxUnavailable} }\n`,
      ),
    up: (version, maxUnavailable) => {
      c.writeStack(version, maxUnavailable);
      return runCommand(
        process.execPath,
        [join(REPO, "bin", "winfleet.js"), "local", "up", "--cluster", "--stack", c.stack(), "--state-dir", c.state],
        { cwd: REPO, timeoutMs: 420_000 },
      );
    },
    settledOn: async (version, except = []) => {
      const want = HOSTS.filter((h) => !except.includes(h));
      await c.kube
        .waitFor(
          async () => {
            const n = await nodes(c.kube);
            return want.every((h) => {
              const x = n.find((y) => y.name === h);
              return x?.version === String(version) && x.winfleetReady === "True";
            });
          },
          60_000,
          `hosts ${want.join(", ")} to report svc ${version} converged`,
        )
        .catch(async (e: unknown) => assert.fail(`${String(e)}: ${JSON.stringify(await nodes(c.kube))}`));
      // The next fault starts from a DaemonSet at rest: every pod of this template available.
      if (except.length === 0) await rolledOut(c.kube, HOSTS.length);
      await c.reportsMatch();
    },
    reportsMatch: async () => {
      for (const host of HOSTS) {
        let posted: Record<string, number> = {};
        let logged: Record<string, number> = {};
        await c.kube
          .waitFor(
            async () => {
              logged = loggedReports(c.state, host, c.offsets[host] ?? 0);
              posted = await postedReports(c.kube, host);
              return (
                queued(c.state, host).length === 0 &&
                JSON.stringify(sortKeys(posted)) === JSON.stringify(sortKeys(logged))
              );
            },
            60_000,
            `${host}'s reports to be posted`,
          )
          .catch(() =>
            assert.deepEqual(
              { posted: sortKeys(posted), queued: queued(c.state, host) },
              { posted: sortKeys(logged), queued: [] },
              `${host}: every report its agent logged is posted once`,
            ),
          );
      }
    },
    fault: (name, fn, opts = {}) => {
      it(name, opts, async () => {
        try {
          await fn();
        } catch (e) {
          const tail = (c.fleet?.output() ?? "").split("\n").slice(-60).join("\n");
          if (e instanceof Error) e.message += `\n--- the fleet's last lines ---\n${tail}`;
          throw e;
        }
      });
    },
  };
  let content = "";

  before(() => {
    c.dir = tempDir(prefix);
    c.state = join(c.dir, "state");
    content = contentDir(c.dir);
    if (options.smallDisk && canMount) {
      // One host's disk is a 16 MiB file system of its own, as a small system drive is.
      const disk = hostPaths(c.state, SMALL_DISK).root;
      mkdirSync(disk, { recursive: true });
      const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", disk], { encoding: "utf8" });
      assert.equal(m.status, 0, `mount a tmpfs at ${disk}: ${m.stderr}`);
      c.mounted = true;
    }
    mkdirSync(hostPaths(c.state, QUIRKY).root, { recursive: true });
    writeFileSync(join(hostPaths(c.state, QUIRKY).root, "legacy-driver"), "installed by hand\n");
    c.writeStack(1, 2);
  });

  after(() => {
    killFleet(c.fleet);
    if (!c.state) return;
    for (const pid of [...pidsOf(c.state)]) {
      try {
        process.kill(pid, "SIGCONT");
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    if (c.mounted) spawnSync("umount", ["-l", hostPaths(c.state, SMALL_DISK).root]);
    if (c.dir) rmSync(c.dir, { recursive: true, force: true });
  });

  return c;
}

/** The last test of a fault file: `winfleet local down` leaves no process, port or mount in use. */
export function downLeavesNothing(c: FaultCluster): void {
  c.fault("winfleet local down leaves no process, port or mount in use", async () => {
    const port = Number(new URL(c.kube.server).port);
    const down = winfleet(["local", "down", "--state-dir", c.state]);
    assert.equal(down.code, 0, down.stderr);
    assert.equal(await c.fleet?.exit, 0);
    assert.equal(await portOpen(port), false);
    assert.deepEqual(processesMentioning(c.state), []);
  });
}

function sortKeys(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}
