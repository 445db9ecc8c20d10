/**
 * Calico for Windows from the cluster side, through the real engine against a real control plane: the stack
 * (kubeadm, the win2022 template) patches the Tigera operator's Installation and writes the API server endpoint
 * it reads. The Installation's CRD is the operator's own, as Calico's pinned Go module ships it (set-up copies it
 * beside the calico engine), so the API server checks every field against the operator's schema; no operator
 * runs here, so what the operator renders from it (the calico-node-windows DaemonSet) is not exercised.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { parse as parseYaml } from "yaml";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient, KubeError } from "../../agent/cluster/kube-client";
import {
  CALICO_WINDOWS_LABEL,
  CALICO_WINDOWS_LABEL_VALUE,
  renderCalicoWindows,
} from "../../components/calico-windows-render";
import { enginesOrSkip, pulumiProject, type PulumiProject, startTestControlPlane } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes", "calico");
const CRD = "operator.tigera.io_installations_crd.yaml";
const INSTALLATION = "/apis/operator.tigera.io/v1/installations/default";
const ENDPOINT = "/api/v1/namespaces/tigera-operator/configmaps/kubernetes-services-endpoint";
const STACK = "calico";

/** What the cluster's own Calico install (the operator's manifests, VXLAN) leaves in its Installation. */
const CLUSTER_INSTALLATION = {
  apiVersion: "operator.tigera.io/v1",
  kind: "Installation",
  metadata: { name: "default" },
  spec: {
    variant: "Calico",
    calicoNetwork: { bgp: "Disabled", ipPools: [{ cidr: "192.168.0.0/16", encapsulation: "VXLAN" }] },
  },
};

interface Installation {
  spec: {
    variant?: string;
    serviceCIDRs?: string[];
    calicoNetwork?: { bgp?: string; windowsDataplane?: string; ipPools?: { cidr: string }[] };
    windowsNodes?: Record<string, string>;
    calicoNodeWindowsDaemonSet?: { spec?: { template?: { spec?: { nodeSelector?: Record<string, string> } } } };
  };
}

function stackYaml(cp: ControlPlane): string {
  return [
    "config:",
    "  winfleet:fleet:",
    "    cluster:",
    "      name: calico",
    "      join:",
    "        method: kubeadm",
    `        apiServer: ${cp.server}`,
    `        caCertHash: ${cp.caCertHash}`,
    "        tokenId: calic0",
    "        tokenSecret: bootstrapTokenSecret",
    "      calicoWindows:",
    "        serviceCidrs: [10.96.0.0/12]",
    "    content:",
    "      dir: content",
    "      template: win2022",
    "      templateVersion: 1.1.0",
    "    agent:",
    "      version: 0.1.0",
    "      bundle:",
    "        url: https://artifacts.example.test/winfleet-agent-0.1.0.tgz",
    `        sha256: "${"0".repeat(64)}"`,
    "    pools:",
    "      - name: local",
    "        kind: local",
    "        hosts: 1",
    "  winfleet:bootstrapTokenSecret: q2w3e4r5t6y7u8i9",
    "",
  ].join("\n");
}

