/**
 * Every configuration file the Windows content generates, for every template
 * and Windows Server release (test/content/generated.ts renders them from the
 * scripts' parse trees), read by the decoder of the program that reads it on
 * the node, built from that program's Go module (scripts/engines): Calico's
 * CNI configuration by Calico's plugin decode and libcni, containerd's
 * config.toml by containerd 1.7's loader and its CRI plugin (which also loads
 * the CNI directory with go-cni), the kubelet's KubeletConfiguration by the
 * kubelet's, kube-proxy's KubeProxyConfiguration by kube-proxy's. Each decoder
 * is also shown to refuse what its program refuses.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { EngineMissingError, findEngines } from "../../agent/cluster/engines";
import { loadCatalog } from "../../agent/content";
import { scratchDir } from "../support";
import { type GeneratedFile, type GeneratedKind, WINDOWS_RELEASES, generatedFiles } from "./generated";
import { CONTENT } from "./shipped";

/** Each decoder: its engine and binary. */
const DECODERS: Readonly<Record<GeneratedKind, { engine: string; binary: string }>> = {
  cni: { engine: "calico", binary: "calico-cni-config-validate" },
  containerd: { engine: "containerd", binary: "containerd-config-validate" },
  kubelet: { engine: "kubernetes", binary: "kubelet-config-validate" },
  "kube-proxy": { engine: "kube-proxy", binary: "kube-proxy-config-validate" },
};

/** The binaries set-up built, or why the tests are skipped; in CI their absence is a failure. */
function decoders(): { readonly paths: Record<GeneratedKind, string> } | { readonly skip: string } {
  try {
    const engines = findEngines([...new Set(Object.values(DECODERS).map((d) => d.engine))]);
    const paths = Object.fromEntries(
      Object.entries(DECODERS).map(([kind, d]) => [kind, engines[d.engine]?.binaries[d.binary] ?? ""]),
    ) as Record<GeneratedKind, string>;
    return { paths };
  } catch (e) {
    if (!(e instanceof EngineMissingError)) throw e;
    const reason = `the decoders are not built: ${e.message}`;
    if (process.env.CI === "true") throw new Error(`CI requires ${reason}`);
    process.stderr.write(`SKIPPED: ${reason}\n`);
    return { skip: reason };
  }
}

const found = decoders();
const scratch = scratchDir("decoders-");

