/**
 * `pulumi up` of a BYO pool of 10 and of 50 sandbox hosts over SSH, through the real engine (the
 * CLI, Pulumi's language host, the `command` and `kubernetes` plugins set-up built) against a
 * throwaway control plane: adopting every host (content and bootstrap copied, the bootstrap run,
 * `--parallel 16` as docs/deploying.md recommends, the pool's `maxUnavailable` at 100% for the
 * first adoption), a second `up` with nothing changed, and a bootstrap change re-run on every host
 * at the pool's `maxUnavailable` of 25%. Each `up` is timed until the CLI returns; the nodes'
 * convergence after it is the agent's, timed separately (until every Node reports WinfleetReady).
 * Run as root (the hosts are users, sshds and network namespaces of their own).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { startByoLab } from "../../agent/fleet/byo";

const SIZES = [10, 50] as const;

type Fleet = { pools: { maxUnavailable?: number | string; variables?: Record<string, string> }[] };
type Node = { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } };

void (async () => {
  const rows: string[] = [];
  for (const hosts of SIZES) {
    const dir = mkdtempSync(join(tmpdir(), "bench-byo-"));
    const lab = await startByoLab({ dir, hosts });
    try {
      const edit = async (change: (f: Fleet) => void) => {
        const f = (await lab.fleet()) as unknown as Fleet;
        change(f);
        await lab.writeFleet(f);
      };
      const up = async (what: string) => {
        const t = performance.now();
        const r = await lab.pulumi(["up", "--yes", "--skip-preview", "--parallel", "16"], { timeoutMs: 3_600_000 });
        if (r.code !== 0) throw new Error(`${what} of ${hosts} hosts exited ${r.code}: ${r.stderr.slice(-2000)}`);
        return (performance.now() - t) / 1000;
      };
      await edit((f) => void (f.pools[0] && (f.pools[0].maxUnavailable = "100%")));
      const adopt = await up("adopting");
      const t = performance.now();
      await lab.admin.waitFor(
        async () => {
          const nodes = (await lab.admin.get<{ items: Node[] }>("/api/v1/nodes")).items;
          const ready = nodes.filter((n) =>
            n.status?.conditions?.some((c) => c.type === "WinfleetReady" && c.status === "True"),
          );
          return ready.length === hosts || undefined;
        },
        3_600_000,
        "every node to report WinfleetReady",
      );
      const converge = (performance.now() - t) / 1000;
      const again = await up("a second up");
      await edit((f) => {
        if (!f.pools[0]) return;
        f.pools[0].maxUnavailable = "25%";
        f.pools[0].variables = { SANDBOX_SITE: "bench" };
      });
      const rerun = await up("a bootstrap change");
      rows.push(
        `${String(hosts).padStart(3)} hosts: adopt ${adopt.toFixed(1)} s (${(adopt / hosts).toFixed(2)} s/host), ` +
          `then converged in ${converge.toFixed(1)} s; second up ${again.toFixed(1)} s; ` +
          `bootstrap change at 25% ${rerun.toFixed(1)} s (${(rerun / hosts).toFixed(2)} s/host)`,
      );
      process.stdout.write(`${rows.at(-1) ?? ""}\n`);
      await lab.pulumi(["destroy", "--yes", "--skip-preview", "--parallel", "16"], { timeoutMs: 3_600_000 });
    } finally {
      await lab.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  process.stdout.write(
    `\npulumi up of a BYO pool over SSH (${new Date().toISOString().slice(0, 10)}):\n${rows.join("\n")}\n`,
  );
})().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