describe(
  "Calico for Windows through the real engine",
  { skip: typeof engines === "string" ? engines : false, timeout: 900_000 },
  () => {
    let cp: ControlPlane;
    let admin: KubeClient;
    let project: PulumiProject;
    const pulumi = async (args: string[]) => project.pulumi(args);
    const ok = async (args: string[]) => {
      const r = await pulumi(args);
      assert.equal(
        r.code,
        0,
        `pulumi ${args.join(" ")} exited ${r.code}:\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`,
      );
      return r;
    };

    before(async () => {
      if (typeof engines === "string") return;
      cp = await startTestControlPlane(engines);
      admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
      const crd = parseYaml(readFileSync(engines.calico?.binaries[CRD] ?? "", "utf8")) as unknown;
      await admin.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
      await admin.waitFor(
        async () => {
          const c = await admin.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/installations.operator.tigera.io",
          );
          return c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True") === true;
        },
        60_000,
        "the Installation CRD to be established",
      );
      await admin.post("/api/v1/namespaces", {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: "tigera-operator" },
      });
      await admin.post("/apis/operator.tigera.io/v1/installations", CLUSTER_INSTALLATION);
      project = pulumiProject(engines, { KUBECONFIG: cp.adminKubeconfig });
      project.writeStack(STACK, stackYaml(cp));
      await ok(["stack", "init", STACK, "--secrets-provider", "passphrase"]);
    });

    after(async () => {
      project?.dispose();
      await cp?.stop();
    });

    it("every field of the rendered Installation patch is one the operator's schema knows (strict server-side dry run)", async () => {
      const { installation } = renderCalicoWindows({
        apiServer: cp.server,
        serviceCidrs: ["10.96.0.0/12", "fd00:10:96::/112"],
        vxlanAdapter: "Ethernet 2",
      });
      await admin.call(
        "PATCH",
        `${INSTALLATION}?dryRun=All&fieldManager=schema-check&fieldValidation=Strict`,
        installation,
        "application/apply-patch+yaml",
      );
      // And the same check refuses what the schema does not know, so passing it means something.
      const unknown = { ...installation, spec: { ...(installation.spec as object), windowsNode: {} } };
      await assert.rejects(
        admin.call(
          "PATCH",
          `${INSTALLATION}?dryRun=All&fieldManager=schema-check&fieldValidation=Strict`,
          unknown,
          "application/apply-patch+yaml",
        ),
        /spec\.windowsNode: field not declared in schema/,
      );
    });

    it("pulumi up turns on the HNS dataplane for the labelled Windows nodes and keeps the cluster's own fields", async () => {
      await ok(["up", "--yes", "--skip-preview"]);
      const i = await admin.get<Installation>(INSTALLATION);
      assert.equal(i.spec.calicoNetwork?.windowsDataplane, "HNS");
      assert.deepEqual(i.spec.serviceCIDRs, ["10.96.0.0/12"]);
      assert.deepEqual(i.spec.windowsNodes, {
        cniBinDir: "/opt/cni/bin",
        cniConfigDir: "/etc/cni/net.d",
        cniLogDir: "/var/log/calico/cni",
      });
      assert.deepEqual(i.spec.calicoNodeWindowsDaemonSet?.spec?.template?.spec?.nodeSelector, {
        [CALICO_WINDOWS_LABEL]: CALICO_WINDOWS_LABEL_VALUE,
      });
      assert.equal(i.spec.variant, "Calico", "the cluster's fields stay");
      assert.equal(i.spec.calicoNetwork?.bgp, "Disabled");
      assert.deepEqual(
        i.spec.calicoNetwork?.ipPools?.map((p) => p.cidr),
        ["192.168.0.0/16"],
      );
      const endpoint = await admin.get<{ data: Record<string, string> }>(ENDPOINT);
      const url = new URL(cp.server);
      assert.deepEqual(endpoint.data, { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port });
    });

    it("a second preview finds nothing to change", async () => {
      await ok(["preview", "--expect-no-changes"]);
    });

    it("an out-of-band change of winfleet's field is taken back by the next up", async () => {
      await admin.patch(INSTALLATION, { spec: { calicoNetwork: { windowsDataplane: "Disabled" } } });
      await ok(["up", "--yes", "--skip-preview", "--refresh"]);
      assert.equal((await admin.get<Installation>(INSTALLATION)).spec.calicoNetwork?.windowsDataplane, "HNS");
    });

    it("pulumi destroy gives back winfleet's fields and leaves the cluster's Installation", async () => {
      await ok(["destroy", "--yes", "--skip-preview"]);
      const i = await admin.get<Installation>(INSTALLATION);
      assert.equal(i.spec.calicoNetwork?.windowsDataplane, undefined);
      assert.equal(i.spec.serviceCIDRs, undefined);
      assert.equal(i.spec.calicoNodeWindowsDaemonSet, undefined);
      assert.deepEqual(
        i.spec.calicoNetwork?.ipPools?.map((p) => p.cidr),
        ["192.168.0.0/16"],
      );
      const endpoint = await admin.getOrUndefined<{ data?: Record<string, string> }>(ENDPOINT);
      assert.equal(endpoint?.data?.KUBERNETES_SERVICE_HOST, undefined, "the endpoint winfleet wrote is gone");
    });

    it("without an Installation (Calico not installed by the operator) the update fails and creates none", async () => {
      await admin.delete(INSTALLATION);
      const r = await pulumi(["up", "--yes", "--skip-preview"]);
      assert.notEqual(r.code, 0, "up must fail");
      assert.match(`${r.stdout}\n${r.stderr}`, /installations?.*default|default.*not found/i);
      await assert.rejects(admin.get(INSTALLATION), (e: unknown) => e instanceof KubeError && e.status === 404);
    });
  },
);