function run(kind: GeneratedKind, args: readonly string[]): { status: number | null; output: string; stdout: string } {
  if (!("paths" in found)) throw new Error("no decoders");
  const r = spawnSync(found.paths[kind], args, { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}`, stdout: r.stdout };
}

let files: GeneratedFile[] = [];
before(async () => {
  files = await generatedFiles(await loadCatalog(CONTENT));
});

/** Writes a generated file where its decoder reads it; the CNI configuration in a directory of its own. */
function place(f: GeneratedFile): string {
  const dir = join(scratch, f.template, f.release, f.kind);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, f.name);
  writeFileSync(path, f.text);
  return path;
}

describe("the generated files under their programs' decoders", { skip: "skip" in found ? found.skip : false }, () => {
  it("renders all four for every kubeadm template on 2019, 2022 and 2025", () => {
    for (const template of ["win2019", "win2022", "win2025"]) {
      for (const r of WINDOWS_RELEASES) {
        const kinds = files
          .filter((f) => f.template.startsWith(`${template}-`) && f.release === r.name)
          .map((f) => f.kind);
        assert.deepEqual(kinds.sort(), ["cni", "containerd", "kube-proxy", "kubelet"], `${template} on ${r.name}`);
      }
    }
  });

  it("each decoder accepts each file", () => {
    const refused: string[] = [];
    for (const f of files) {
      if (f.error) {
        refused.push(`${f.template} on ${f.release}, ${f.component}: not rendered: ${f.error}`);
        continue;
      }
      const r = run(f.kind, [place(f)]);
      if (r.status !== 0) refused.push(`${f.template} on ${f.release}, ${f.component}: ${r.output.trim()}`);
    }
    assert.deepEqual(refused, []);
  });

  it("containerd loads the CNI directory its config names, with the generated CNI configuration in it", () => {
    for (const f of files.filter((x) => x.kind === "containerd")) {
      const cni = files.find((x) => x.kind === "cni" && x.template === f.template && x.release === f.release);
      assert.ok(cni, `${f.template} has a CNI configuration`);
      const confDir = join(scratch, f.template, f.release, "cni");
      place(cni);
      const r = run("containerd", ["-print", "-cni-conf-dir", confDir, place(f)]);
      assert.equal(r.status, 0, r.output);
      const resolved = JSON.parse(r.stdout) as Record<string, unknown>;
      assert.equal(resolved.cniBinDir, "C:\\opt\\cni\\bin");
      assert.equal(resolved.cniConfDir, "C:\\etc\\cni\\net.d");
      assert.equal(resolved.sandboxImage, "mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.2");
      assert.deepEqual(resolved.networks, ["Calico"]);
    }
  });

  it("DSR is on for the CNI and kube-proxy on every release the templates target (17763.1432 and later)", () => {
    for (const f of files.filter((x) => x.kind === "cni")) {
      const r = run("cni", ["-print", place(f)]);
      assert.equal(r.status, 0, r.output);
      const [conf] = JSON.parse(r.stdout) as { windows_loopback_DSR?: boolean }[];
      assert.equal(conf?.windows_loopback_DSR, true, `${f.template} on ${f.release}`);
    }
    for (const f of files.filter((x) => x.kind === "kube-proxy")) {
      const r = run("kube-proxy", ["-print", place(f)]);
      assert.equal(r.status, 0, r.output);
      assert.equal((JSON.parse(r.stdout) as { winkernel: { EnableDSR: boolean } }).winkernel.EnableDSR, true);
    }
  });
});

describe("the decoders refuse what their programs refuse", { skip: "skip" in found ? found.skip : false }, () => {
  const one = (kind: GeneratedKind): GeneratedFile => {
    const f = files.find((x) => x.kind === kind);
    assert.ok(f, kind);
    return f;
  };
  const broken = (kind: GeneratedKind, edit: (text: string) => string): string =>
    place({ ...one(kind), template: "broken", text: edit(one(kind).text) });

  it("Calico: windows_loopback_DSR as a string (what every pod sandbox failed on)", () => {
    const r = run("cni", [
      broken("cni", (t) => t.replace('"windows_loopback_DSR": true', '"windows_loopback_DSR": "false"')),
    ]);
    assert.equal(r.status, 1, r.output);
    assert.match(
      r.output,
      /failed to load netconf: json: cannot unmarshal string into Go struct field NetConf\.windows_loopback_DSR of type bool/,
    );
    const typo = run("cni", [broken("cni", (t) => t.replace('"vxlan_vni"', '"vxlanVNI"'))]);
    assert.equal(typo.status, 1, typo.output);
    assert.match(typo.output, /key "vxlanVNI": no decoder on the node reads it/);
  });

  it("containerd: a containerd 2.x key 1.7 ignores, and a config version it refuses", () => {
    const r = run("containerd", [broken("containerd", (t) => t.replace("bin_dir =", "bin_dirs ="))]);
    assert.equal(r.status, 1, r.output);
    assert.match(r.output, /cni\.bin_dirs: containerd CniConfig has no such setting/);
    const v3 = run("containerd", [broken("containerd", (t) => t.replace("version = 2", "version = 3"))]);
    assert.equal(v3.status, 1, v3.output);
    assert.match(v3.output, /unsupported config version `3`/);
  });

  it("kube-proxy: a mode Windows does not have, and a misspelt field", () => {
    const r = run("kube-proxy", [broken("kube-proxy", (t) => t.replace('"kernelspace"', '"iptables"'))]);
    assert.equal(r.status, 1, r.output);
    assert.match(r.output, /on Windows must be "kernelspace"/);
    const typo = run("kube-proxy", [broken("kube-proxy", (t) => t.replace('"sourceVip"', '"sourceVIP2"'))]);
    assert.equal(typo.status, 1, typo.output);
    assert.match(typo.output, /unknown field "winkernel\.sourceVIP2"/);
  });

  it("the kubelet: more pods than the kubelet takes is still its call; a negative maxPods it refuses", () => {
    const r = run("kubelet", [broken("kubelet", (t) => t.replace(/"maxPods": \d+/, '"maxPods": -1'))]);
    assert.equal(r.status, 1, r.output);
    assert.match(r.output, /maxPods/);
  });
});
