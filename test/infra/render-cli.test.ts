/**
 * `winfleet render` as users run it, and the stack configs it refuses: every
 * kind of bad value names its key path and what was expected, and nothing is
 * written; the same stack renders the same bytes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { ValidationError } from "../../agent/common/errors";
import { renderStack } from "../../infra/render";
import { STACKS_DIR } from "../../infra/stack-file";
import { scratchDir } from "../support";

const REPO = join(__dirname, "..", "..");
const scratch = scratchDir("winfleet-render-");

function render(args: readonly string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(REPO, "bin", "winfleet.js"), "render", ...args], {
    cwd: REPO,
    encoding: "utf8",
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(relative(dir, p), readFileSync(p, "utf8"));
    }
  };
  walk(dir);
  return out;
}

type Fleet = Record<string, unknown> & {
  pools: Record<string, unknown>[];
  cluster: { join: Record<string, unknown> };
  content: Record<string, unknown>;
  agent: Record<string, unknown>;
  upgrader: Record<string, unknown>;
};
let n = 0;
/** The dev stack with one edit, as a stack file of its own. */
function badStack(edit: (fleet: Fleet) => void, base = "dev"): string {
  const doc = parseYaml(readFileSync(join(STACKS_DIR, `Pulumi.${base}.yaml`), "utf8")) as {
    config: Record<string, unknown>;
  };
  const fleet = doc.config["winfleet:fleet"] as Fleet;
  fleet.content.dir = join(REPO, "content");
  edit(fleet);
  const file = join(scratch, `Pulumi.bad${++n}.yaml`);
  writeFileSync(file, toYaml(doc));
  return file;
}

/** A copy of the repository's content in which `variable` of a component is required. */
function contentRequiring(component: string, version: string, variable: string): string {
  const dir = join(scratch, `content-${variable}`);
  cpSync(join(REPO, "content"), dir, { recursive: true });
  const file = join(dir, "components", component, version, "metadata.json");
  const meta = JSON.parse(readFileSync(file, "utf8")) as { variables: Record<string, { required?: boolean }> };
  const spec = meta.variables[variable];
  if (!spec) throw new Error(`${component} ${version} declares no ${variable}`);
  delete spec.required;
  writeFileSync(file, JSON.stringify(meta, null, 2));
  return dir;
}

/** The messages a stack is refused with: "<key path>: <message>" per problem. */
async function refusal(file: string): Promise<string> {
  try {
    await renderStack(file);
  } catch (e) {
    if (e instanceof ValidationError) return e.issues.map((i) => `${i.path}: ${i.message}`).join("\n");
    return (e as Error).message;
  }
  assert.fail(`${file} was accepted`);
}

describe("winfleet render", () => {
  it("writes the same bytes for the same stack, one file per resource, and says how many", () => {
    const a = join(scratch, "a");
    const b = join(scratch, "b");
    const first = render(["--stack", "byoh", "--out", a]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^rendered stack byoh: \d+ resources into \d+ files in /);
    assert.equal(render(["--stack", "byoh", "--out", b]).code, 0);
    const ta = tree(a);
    const tb = tree(b);
    assert.deepEqual([...ta.keys()].sort(), [...tb.keys()].sort());
    for (const [file, text] of ta) assert.equal(tb.get(file), text, file);
    assert.ok(ta.has("index.json") && [...ta.keys()].some((f) => f.startsWith("bootstrap/") && f.endsWith(".ps1")));
    assert.ok(!readdirSync(scratch).some((f) => f.includes(".rendering-")), "no staging directory left behind");
  });

  it("refuses a bad stack with exit 1, the key path and what was expected on stderr, and writes nothing", () => {
    const out = join(scratch, "kept");
    mkdirSync(out);
    writeFileSync(join(out, "index.json"), "[] an earlier render\n");
    const file = badStack((f) => {
      f.pools[0]!.count = -1;
    });
    const r = render(["--stack", file, "--out", out]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /winfleet:fleet\.pools\[0\]\.count/);
    assert.match(r.stderr, />=\s*0|at least 0|too small/i);
    assert.deepEqual(readdirSync(out), ["index.json"], "the output directory was touched");
    assert.equal(readFileSync(join(out, "index.json"), "utf8"), "[] an earlier render\n");
    const missing = render([
      "--stack",
      badStack((f) => delete (f.content.variables as Record<string, unknown>).CSI_PROXY_SHA256),
      "--out",
      join(scratch, "never"),
    ]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /csi-proxy \S+ needs CSI_PROXY_SHA256/);
    assert.doesNotMatch(missing.stderr, /\n\s+at /, "a refusal, not a stack trace");
    assert.ok(!existsSync(join(scratch, "never")));
  });

  it("has --help and exits 2 without its required options", () => {
    const help = render(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--stack <name>[\s\S]*--out <dir>[\s\S]*--secret <KEY=VALUE>/);
    assert.notEqual(render(["--stack", "dev"]).code, 0);
  });
});

