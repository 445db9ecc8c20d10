/**
 * Bring-your-own hosts end to end, through the real engine: the Pulumi CLI with Pulumi's own
 * Node.js language host and the `command` and `kubernetes` plugins set-up built, the program
 * (not a double) with a POSIX BYO pool of sandbox hosts reached only over SSH (each its own
 * address, sshd, user and host key: agent/ssh), and a throwaway control plane. One control plane
 * and one set of hosts serve every step, in order: adoption; a second up that touches no host;
 * a templateVersion and an agent bump that roll through the upgrader DaemonSet and touch no host;
 * a bootstrap change that re-runs the bootstrap alone, a pool's batch at a time, failing on the
 * host that is down (naming it and its address) while the others converge; a host removed from
 * the stack and uninstalled; a host presenting another key, refused before anything is sent;
 * destroy. What touches a host is read from its sshd's log: every session it accepted.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { stringify as toYaml } from "yaml";
import { runNodeApprover } from "../../agent/cluster/node-approver";
import { type ByoLab, startByoLab } from "../../agent/fleet/byo";
import { defaultNamespace } from "../../components/stack-names";
import type { SshHost } from "../../agent/ssh";
import { enginesOrSkip, skipUnlessInstalled, SOCAT, SSHD, tempDir, waitFor } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes", "pulumi-resource-command");
const tools = skipUnlessInstalled(SSHD, SOCAT);
const skip = typeof engines === "string" ? engines : tools;

type Fleet = {
  content: { templateVersion: string };
  agent: { version: string };
  pools: { hosts: Record<string, unknown>[]; variables?: Record<string, string>; maxUnavailable?: number }[];
};
type Node = {
  metadata: { name: string; annotations?: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
};

/** How many processes the host's user runs (its services, their pods). */
function processes(h: SshHost): number {
  const uid = Number(execFileSync("id", ["-u", h.user], { encoding: "utf8" }).trim());
  return readdirSync("/proc").filter((p) => {
    try {
      return /^\d+$/.test(p) && Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1]) === uid;
    } catch {
      return false;
    }
  }).length;
}

/** The command lines of the processes the host's user runs, for a failure's message. */
function commandsOf(h: SshHost): string[] {
  const uid = Number(execFileSync("id", ["-u", h.user], { encoding: "utf8" }).trim());
  return readdirSync("/proc").flatMap((p) => {
    try {
      if (!/^\d+$/.test(p)) return [];
      if (Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1]) !== uid) return [];
      return [readFileSync(`/proc/${p}/cmdline`, "utf8").replace(/\0/g, " ").trim()];
    } catch {
      return [];
    }
  });
}

/** Sessions a host's sshd accepted (a remote command or a copy each). */
const sessions = (h: SshHost): number =>
  (readFileSync(h.sshdLog, "utf8").match(new RegExp(`Accepted publickey for ${h.user} `, "g")) ?? []).length;

