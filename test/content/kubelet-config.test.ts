/**
 * The KubeletConfiguration the kubelet component's install script writes,
 * rendered from the script itself (its hashtable read as data, with a node's
 * variable values) and checked twice: by the port of the kubelet's validation
 * rules (agent/content/kubelet-config.ts), and — where the binary is built —
 * by kubelet-config-validate, which runs the kubelet's own decoding and
 * ValidateKubeletConfiguration (scripts/engines/kubernetes). Each check is
 * shown to refuse the configuration the kubelet refuses.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { EngineMissingError, findEngines } from "../../agent/cluster/engines";
import {
  KUBELET_LABEL_KEYS,
  kubeletConfigurationProblems,
  nodeLabelProblems,
} from "../../agent/content/kubelet-config";
import { assignedLiteral, type PsValue } from "../../agent/content/powershell-literal";
import { scratchDir } from "../support";

const INSTALL = join(
  __dirname,
  "..",
  "..",
  "content",
  "components",
  "kubelet",
  "1.34.7-1",
  "files",
  "k",
  "winfleet",
  "kubelet",
  "install.ps1",
);
const VALIDATOR_ENV = "WINFLEET_KUBELET_CONFIG_VALIDATE";
const scratch = scratchDir("kubelet-config-");

type Config = { readonly [key: string]: PsValue };
const TAINT = [{ key: "os", value: "windows", effect: "NoSchedule" }];

/** The configuration install.ps1 writes on a node with these values. */
async function rendered(source: string, taints: PsValue = []): Promise<Config> {
  const vars = new Map<string, PsValue>([
    ["root", "C:"],
    ["clusterdns", "10.96.0.10,fd00::a"],
    ["clusterdomain", "cluster.local"],
    ["taints", taints],
    ["maxpods", 60],
  ]);
  const value = await assignedLiteral(source, "configuration", vars);
  assert.ok(
    value !== undefined && typeof value === "object" && value !== null && !Array.isArray(value),
    "install.ps1 assigns $configuration a plain-data hashtable",
  );
  return value as Config;
}

const script = readFileSync(INSTALL, "utf8");
// What the kubelet refuses without QoS cgroups: any enforcement but "none".
const broken = script.replace("enforceNodeAllocatable         = @()", "enforceNodeAllocatable         = @('pods')");
const none = script.replace("enforceNodeAllocatable         = @()", "enforceNodeAllocatable         = @('none')");

describe("the kubelet configuration install.ps1 writes", () => {
  it("is what the kubelet needs on Windows: no QoS cgroups, nothing enforced, the containerd pipe", async () => {
    const c = await rendered(script);
    assert.equal(c.kind, "KubeletConfiguration");
    assert.equal(c.apiVersion, "kubelet.config.k8s.io/v1beta1");
    assert.equal(c.cgroupsPerQOS, false);
    assert.deepEqual(c.enforceNodeAllocatable, []);
    assert.deepEqual(c.clusterDNS, ["10.96.0.10", "fd00::a"]);
    assert.equal(c.containerRuntimeEndpoint, "npipe://./pipe/containerd-containerd");
    assert.equal(c.staticPodPath, "C:\\etc\\kubernetes\\manifests");
  });

  it("passes the kubelet's rules (ported), with and without the registration taint", async () => {
    assert.deepEqual(kubeletConfigurationProblems(await rendered(script)), []);
    assert.deepEqual(kubeletConfigurationProblems(await rendered(script, TAINT)), []);
  });

  it("the ported rules refuse what the kubelet refuses (the check can fail), and take what it takes", async () => {
    assert.match(
      kubeletConfigurationProblems(await rendered(broken)).join("\n"),
      /enforceNodeAllocatable contains "pods", which needs cgroupsPerQOS true, and it is false/,
    );
    const base = await rendered(script);
    const absent = Object.fromEntries(Object.entries(base).filter(([k]) => k !== "enforceNodeAllocatable"));
    assert.match(
      kubeletConfigurationProblems(absent).join("\n"),
      /an absent enforceNodeAllocatable defaults to \["pods"\]/,
    );
    assert.match(
      kubeletConfigurationProblems({ ...base, cgroupsPerQOS: true, enforceNodeAllocatable: ["none", "pods"] }).join(
        "\n",
      ),
      /may not contain other enforcements/,
    );
    assert.match(
      kubeletConfigurationProblems({ ...base, cgroupsPerQOS: true, enforceNodeAllocatable: ["system-reserved"] }).join(
        "\n",
      ),
      /systemReservedCgroup must be set/,
    );
    assert.match(
      kubeletConfigurationProblems({ ...base, cgroupsPerQOS: true, enforceNodeAllocatable: ["pods", "pods"] }).join(
        "\n",
      ),
      /holds "pods" twice/,
    );
    assert.match(
      kubeletConfigurationProblems({
        ...base,
        registerWithTaints: [{ key: "os/", value: "windows", effect: "NoSchedule" }],
      }).join("\n"),
      /registerWithTaints\[0\]\.key/,
    );
    assert.match(
      kubeletConfigurationProblems({ ...base, imageGCLowThresholdPercent: 90 }).join("\n"),
      /imageGCLowThresholdPercent 90 must be less than imageGCHighThresholdPercent 85/,
    );
    assert.match(
      kubeletConfigurationProblems({ ...base, port: 70000 }).join("\n"),
      /port 70000 must be between 1 and 65535/,
    );
    assert.match(
      kubeletConfigurationProblems({ ...base, singleProcessOOMKill: false }).join("\n"),
      /singleProcessOOMKill is not supported on Windows/,
    );
    // Kubernetes 1.34 skips "none": with it alone, no QoS cgroups are needed.
    assert.deepEqual(kubeletConfigurationProblems(await rendered(none)), []);
    assert.deepEqual(
      kubeletConfigurationProblems({ ...base, cgroupsPerQOS: true, enforceNodeAllocatable: ["pods"] }),
      [],
    );
    assert.deepEqual(kubeletConfigurationProblems({ ...base, enforceNodeAllocatable: null, cgroupsPerQOS: true }), []);
  });
});