describe("what a render shows", () => {
  it("names resources as the provider will: a reference to a VM or a container renders its real name, not the logical one", async () => {
    const r = await renderStack("rke2");
    const vms = r.resources
      .filter((x) => x.type === "azure-native:compute:VirtualMachine")
      .map((x) => x.inputs.vmName)
      .sort();
    const extensions = r.resources
      .filter((x) => x.type === "azure-native:compute:VirtualMachineExtension" && x.name.endsWith("-bootstrap"))
      .map((x) => x.inputs.vmName)
      .sort();
    assert.deepEqual(vms, ["rke2w5134a-1", "rke2w5134a-2", "rke2w5134a-3"]);
    assert.deepEqual(extensions, vms, "each extension names its VM as Azure knows it");
    const blob = r.resources.find((x) => x.type === "azure-native:storage:Blob")?.inputs;
    assert.equal(blob?.containerName, "winfleet", "the container content.publish.container names");
    assert.match(r.files.get("azure-native/storage-Blob-content-blob.json") ?? "", /"containerName": ?"winfleet"/);
  });
});

describe("a crash inside the program", () => {
  it("comes with its stack, though renders run with Pulumi's promise traces off", async () => {
    let runs = 0;
    const program = (): Promise<never> => {
      runs++;
      return Promise.reject(new Error("a bug in a component"));
    };
    await assert.rejects(
      renderStack("dev", { program }),
      (e: Error) => /a bug in a component/.test(e.message) && /\n\s+at /.test(e.stack ?? ""),
    );
    assert.equal(runs, 2, "the failing run is repeated once with traces on");
    assert.ok(Error.stackTraceLimit > 0, "trace settings restored");
  });
});