describe("bring-your-own hosts over SSH, through the real engine", { skip, timeout: 1_800_000 }, () => {
  let lab: ByoLab;
  const timings: Record<string, number> = {};
  const up = async (what: string, args: string[] = []) => {
    const started = Date.now();
    const r = await lab.pulumi(["up", "--yes", "--skip-preview", "--parallel", "16", ...args]);
    timings[what] = Date.now() - started;
    return r;
  };
  const ok = (r: { code: number; stdout: string; stderr: string }, what: string) =>
    assert.equal(r.code, 0, `${what} exited ${r.code}:\n${r.stdout.slice(-5000)}\n${r.stderr.slice(-3000)}`);
  const editFleet = async (edit: (f: Fleet) => void) => {
    const f = (await lab.fleet()) as unknown as Fleet;
    edit(f);
    await lab.writeFleet(f);
  };
  const nodes = async () => (await lab.admin.get<{ items: Node[] }>("/api/v1/nodes")).items;
  const condition = (n: Node, type: string) => n.status?.conditions?.find((c) => c.type === type)?.status;
  /** Every host's Node Ready and WinfleetReady with `version` applied, as its agent reports. */
  const converged = (names: readonly string[], version: string) =>
    waitFor(
      async () => {
        const all = await nodes();
        return names.every((name) => {
          const n = all.find((x) => x.metadata.name === name);
          return (
            n !== undefined &&
            condition(n, "Ready") === "True" &&
            condition(n, "WinfleetReady") === "True" &&
            n.metadata.annotations?.["winfleet.io/template-version"] === version
          );
        });
      },
      300_000,
      `${names.join(", ")} Ready and WinfleetReady at sandbox ${version}`,
      1_000,
    );
  /** A preview's steps other than `same`, as "op type name" (the type without its parents'). */
  const steps = (json: string): string[] =>
    ((JSON.parse(json) as { steps?: { op: string; urn: string }[] }).steps ?? [])
      .filter((s) => s.op !== "same")
      .map((s) => {
        const [, , types = "", name = ""] = s.urn.split("::");
        return `${s.op} ${types.split("$").pop() ?? ""} ${name}`;
      })
      .sort();

  let dir = "";
  before(async () => {
    if (skip) return;
    dir = tempDir("winfleet-byo-");
    lab = await startByoLab({ dir, hosts: 3, stack: "byo" });
  });
  after(async () => {
    if (lab) await lab.stop();
    if (dir && !process.env.WT36_KEEP) rmSync(dir, { recursive: true, force: true });
    if (Object.keys(timings).length > 0) process.stderr.write(`byo-ssh timings (ms): ${JSON.stringify(timings)}\n`);
  });
  const names = () => lab.hosts.hosts.map((h) => h.name);

  it("pulumi up adopts every host: content and bootstrap copied, the agent a service, each node joined by TLS bootstrap", async () => {
    await editFleet((f) => void (f.pools[0] && (f.pools[0].maxUnavailable = 2)));
    ok(await up("adopt 3 hosts"), "pulumi up");
    await converged(names(), "1.0.0");
    const tokens = new Set<string>();
    for (const h of lab.hosts.hosts) {
      const root = join(h.home, "winfleet");
      const config = (): { templateVersion: string; secrets: Record<string, string> } =>
        JSON.parse(readFileSync(join(root, "agent.json"), "utf8")) as {
          templateVersion: string;
          secrets: Record<string, string>;
        };
      assert.equal(config().templateVersion, "1.0.0");
      // The stack derived a token for this host alone (its Secret names the node); it came on stdin and joined the
      // node, and once the node has its own certificate the agent drops it.
      const own = await lab.admin.get<{ items: { metadata: { name: string } }[] }>(
        `/api/v1/namespaces/kube-system/secrets?labelSelector=${encodeURIComponent(`winfleet.io/node=${h.name}`)}`,
      );
      assert.equal(own.items.length, 1, `${h.name}'s own token`);
      tokens.add(own.items[0]?.metadata.name ?? "");
      await waitFor(() => config().secrets.KUBE_BOOTSTRAP_TOKEN === undefined, 20_000, `${h.name}'s join token`);
      assert.ok(processes(h) >= 4, `${h.name}: the agent and the node, each under its supervisor`);
      for (const service of ["agent", "node"]) {
        const pid = Number(readFileSync(join(root, `${service}.pid`), "utf8"));
        assert.ok(pid > 0 && existsSync(`/proc/${pid}`), `${h.name}'s ${service} service runs`);
      }
      assert.ok(existsSync(join(root, "node", "kubelet.conf")), "the node's own credential, from TLS bootstrap");
    }
    assert.equal(tokens.size, lab.hosts.hosts.length, "a token per host");
  });

  it("a second up with nothing changed touches no host", async () => {
    const before = lab.hosts.hosts.map(sessions);
    ok(await lab.pulumi(["preview", "--expect-no-changes"]), "preview --expect-no-changes");
    ok(await up("second up, no change"), "pulumi up");
    assert.deepEqual(lab.hosts.hosts.map(sessions), before, "no SSH session on any host");
  });

  it("a templateVersion bump rolls through the upgrader DaemonSet and touches no host", async () => {
    const before = lab.hosts.hosts.map(sessions);
    await editFleet((f) => void (f.content.templateVersion = "1.1.0"));
    const preview = await lab.pulumi(["preview", "--json"]);
    ok(preview, "preview");
    for (const s of steps(preview.stdout))
      assert.match(s, /^update kubernetes:(apps\/v1:DaemonSet|core\/v1:ConfigMap) /, steps(preview.stdout).join("; "));
    ok(await up("templateVersion bump"), "pulumi up");
    await converged(names(), "1.1.0");
    assert.deepEqual(lab.hosts.hosts.map(sessions), before, "no SSH session on any host");
  });

  it("an agent bump changes the DaemonSet's pod template alone and touches no host", async () => {
    const before = lab.hosts.hosts.map(sessions);
    await editFleet((f) => void (f.agent.version = "0.1.1"));
    const preview = await lab.pulumi(["preview", "--json"]);
    ok(preview, "preview");
    const changed = steps(preview.stdout);
    assert.ok(
      changed.some((s) => s.startsWith("update kubernetes:apps/v1:DaemonSet")),
      changed.join("; "),
    );
    for (const s of changed) assert.match(s, /^update kubernetes:(apps\/v1:DaemonSet|core\/v1:ConfigMap) /);
    ok(await up("agent bump"), "pulumi up");
    await waitFor(
      async () => {
        const ds = await lab.admin.get<{ items: { status?: Record<string, number> }[] }>(
          "/apis/apps/v1/namespaces/winfleet-byo/daemonsets",
        );
        const s = ds.items[0]?.status ?? {};
        return s.updatedNumberScheduled === 3 && s.numberReady === 3 && (s.numberUnavailable ?? 0) === 0;
      },
      300_000,
      "the rollout to finish on every host",
      1_000,
    );
    assert.deepEqual(lab.hosts.hosts.map(sessions), before, "no SSH session on any host");
  });

  it("a bootstrap change re-runs only the bootstrap, on every host but the one that is down, which fails naming it", async () => {
    const [h1, h2, h3] = lab.hosts.hosts as [SshHost, SshHost, SshHost];
    await editFleet((f) => void (f.pools[0] && (f.pools[0].variables = { SANDBOX_SITE: "lab" })));
    const preview = await lab.pulumi(["preview", "--json"]);
    ok(preview, "preview");
    const changed = steps(preview.stdout);
    assert.equal(changed.filter((s) => /^create .*-bootstrap-[0-9a-f]{12}$/.test(s)).length, 3, changed.join("; "));
    for (const s of changed)
      assert.match(s, /^(create|delete) command:remote:(Command|CopyToRemote) lab-byo-\d-bootstrap-/, s);
    await h3.down();
    const before = [h1, h2].map(sessions);
    const failed = await up("bootstrap change, one host down");
    assert.notEqual(failed.code, 0, "the up fails");
    const text = failed.stdout + failed.stderr;
    assert.match(text, new RegExp(`lab-${h3.name}-bootstrap-[0-9a-f]{12}-file`), "naming the host's resource");
    assert.match(text, new RegExp(`${h3.address.replace(/\./g, "\\.")}:${h3.port}`), "and its address");
    assert.doesNotMatch(text, new RegExp(`lab-${h1.name}-bootstrap[^\\n]*error`));
    for (const [i, h] of [h1, h2].entries()) {
      assert.ok(sessions(h) > (before[i] ?? 0), `${h.name} ran the new bootstrap`);
      const config = JSON.parse(readFileSync(join(h.home, "winfleet", "agent.json"), "utf8")) as {
        templateVersion: string;
        variables: Record<string, string>;
      };
      assert.equal(config.variables.SANDBOX_SITE, "lab");
      assert.equal(config.templateVersion, "1.1.0", "the bootstrap kept the version the upgrader moved it to");
    }
    await converged([h1.name, h2.name], "1.1.0");
    await h3.up();
    const settled = [h1, h2].map(sessions);
    ok(await up("bootstrap change, the host back"), "pulumi up once the host is back");
    assert.deepEqual([h1, h2].map(sessions), settled, "the hosts done already are not touched again");
    await converged(names(), "1.1.0");
  });

  it("the bootstrap runs a batch of the pool's maxUnavailable hosts at a time", async () => {
    await editFleet((f) => void (f.pools[0] && (f.pools[0].variables = { SANDBOX_SITE: "lab-2" })));
    ok(await up("bootstrap change, all hosts"), "pulumi up");
    // From each host's sshd log: when its last command session (the bootstrap run) began and ended.
    const run = (h: SshHost) => {
      const lines = readFileSync(h.sshdLog, "utf8").split("\n");
      const start = lines.findLast((l) => l.includes(`Starting session: command for ${h.user} `)) ?? "";
      const port = / port (\d+) id /.exec(start)?.[1] ?? "?";
      const end =
        lines.find((l) => l.includes(`Close session: user ${h.user} `) && l.includes(` port ${port} id `)) ?? "";
      return { start: Date.parse(start.split(" ")[0] ?? ""), end: Date.parse(end.split(" ")[0] ?? "") };
    };
    const [r1, r2, r3] = lab.hosts.hosts.map(run) as [ReturnType<typeof run>, ...ReturnType<typeof run>[]];
    for (const r of [r1, r2, r3]) assert.ok(r && r.start > 0 && r.end >= r.start, JSON.stringify(r));
    assert.ok(
      (r3?.start ?? 0) >= r1.end,
      `the third host's run began after the first's ended: ${JSON.stringify([r1, r3])}`,
    );
    await converged(names(), "1.1.0");
  });

  it("removing a host from the stack uninstalls winfleet there and deletes its Node; the others are untouched", async () => {
    const [h1, h2, h3] = lab.hosts.hosts as [SshHost, SshHost, SshHost];
    await editFleet((f) => void (f.pools[0] && (f.pools[0].hosts = f.pools[0].hosts.slice(0, 2))));
    const before = [h1, h2].map(sessions);
    ok(await up("remove a host"), "pulumi up");
    assert.deepEqual([h1, h2].map(sessions), before);
    assert.ok(!existsSync(join(h3.home, "winfleet")), "its install directory is gone");
    // Its services and their pods are stopped; the uninstall's own SSH session may take a moment to close.
    await waitFor(
      () => processes(h3) === 0,
      30_000,
      `${h3.name}'s processes to end (right after the up: ${commandsOf(h3).join("; ")})`,
      200,
    );
    assert.ok(!(await nodes()).some((n) => n.metadata.name === h3.name), "its Node is deleted");
  });

  it("a host that presents another key than the pinned one is refused before anything is sent", async () => {
    const h3 = lab.hosts.hosts[2] as SshHost;
    const pinned = h3.hostKey;
    await h3.up({ anotherHostKey: true });
    const accepted = sessions(h3);
    await editFleet((f) => {
      const first = f.pools[0];
      if (first)
        first.hosts = [
          ...first.hosts,
          {
            ...first.hosts[0],
            name: h3.name,
            address: h3.address,
            user: h3.user,
            privateKeySecret: "sshKey3",
            hostKey: pinned,
          },
        ];
    });
    const refused = await up("another host key");
    assert.notEqual(refused.code, 0);
    assert.match(refused.stdout + refused.stderr, /host key mismatch/);
    assert.equal(sessions(h3), accepted, "no session was authenticated");
    assert.ok(!existsSync(join(h3.home, "winfleet")), "nothing was copied, nothing ran");
    // The host back with its own key, and out of the stack again (its registration is uninstalled: nothing there).
    await h3.up();
    await editFleet((f) => void (f.pools[0] && (f.pools[0].hosts = f.pools[0].hosts.slice(0, 2))));
    ok(await up("remove the refused host"), "pulumi up");
  });

  it("pulumi destroy uninstalls winfleet from every host and deletes their Nodes", async () => {
    ok(await lab.pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
    for (const h of lab.hosts.hosts) assert.ok(!existsSync(join(h.home, "winfleet")), h.name);
    assert.deepEqual(
      (await nodes()).map((n) => n.metadata.name),
      [],
    );
  });

  it("a stack deployed with the deprecated CopyFile takes the program as it is now: its copy becomes a CopyToRemote, nothing replaced", async () => {
    const [h1] = lab.hosts.hosts as [SshHost];
    const dir = lab.project.dir;
    const projectFile = join(dir, "Pulumi.yaml");
    const project = readFileSync(projectFile, "utf8");
    // The earlier program (test/fixtures/byo-copyfile), on a stack of its own adopting the first host.
    mkdirSync(join(dir, "fixture"), { recursive: true });
    copyFileSync(join(__dirname, "..", "fixtures", "byo-copyfile", "index.ts"), join(dir, "fixture", "index.ts"));
    copyFileSync(join(dir, "infra", "tsconfig.json"), join(dir, "fixture", "tsconfig.json"));
    writeFileSync(projectFile, project.replace("main: infra/", "main: fixture/"));
    const fleet = (await lab.fleet()) as unknown as Fleet;
    if (fleet.pools[0]) fleet.pools[0].hosts = fleet.pools[0].hosts.slice(0, 1);
    const content = `winfleet/upload/content-${lab.agent.sha256.slice(0, 16)}.tgz`;
    writeFileSync(
      join(dir, "stacks", "Pulumi.migrate.yaml"),
      toYaml({
        config: {
          "winfleet:fleet": fleet,
          "winfleet:copyFileHost": {
            pool: "lab",
            name: h1.name,
            address: h1.address,
            port: h1.port,
            user: h1.user,
            hostKey: h1.hostKey,
            archive: lab.agent.path,
            sha256: lab.agent.sha256,
            remotePath: content,
          },
        },
      }),
    );
    // The lab approves its own stack's nodes; this second stack's tokens are named in its own namespace, which an
    // approver of its own reads (as two stacks sharing a cluster each run theirs).
    const approver = new AbortController();
    void runNodeApprover(lab.admin, defaultNamespace("migrate"), { signal: approver.signal, intervalMs: 500 });
    try {
      ok(await lab.pulumi(["stack", "init", "migrate", "--secrets-provider", "passphrase"]), "stack init");
      ok(
        await lab.pulumi([
          "config",
          "set-all",
          "--secret",
          `winfleet:sshKey1=${h1.privateKey}`,
          "--secret",
          "winfleet:bootstrapTokenSecret=m1gr4t3m1gr4t3m1",
        ]),
        "config set-all",
      );
      ok(await up("the earlier program"), "pulumi up of the earlier program");
      const deployed = (await lab.pulumi(["stack", "export"])).stdout;
      assert.match(deployed, /command:remote:CopyFile::lab-byo-1-content/);
      writeFileSync(projectFile, project);
      const preview = await lab.pulumi(["preview", "--json"]);
      ok(preview, "preview");
      const planned = steps(preview.stdout);
      assert.ok(planned.includes("delete command:remote:CopyFile lab-byo-1-content"), planned.join("; "));
      assert.ok(planned.includes("create command:remote:CopyToRemote lab-byo-1-content"), planned.join("; "));
      assert.ok(!planned.some((x) => /^(replace|create-replacement|delete-replaced) /.test(x)), "nothing replaced");
      const before = sessions(h1);
      ok(await up("the program as it is now, over the earlier state"), "pulumi up");
      // The CopyFile's record goes with no session of its own: the host sees the new copy and the bootstrap.
      assert.ok(sessions(h1) > before);
      const after = (await lab.pulumi(["stack", "export"])).stdout;
      assert.doesNotMatch(after, /command:remote:CopyFile/);
      assert.match(after, /command:remote:CopyToRemote::lab-byo-1-content/);
      await converged([h1.name], fleet.content.templateVersion);
      ok(await lab.pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
    } finally {
      approver.abort();
      writeFileSync(projectFile, project);
    }
  });
});