describe("node labels the kubelet refuses", () => {
  it("refuses kubernetes.io and k8s.io keys outside the kubelet's allowlist", () => {
    assert.match(nodeLabelProblems("node-role.kubernetes.io/worker=").join("\n"), /may not set/);
    assert.match(nodeLabelProblems("kubernetes.io/role=x").join("\n"), /may not set/);
    assert.match(nodeLabelProblems("team.k8s.io/a=b").join("\n"), /may not set/);
    assert.match(nodeLabelProblems("a=b=c").join("\n"), /value "b=c"/);
    assert.match(nodeLabelProblems("-bad=x").join("\n"), /label key "-bad"/);
  });

  it("install.ps1 refuses the same labels, from the same list, and passes --node-ip when given", async () => {
    assert.deepEqual(
      [...((await assignedLiteral(script, "kubeletLabels")) as string[])].sort(),
      [...KUBELET_LABEL_KEYS].sort(),
    );
    assert.match(
      script,
      /throw "variable KUBE_NODE_LABELS sets \$key, a kubernetes\.io\/k8s\.io label the kubelet may not set/,
    );
    assert.match(script, /\$arguments \+= "--node-ip=\$nodeIp"/);
  });

  it("accepts the kubelet's own namespaces, the well-known labels and anyone else's", () => {
    assert.deepEqual(
      nodeLabelProblems(
        "node.kubernetes.io/pool=win,kubelet.kubernetes.io/x=y,topology.kubernetes.io/zone=z1,example.com/team=a,plain=",
      ),
      [],
    );
  });
});

/**
 * The validator binary (named by the environment, else the one set-up built), or why its test is skipped; in CI its
 * absence is a failure.
 */
function validator(): { readonly path: string } | { readonly skip: string } {
  const path = process.env[VALIDATOR_ENV];
  if (path !== undefined && path !== "" && existsSync(path)) return { path };
  try {
    const built = findEngines(["kubernetes"]).kubernetes?.binaries["kubelet-config-validate"];
    if (built) return { path: built };
  } catch (e) {
    if (!(e instanceof EngineMissingError)) throw e;
  }
  const reason = `no kubelet-config-validate binary: npm run setup builds it (or name one in ${VALIDATOR_ENV})`;
  if (process.env.CI === "true") throw new Error(`CI requires ${reason}`);
  process.stderr.write(`SKIPPED: ${reason}\n`);
  return { skip: reason };
}

const found = validator();

describe(
  "the kubelet configuration under the kubelet's own validation (kubelet-config-validate)",
  { skip: "skip" in found ? found.skip : false },
  () => {
    const run = (args: readonly string[], input?: string): { status: number | null; output: string } => {
      const r = spawnSync((found as { path: string }).path, args, { encoding: "utf8", input, timeout: 60_000 });
      return { status: r.status, output: `${r.stdout}${r.stderr}` };
    };

    it("accepts the configuration install.ps1 writes, with and without the taint", async () => {
      for (const [name, config] of [
        ["plain", await rendered(script)],
        ["tainted", await rendered(script, TAINT)],
      ] as const) {
        const file = join(scratch, `${name}.json`);
        writeFileSync(file, JSON.stringify(config, null, 2));
        const r = run([file]);
        assert.equal(r.status, 0, r.output);
      }
    });

    it('refuses an enforcement without QoS cgroups (the check can fail), and takes "none" alone, as the port does', async () => {
      const file = join(scratch, "broken.json");
      writeFileSync(file, JSON.stringify(await rendered(broken), null, 2));
      const r = run([file]);
      assert.equal(r.status, 1, r.output);
      assert.match(
        r.output,
        /cgroupsPerQOS \(--cgroups-per-qos\) must be set to true when "pods" contained in enforceNodeAllocatable/,
      );
      const alone = join(scratch, "none.json");
      writeFileSync(alone, JSON.stringify(await rendered(none), null, 2));
      const ok = run([alone]);
      assert.equal(ok.status, 0, ok.output);
    });

    it("reads YAML from standard input", () => {
      const ok = run(
        [],
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupsPerQOS: false\nenforceNodeAllocatable: []\n",
      );
      assert.equal(ok.status, 0, ok.output);
      const bad = run(
        ["-"],
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupsPerQOS: false\n",
      );
      assert.equal(bad.status, 1, bad.output);
    });
  },
);
