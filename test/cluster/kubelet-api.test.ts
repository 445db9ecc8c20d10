/**
 * The node stand-in's kubelet API under the real control plane: the API server, started with a
 * kubelet client certificate and the cluster CA to verify kubelets, reads a pod's logs from the
 * stand-in (`pods/log`, as `kubectl logs`), which serves them from the log files its pod runner
 * writes, with a serving certificate from the kubelet-serving signer, and asks the API server
 * whether each client may read them. Pods of restartPolicy Never end as a kubelet ends them; a
 * ConfigMap volume that cannot be read yet is mounted again until it can; and a readiness probe
 * turns a pod unready only after its failure threshold of results in a row, as a kubelet counts.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient } from "../../agent/cluster/kube-client";
import { type KubeletApi, startKubeletApi } from "../../agent/cluster/kubelet-api";
import { type NodeCredential, NodeStandIn, tlsBootstrap } from "../../agent/cluster/node-stand-in";
import { PodRunner } from "../../agent/cluster/pod-runner";
import { operatorApi } from "../../agent/operator/operator-api";
import { enginesOrSkip, startTestControlPlane } from "../support/engines";
import { joinableBy } from "../support/join";
import { sleep } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd");
const TOKEN = { id: "k8lt4p", secret: "0123456789abcdef" };
const LABELS = { "kubernetes.io/os": "windows" };
type PodStatus = {
  status: {
    phase: string;
    reason?: string;
    containerStatuses?: { state: { terminated?: { exitCode: number; reason: string } } }[];
  };
};

describe(
  "the node stand-in's kubelet API",
  { skip: typeof engines === "string" ? engines : false, timeout: 300_000 },
  () => {
    let cp: ControlPlane;
    let admin: KubeClient;
    let stopApprover = (): void => undefined;
    let dir: string;
    let node: NodeStandIn;
    let runner: PodRunner;
    let kubelet: KubeletApi;
    let credential: NodeCredential;
    let other: NodeCredential;

    const pod = async (name: string, script: string, extra: Record<string, unknown> = {}) => {
      await admin.post("/api/v1/namespaces/default/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name },
        spec: {
          nodeName: "node-a",
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          containers: [{ name: "main", image: "none", command: ["sh", "-c", script] }],
          ...extra,
        },
      });
    };
    const phase = (name: string, want: string) =>
      admin.waitFor(
        async () => {
          const p = await admin.get<PodStatus>(`/api/v1/namespaces/default/pods/${name}`);
          return p.status.phase === want ? p : undefined;
        },
        60_000,
        `pod ${name} to be ${want}`,
      );
    const uidOf = async (name: string) =>
      (await admin.get<{ metadata: { uid: string } }>(`/api/v1/namespaces/default/pods/${name}`)).metadata.uid;
    const logs = async (name: string, query = "") => {
      let text = "";
      const api = await operatorApi(cp.adminKubeconfig);
      await api.stream(
        `/api/v1/namespaces/default/pods/${name}/log?container=main${query}`,
        (t) => (text += t),
        new AbortController().signal,
      );
      return text;
    };
    /** A request straight to the kubelet API, as `tls` (no client certificate when absent). */
    const direct = (path: string, tls?: { cert: string; key: string }) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          { host: "127.0.0.1", port: kubelet.port, path, ca: cp.caPem, servername: "node-a", ...tls },
          (res) => {
            let body = "";
            res.on("data", (c: Buffer) => (body += c.toString()));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on("error", reject);
        req.end();
      });

    before(async () => {
      if (typeof engines === "string") return;
      dir = mkdtempSync(join(tmpdir(), "winfleet-kubelet-api-"));
      cp = await startTestControlPlane(engines);
      admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
      stopApprover = await joinableBy(admin, TOKEN, ["node-a", "node-b"]);
      const join_ = (name: string) =>
        tlsBootstrap({
          server: cp.server,
          caPem: cp.caPem,
          bootstrapToken: `${TOKEN.id}.${TOKEN.secret}`,
          nodeName: name,
          labels: LABELS,
          dir: join(dir, name),
        });
      [credential, other] = await Promise.all([join_("node-a"), join_("node-b")]);
      const nodeClient = new KubeClient(cp.server, { ca: cp.caPem, cert: credential.certPem, key: credential.keyPem });
      runner = new PodRunner(nodeClient, "node-a", {
        dir: join(dir, "node-a", "pods"),
        env: {},
        commands: {},
        retryMs: 300,
      });
      kubelet = await startKubeletApi({
        api: nodeClient,
        nodeName: "node-a",
        address: "127.0.0.1",
        caPem: cp.caPem,
        dir: join(dir, "node-a"),
        logs: () => runner,
        approve: async (csr) => {
          const path = `/apis/certificates.k8s.io/v1/certificatesigningrequests/${csr}`;
          const obj = await admin.get<{ status?: object }>(path);
          await admin.put(`${path}/approval`, {
            ...obj,
            status: { conditions: [{ type: "Approved", status: "True", reason: "Test", message: "test" }] },
          });
        },
      });
      node = new NodeStandIn({
        server: cp.server,
        caPem: cp.caPem,
        credential,
        nodeName: "node-a",
        labels: LABELS,
        kubeletPort: kubelet.port,
        heartbeatMs: 2000,
      });
      await node.start();
      runner.start();
      // Pods need the namespace's default ServiceAccount, which the controller makes shortly after start.
      await admin.waitFor(
        async () => (await admin.getOrUndefined("/api/v1/namespaces/default/serviceaccounts/default")) !== undefined,
        60_000,
        "the default ServiceAccount",
      );
    });

    after(async () => {
      stopApprover();
      await runner?.stop();
      await kubelet?.close();
      await node?.stop();
      await cp?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("advertises its endpoint on the Node, with a serving certificate the cluster CA signed", async () => {
      const n = await admin.get<{
        status: {
          daemonEndpoints: { kubeletEndpoint: { Port: number } };
          addresses: { type: string; address: string }[];
        };
      }>("/api/v1/nodes/node-a");
      assert.equal(n.status.daemonEndpoints.kubeletEndpoint.Port, kubelet.port);
      assert.deepEqual(
        n.status.addresses.find((a) => a.type === "InternalIP"),
        { type: "InternalIP", address: "127.0.0.1" },
      );
      assert.match(readFileSync(join(dir, "node-a", "kubelet-serving.key"), "utf8"), /PRIVATE KEY/);
    });

    it("serves a finished pod's stdout and stderr through pods/log, with tailLines, timestamps, limitBytes and since", async () => {
      await pod("done", "echo one; echo two >&2; printf 'three'; exit 3");
      const p = await phase("done", "Failed");
      assert.deepEqual(p.status.containerStatuses?.[0]?.state.terminated, {
        ...p.status.containerStatuses?.[0]?.state.terminated,
        exitCode: 3,
        reason: "Error",
      });
      const all = await logs("done");
      assert.deepEqual(all.split("\n").sort(), ["", "one", "three", "two"].sort());
      assert.equal(await logs("done", "&limitBytes=3"), all.slice(0, 3));
      const tail = await logs("done", "&tailLines=1&timestamps=true");
      assert.match(tail, /^\d{4}-\d\d-\d\dT[\d:.]+Z \w+\n$/);
      assert.equal(
        await logs("done", `&sinceTime=${new Date(Date.now() + 60_000).toISOString()}`),
        "",
        "nothing written after a time to come",
      );
      assert.equal(await logs("done", "&sinceSeconds=3600"), all);
      const previous = await logs("done", "&previous=true").then(
        () => "",
        (e: unknown) => String(e),
      );
      assert.match(previous, /previous terminated container "main" in pod "done" not found/);
      await pod("ok", "echo fine");
      await phase("ok", "Succeeded");
      assert.equal(await logs("ok"), "fine\n");
    });

    it("follows a running container's log until it ends", async () => {
      await pod("slow", "echo first; sleep 2; echo second");
      await phase("slow", "Running");
      const started = Date.now();
      assert.equal(await logs("slow", "&follow=true"), "first\nsecond\n");
      assert.ok(Date.now() - started > 500, "the read waited for the container");
      await phase("slow", "Succeeded");
    });

    it("fails a pod past its activeDeadlineSeconds, killing its container", async () => {
      await pod("late", "echo waiting; exec sleep 60", { activeDeadlineSeconds: 2 });
      const p = await phase("late", "Failed");
      assert.equal(p.status.reason, "DeadlineExceeded");
      assert.equal(await logs("late"), "waiting\n");
    });

    it("mounts a ConfigMap volume created after its pod is bound, retrying until it can be read", async () => {
      await pod("mounts", "cat cfg/greeting", { volumes: [{ name: "cfg", configMap: { name: "made-later" } }] });
      await sleep(1500); // the runner has tried and failed to read the ConfigMap by now
      await admin.post("/api/v1/namespaces/default/configmaps", {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "made-later" },
        data: { greeting: "hello" },
      });
      await phase("mounts", "Succeeded");
      assert.equal(await logs("mounts"), "hello\n");
    });

    it("turns a ready pod unready only after failureThreshold failed probes in a row", async () => {
      // The probe counts its runs in the pod's directory: the 3rd fails alone, from the 7th on every one fails.
      const probe = "n=$(($(cat n 2>/dev/null || echo 0) + 1)); echo $n > n; [ $n -ne 3 ] && [ $n -lt 7 ]";
      await admin.post("/api/v1/namespaces/default/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "probed" },
        spec: {
          nodeName: "node-a",
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          containers: [
            {
              name: "main",
              image: "none",
              command: ["sleep", "60"],
              readinessProbe: {
                exec: { command: ["sh", "-c", probe] },
                periodSeconds: 1,
                timeoutSeconds: 10,
                failureThreshold: 2,
                successThreshold: 1,
              },
            },
          ],
        },
      });
      const seen: string[] = [];
      const ready = async () => {
        const p = await admin.get<{ status: { conditions?: { type: string; status: string }[] } }>(
          "/api/v1/namespaces/default/pods/probed",
        );
        const s = p.status.conditions?.find((c) => c.type === "Ready")?.status ?? "-";
        if (seen.at(-1) !== s) seen.push(s);
        return s;
      };
      await admin.waitFor(async () => (await ready()) === "True", 30_000, "the pod to be ready");
      await admin.waitFor(async () => (await ready()) === "False", 30_000, "the pod to turn unready");
      const n = Number(readFileSync(join(dir, "node-a", "pods", await uidOf("probed"), "n"), "utf8"));
      assert.ok(n >= 8, `unready only after the 7th and 8th probes failed (${n} run)`);
      assert.deepEqual(seen.slice(seen.indexOf("True")), ["True", "False"], "one failed probe did not turn it unready");
      await admin.delete("/api/v1/namespaces/default/pods/probed");
    });

    it("asks the API server who may read logs: the API server yes, another node no, no certificate no; exec is not served", async () => {
      const path = "/containerLogs/default/ok/main";
      const apiServer = {
        cert: readFileSync(cp.pki.kubeletClientCert, "utf8"),
        key: readFileSync(cp.pki.kubeletClientKey, "utf8"),
      };
      assert.deepEqual(await direct(path, apiServer), { status: 200, body: "fine\n" });
      const refused = await direct(path, { cert: other.certPem, key: other.keyPem });
      assert.equal(refused.status, 403);
      assert.match(refused.body, /user=system:node:node-b.*subresource=proxy/);
      await assert.rejects(direct(path), "a client without a certificate is refused in the handshake");
      assert.equal((await direct("/exec/default/ok/main?command=sh", apiServer)).status, 501);
      assert.equal((await direct("/containerLogs/default/nope/main", apiServer)).status, 404);
    });

    it("removes a deleted pod's logs with it", async () => {
      const logDir = join(dir, "node-a", "pods", "logs");
      const uid = (await admin.get<{ metadata: { uid: string } }>("/api/v1/namespaces/default/pods/ok")).metadata.uid;
      assert.ok(existsSync(join(logDir, `default_ok_${uid}`, "main", "0.log")));
      await admin.delete("/api/v1/namespaces/default/pods/ok");
      await admin.waitFor(
        async () => (await admin.getOrUndefined("/api/v1/namespaces/default/pods/ok")) === undefined,
        30_000,
        "the pod to be removed",
      );
      // A finished pod is removed from the API at once; the node cleans up when it next looks.
      await admin.waitFor(
        () => Promise.resolve(!existsSync(join(logDir, `default_ok_${uid}`))),
        10_000,
        "the pod's log directory to be removed",
      );
    });
  },
);
