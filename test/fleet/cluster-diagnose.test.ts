/**
 * `winfleet diagnose NODE` against the local cluster: the archive of a host's agent fetched
 * through the cluster (a pod bound to the node, its output read through the API server's
 * pods/log, which the API server gets from the node stand-in's kubelet API), identical to what
 * the agent collects; the pod gone afterwards; and a clear refusal of a node that does not exist.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments, stringify } from "yaml";
import { KubeClient } from "../../agent/cluster/kube-client";
import { operatorApi } from "../../agent/operator/operator-api";
import { entryJson, unpack } from "../diagnose/support";
import { enginesOrSkip, runCommand } from "../support/engines";
import { type Fleet, REPO, killFleet, startFleet, winfleet, writeStack } from "./support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe(
  "winfleet diagnose NODE through the local cluster",
  { skip: typeof engines === "string" ? engines : false, timeout: 600_000 },
  () => {
    let dir: string;
    let fleet: Fleet | undefined;
    let kube: KubeClient;
    const kubeconfig = () => join(dir, "state", "kubeconfig");
    const diagnose = (args: readonly string[]) =>
      runCommand(process.execPath, [join(REPO, "bin", "winfleet.js"), "diagnose", ...args], {
        cwd: REPO,
        timeoutMs: 240_000,
      });
    const diagnosePods = async () =>
      (
        await kube.get<{ items: { metadata: { name: string } }[] }>(
          `/api/v1/namespaces/winfleet-system/pods?labelSelector=${encodeURIComponent("app.kubernetes.io/name=winfleet-diagnose")}`,
        )
      ).items.map((p) => p.metadata.name);

    before(async () => {
      if (typeof engines === "string") return;
      dir = mkdtempSync(join(tmpdir(), "winfleet-cluster-diagnose-"));
      writeStack(join(dir, "Pulumi.dg.yaml"), {
        content: join(REPO, "content"),
        template: "sandbox",
        version: "1.0.0",
        hosts: 1,
      });
      fleet = startFleet([
        "--cluster",
        "--stack",
        join(dir, "Pulumi.dg.yaml"),
        "--state-dir",
        join(dir, "state"),
        "--port",
        "0",
      ]);
      await fleet.waitFor(/rollout done: local-1/, 180_000);
      kube = KubeClient.fromKubeconfigFile(kubeconfig());
      // The fleet installs a new host itself; its upgrader pod then retargets the host to the content it
      // unpacked, and turns Ready once the host converged there. Until then the host's config may change.
      await kube.waitFor(
        async () => {
          const d = await kube.getOrUndefined<{ status: { numberReady?: number; numberAvailable?: number } }>(
            "/apis/apps/v1/namespaces/winfleet-system/daemonsets/winfleet-agent-upgrader-local",
          );
          return d?.status.numberReady === 1 && d.status.numberAvailable === 1 ? d : undefined;
        },
        120_000,
        "the upgrader pod to be Ready and available",
      );
    });

    after(() => {
      killFleet(fleet);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("writes the archive the host's agent made, checked end to end, and deletes its pod", async () => {
      const out = join(dir, "local-1.tar.gz");
      const r = await diagnose(["local-1", "--kubeconfig", kubeconfig(), "--out", out, "--since", "1h"]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const written = readFileSync(out);
      const m =
        /^wrote (\S+): (\d+) bytes from local-1, sha256 ([0-9a-f]{64}) checked; pod winfleet-system\/(winfleet-diagnose-local-1-\w+) deleted$/m.exec(
          r.stdout,
        );
      assert.ok(m, r.stdout);
      assert.equal(m[1], out);
      assert.equal(Number(m[2]), written.length);
      assert.equal(m[3], sha256(written), "the bytes written are the bytes the agent announced");

      const u = unpack(out);
      const manifest = entryJson<{
        host: string;
        since: string;
        entries: { path: string; sha256: string; size: number }[];
      }>(u, "manifest.json");
      assert.equal(manifest.host, "local-1");
      assert.ok(Date.now() - Date.parse(manifest.since) < 2 * 3_600_000, "--since reached the agent");
      for (const e of manifest.entries) {
        const data = u.files.get(e.path);
        assert.ok(data, `${e.path} is in the archive`);
        assert.equal(sha256(data), e.sha256, `${e.path} is what the agent collected`);
      }
      assert.equal(entryJson<{ state: string }>(u, "agent/status.json").state, "converged");
      assert.equal(entryJson<{ config: { nodeName: string } }>(u, "agent/config.json").config.nodeName, "local-1");

      // The same host diagnosed on the host itself: the same entries, and the stable ones byte for byte.
      const local = join(dir, "local-1.local.tar.gz");
      const l = winfleet([
        "local",
        "diagnose",
        "local-1",
        "--state-dir",
        join(dir, "state"),
        "--out",
        local,
        "--since",
        "1h",
      ]);
      assert.equal(l.code, 0, l.stderr);
      const v = unpack(local);
      assert.deepEqual([...u.files.keys()].sort(), [...v.files.keys()].sort());
      for (const path of ["agent/config.json", "agent/journal.json", "content/manifest.json"])
        assert.deepEqual(u.files.get(path), v.files.get(path), path);

      await kube.waitFor(async () => (await diagnosePods()).length === 0, 30_000, "the diagnose pod to be deleted");
    });

    it("serves the upgrader pods' logs as kubectl logs reads them: tailLines, timestamps, limitBytes", async () => {
      const api = await operatorApi(kubeconfig());
      const pods = await kube.get<{ items: { metadata: { name: string } }[] }>(
        `/api/v1/namespaces/winfleet-system/pods?labelSelector=${encodeURIComponent("app.kubernetes.io/name=winfleet-upgrader")}`,
      );
      const path = `/api/v1/namespaces/winfleet-system/pods/${pods.items[0]?.metadata.name ?? ""}/log?container=upgrade`;
      const read = async (query: string) => {
        let text = "";
        await api.stream(`${path}${query}`, (t) => (text += t), new AbortController().signal);
        return text;
      };
      const all = await read("");
      assert.match(all, /^retargeted to sandbox 1\.0\.0 \(content .*\)\n$/m, "what the init container printed");
      const last = await read("&tailLines=1&timestamps=true");
      assert.match(last, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z \S/);
      assert.equal(last.slice(last.indexOf(" ") + 1), `${all.trimEnd().split("\n").pop() ?? ""}\n`);
      assert.equal(await read("&limitBytes=5"), all.slice(0, 5));
    });

    it("needs no more than the permissions docs/troubleshooting.md lists, and names them when one is missing", async () => {
      // The RBAC exactly as the page gives it, bound to a ServiceAccount the operator's kubeconfig uses.
      const page = readFileSync(join(REPO, "docs", "troubleshooting.md"), "utf8");
      const block = /The permissions the kubeconfig's identity needs, as RBAC:\n\n```yaml\n([\s\S]*?)```/.exec(
        page,
      )?.[1];
      assert.ok(block, "the RBAC block in docs/troubleshooting.md");
      const [clusterRole, role] = parseAllDocuments(block).map((d) => d.toJS() as { metadata: { name: string } });
      assert.ok(clusterRole && role);
      await kube.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", clusterRole);
      await kube.post("/apis/rbac.authorization.k8s.io/v1/namespaces/winfleet-system/roles", role);
      await kube.post("/api/v1/namespaces/default/serviceaccounts", {
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name: "operator" },
      });
      const subjects = [{ kind: "ServiceAccount", name: "operator", namespace: "default" }];
      await kube.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "operator-diagnose" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole.metadata.name },
        subjects,
      });
      const token = (
        await kube.post<{ status: { token: string } }>("/api/v1/namespaces/default/serviceaccounts/operator/token", {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: { expirationSeconds: 3600 },
        })
      ).status.token;
      const ca = /certificate-authority-data: (\S+)/.exec(readFileSync(kubeconfig(), "utf8"))?.[1] ?? "";
      const operator = join(dir, "operator.kubeconfig");
      writeFileSync(
        operator,
        stringify({
          apiVersion: "v1",
          kind: "Config",
          "current-context": "operator",
          clusters: [{ name: "local", cluster: { server: kube.server, "certificate-authority-data": ca } }],
          users: [{ name: "operator", user: { token } }],
          contexts: [{ name: "operator", context: { cluster: "local", user: "operator" } }],
        }),
      );

      const without = await diagnose(["local-1", "--kubeconfig", operator, "--out", join(dir, "no.tar.gz")]);
      assert.equal(without.code, 1, without.stdout + without.stderr);
      assert.match(
        without.stderr,
        /forbidden — the kubeconfig's identity needs: get nodes; list daemonsets\.apps, create\/get\/delete pods and get pods\/log in the namespace/,
      );

      await kube.post("/apis/rbac.authorization.k8s.io/v1/namespaces/winfleet-system/rolebindings", {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "operator-diagnose" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name },
        subjects,
      });
      const out = join(dir, "as-operator.tar.gz");
      const r = await kube.waitFor(
        async () => {
          // RBAC caches for a moment after a binding is made.
          const x = await diagnose(["local-1", "--kubeconfig", operator, "--out", out]);
          return x.code === 0 || !/forbidden/.test(x.stderr) ? x : undefined;
        },
        60_000,
        "the operator's diagnose to be allowed",
      );
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(entryJson<{ host: string }>(unpack(out), "manifest.json").host, "local-1");
      await kube.waitFor(async () => (await diagnosePods()).length === 0, 30_000, "the diagnose pod to be deleted");
    });

    it("on Ctrl-C, deletes its pod, writes nothing and exits 130", async () => {
      const out = join(dir, "interrupted.tar.gz");
      const child = spawn(
        process.execPath,
        [join(REPO, "bin", "winfleet.js"), "diagnose", "local-1", "--kubeconfig", kubeconfig(), "--out", out],
        { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] },
      );
      let stderr = "";
      let sent = false;
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      // Interrupted once its pod exists: the node is collecting (it takes seconds), nothing is read yet.
      child.stderr.on("data", (c: Buffer) => {
        stderr += c.toString();
        if (!sent && /^pod winfleet-system\/\S+ on local-1/m.test(stderr)) sent = child.kill("SIGINT");
      });
      const killer = setTimeout(() => child.kill("SIGKILL"), 120_000);
      const code = await exited;
      clearTimeout(killer);
      assert.equal(code, 130, stderr);
      assert.match(stderr, /error: interrupted while .*; pod winfleet-system\/winfleet-diagnose-local-1-\w+ deleted/);
      assert.equal(existsSync(out), false);
      await kube.waitFor(
        async () => (await diagnosePods()).length === 0,
        30_000,
        "the interrupted diagnose pod to be deleted",
      );
    });

    it("refuses a node that does not exist, naming the nodes there are", async () => {
      const r = await diagnose(["local-9", "--kubeconfig", kubeconfig(), "--out", join(dir, "none.tar.gz")]);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(
        r.stderr,
        /error: node local-9 not found in the cluster at https:\/\/127\.0\.0\.1:\d+ \(nodes: local-1\)/,
      );
      assert.deepEqual(await diagnosePods(), []);
    });
  },
);