describe("bad stack configs, each named by its key path", () => {
  const cases: [string, (f: Fleet) => void, RegExp][] = [
    ["a negative node count", (f) => void (f.pools[0]!.count = -1), /winfleet:fleet\.pools\[0\]\.count: .*(>=|0)/],
    [
      "a subnet that is not a resource id",
      (f) => void (f.pools[0]!.subnetId = "nodes"),
      /winfleet:fleet\.pools\[0\]\.subnetId: a subnet resource id/,
    ],
    [
      "a CA hash without its sha256: prefix",
      (f) => void (f.cluster.join.caCertHash = "abc"),
      /winfleet:fleet\.cluster\.join\.caCertHash: sha256:<64 hex digits>/,
    ],
    [
      "a bootstrap token id of the wrong length",
      (f) => void (f.cluster.join.tokenId = "toolongid"),
      /winfleet:fleet\.cluster\.join\.tokenId: 6 lower-case letters or digits/,
    ],
    [
      "an agent bundle digest that is not hex",
      (f) => void ((f.agent.bundle as Record<string, unknown>).sha256 = "XYZ"),
      /winfleet:fleet\.agent\.bundle\.sha256: 64 lower-case hex digits/,
    ],
    [
      "Azure nodes with content in a ConfigMap",
      (f) => void (f.content.publish = { to: "configMap" }),
      /winfleet:fleet\.content\.publish: must be \{ to: blob, … \}: pools\[0\] \(azure\)/,
    ],
    [
      "a SAS without an expiry",
      (f) => void (f.content.publish = { ...(f.content.publish as object), auth: "sas" }),
      /winfleet:fleet\.content\.publish\.sasExpiry: is required with auth: sas/,
    ],
    [
      "a join variable set by hand",
      (f) => void ((f.content.variables as Record<string, unknown>).KUBE_API_SERVER = "https://x:6443"),
      /winfleet:fleet\.content\.variables\.KUBE_API_SERVER: is set by winfleet from cluster\.join\.apiServer/,
    ],
    ["an unknown key in a pool", (f) => void (f.pools[0]!.vmCount = 3), /winfleet:fleet\.pools\[0\]: .*vmCount/],
    [
      "two pools with one name",
      (f) => void f.pools.push({ ...f.pools[0]! }),
      /winfleet:fleet\.pools\[1\]\.name: duplicates pool win/,
    ],
    [
      "no cluster for real nodes",
      (f) => void delete (f as Record<string, unknown>).cluster,
      /winfleet:fleet\.cluster: is required: pools\[0\] \(azure\) deploys real nodes/,
    ],
    [
      "masquerade without an account",
      (f) => void (f.upgrader.masquerade = { enabled: true }),
      /winfleet:fleet\.upgrader\.masquerade\.as: masquerade\.as is required/,
    ],
    [
      "a template version the content does not have",
      (f) => void (f.content.templateVersion = "9.9.9"),
      /winfleet:fleet\.content: template win2022 9\.9\.9 is not in .*it has: .*win2022 1\.1\.0/,
    ],
    [
      "a required content variable left out",
      (f) => void delete (f.content.variables as Record<string, unknown>).CSI_PROXY_SHA256,
      /pools\[0\] \(win\): csi-proxy \S+ needs CSI_PROXY_SHA256.*winfleet:fleet\.content\.variables/,
    ],
    [
      "a public key that is not PEM",
      (f) => void (f.agent.publicKey = "ssh-ed25519 AAAA"),
      /winfleet:fleet\.agent\.publicKey: is not a PEM public key/,
    ],
    [
      "an RSA public key",
      (f) =>
        void (f.agent.publicKey = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({
          type: "spki",
          format: "pem",
        })),
      /winfleet:fleet\.agent\.publicKey: is an rsa key, not ed25519/,
    ],
    [
      "the private key where the public one goes",
      (f) =>
        void (f.agent.publicKey = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" })),
      /winfleet:fleet\.agent\.publicKey: is a private key: pin the public key/,
    ],
    // ClusterJoin passes kube-proxy's token, so only content that requires its own kubeconfig needs the stack's.
    [
      "a content secret left out",
      (f) =>
        void (
          (f.content.secrets = {}),
          (f.content.dir = contentRequiring("kube-proxy", "1.34.7-1", "KUBE_PROXY_KUBECONFIG"))
        ),
      /kube-proxy 1\.34\.7-1 needs KUBE_PROXY_KUBECONFIG.*a secret/,
    ],
  ];
  for (const [what, edit, message] of cases) {
    it(`refuses ${what}`, async () => {
      assert.match(await refusal(badStack(edit)), message);
    });
  }

  it("refuses a BYO host with two credentials, and a file that is not a stack", async () => {
    const byo = badStack(
      (f) => void ((f.pools[0]!.hosts as Record<string, unknown>[])[0]!.passwordSecret = "pw"),
      "byoh",
    );
    assert.match(
      await refusal(byo),
      /winfleet:fleet\.pools\[0\]\.hosts\[0\]: set exactly one of privateKeySecret and passwordSecret/,
    );
    const notYaml = join(scratch, "Pulumi.broken.yaml");
    writeFileSync(notYaml, "config: [unclosed\n");
    assert.match(await refusal(notYaml), /not valid YAML/);
    assert.match(await refusal(join(scratch, "Pulumi.absent.yaml")), /no such stack file/);
  });
});

describe("winfleet operator-stack", () => {
  const operatorStack = (args: readonly string[]) => {
    const r = spawnSync(process.execPath, [join(REPO, "bin", "winfleet.js"), "operator-stack", ...args], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 120_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  it("prints what deploy/operator/stack-dev.yaml holds: the dev stack's Stack and the access its program needs", () => {
    const r = operatorStack(["--stack", "my-org/winfleet/dev", "--repo", "https://github.com/my-org/winfleet"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, readFileSync(join(REPO, "deploy", "operator", "stack-dev.yaml"), "utf8"));
    assert.match(r.stdout, /resourceNames:\n\s+- bootstrap-token-[a-z0-9]{6}\n/, "the dev stack's own token, by name");
    assert.doesNotMatch(r.stdout, /cluster-admin/);
  });

  it("refuses a stack that deploys nothing to a cluster, and one whose file does not exist, naming it", () => {
    const local = operatorStack(["--stack", "o/winfleet/local", "--repo", "https://example.test/r"]);
    assert.equal(local.code, 1);
    assert.match(local.stderr, /stack local deploys nothing to a cluster/);
    const none = operatorStack(["--stack", "o/winfleet/nope", "--repo", "https://example.test/r"]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /Pulumi\.nope\.yaml[\s\S]*no such stack file/);
    assert.equal(none.stdout, "");
  });
});
