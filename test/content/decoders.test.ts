/**
 * Every configuration file the Windows content generates, for every template
 * and Windows Server release (test/content/generated.ts renders them from the
 * scripts' parse trees), read by the decoder of the program that reads it on
 * the node, built from that program's Go module (scripts/engines): containerd's
 * config.toml by containerd 1.7's loader and its CRI plugin (which also loads
 * the CNI directory with go-cni), the kubelet's KubeletConfiguration by the
 * kubelet's, kube-proxy's KubeProxyConfiguration by kube-proxy's. Each decoder
 * is also shown to refuse what its program refuses. Calico's CNI configuration
 * is written on the node by the operator's containers since Calico 3.31; the
 * one the content wrote up to 1.0.0 (test/fixtures/content-1.0.0) goes through
 * Calico's plugin decode and libcni, which refuse it as every pod sandbox did.
 * Beside the decoders, the kubelet's eviction thresholds are read from the
 * same rendered file: the kubelet accepts any, so only a comparison with its
 * own defaults shows one dropped.
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

/** The content as 1.0.0 shipped it, whose calico component wrote the CNI configuration itself. */
const CONTENT_1_0_0 = join(__dirname, "..", "fixtures", "content-1.0.0");

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
let shipped: GeneratedFile[] = [];
before(async () => {
  files = await generatedFiles(await loadCatalog(CONTENT));
  shipped = await generatedFiles(await loadCatalog(CONTENT_1_0_0), undefined, CONTENT_1_0_0);
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
  it("renders the three the content writes for every kubeadm template on 2019, 2022 and 2025", () => {
    for (const template of ["win2019", "win2022", "win2025"]) {
      for (const r of WINDOWS_RELEASES) {
        const kinds = files
          .filter((f) => f.template.startsWith(`${template}-`) && f.release === r.name)
          .map((f) => f.kind);
        assert.deepEqual(kinds.sort(), ["containerd", "kube-proxy", "kubelet"], `${template} on ${r.name}`);
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

  it("containerd loads the CNI directory its config names, with a Calico CNI configuration in it", () => {
    // What Calico's CNI configuration looked like when the content wrote it: containerd's loading of the
    // directory does not depend on which program wrote the file.
    const cni = shipped.find((x) => x.kind === "cni" && x.template === "win2022-1.0.0" && x.release === "2022");
    assert.ok(cni, "1.0.0's CNI configuration");
    for (const f of files.filter((x) => x.kind === "containerd")) {
      const confDir = join(scratch, f.template, f.release, "cni");
      place({ ...cni, template: f.template, release: f.release, text: cni.text.replace('"false"', "true") });
      const r = run("containerd", ["-print", "-cni-conf-dir", confDir, place(f)]);
      assert.equal(r.status, 0, r.output);
      const resolved = JSON.parse(r.stdout) as Record<string, unknown>;
      assert.equal(resolved.cniBinDir, "C:\\opt\\cni\\bin");
      assert.equal(resolved.cniConfDir, "C:\\etc\\cni\\net.d");
      assert.equal(resolved.sandboxImage, "mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.2");
      assert.deepEqual(resolved.networks, ["Calico"]);
    }
  });

  it("DSR is on for kube-proxy on every release the templates target (17763.1432 and later)", () => {
    for (const f of files.filter((x) => x.kind === "kube-proxy")) {
      const r = run("kube-proxy", ["-print", place(f)]);
      assert.equal(r.status, 0, r.output);
      assert.equal((JSON.parse(r.stdout) as { winkernel: { EnableDSR: boolean } }).winkernel.EnableDSR, true);
    }
  });
});

/**
 * The Windows kubelet's hard eviction thresholds when its configuration sets
 * none: DefaultEvictionHard in k8s.io/kubernetes pkg/kubelet/eviction/defaults_windows.go
 * at the version scripts/engines/kubernetes pins (memory 500Mi there, 100Mi on
 * Linux). A configuration that sets evictionHard replaces them as a whole.
 */
const WINDOWS_EVICTION_HARD: Readonly<Record<string, string>> = {
  "memory.available": "500Mi",
  "nodefs.available": "10%",
  "imagefs.available": "15%",
};

const BINARY_UNITS: Readonly<Record<string, number>> = { "": 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };

/** An eviction threshold as bytes or a percentage, or undefined when it is neither. */
function threshold(text: string | undefined): { unit: "bytes" | "%"; value: number } | undefined {
  const m = /^(\d+(?:\.\d+)?)(%|Ki|Mi|Gi|Ti)?$/.exec(text ?? "");
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2] === "%" ? { unit: "%", value: n } : { unit: "bytes", value: n * (BINARY_UNITS[m[2] ?? ""] ?? 1) };
}

describe("the kubelet's eviction thresholds (read from the generated configuration, no decoder needed)", () => {
  it("keep each signal the Windows kubelet evicts on by default, memory's among them, no lower, on every template and release", () => {
    const kubelet = files.filter((f) => f.kind === "kubelet");
    assert.equal(kubelet.length, 9, "three kubeadm templates on three releases");
    for (const f of kubelet) {
      assert.equal(f.error, undefined, `${f.template} on ${f.release}`);
      const hard = (JSON.parse(f.text) as { evictionHard?: Record<string, string> }).evictionHard ?? {};
      for (const [signal, byDefault] of Object.entries(WINDOWS_EVICTION_HARD)) {
        const at = `${f.template} on ${f.release}: evictionHard ${signal}`;
        assert.ok(signal in hard, `${at} is missing, so the kubelet never evicts on it`);
        const set = threshold(hard[signal]);
        const floor = threshold(byDefault);
        assert.ok(
          set && floor && set.unit === floor.unit,
          `${at} is ${hard[signal]}, not comparable with ${byDefault}`,
        );
        assert.ok(set.value >= floor.value, `${at} is ${hard[signal]}, below the kubelet's default ${byDefault}`);
      }
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

  it("Calico: windows_loopback_DSR as a string, as 1.0.0's calico component wrote it (every pod sandbox failed on it)", () => {
    const released = shipped.filter((x) => x.kind === "cni");
    assert.equal(released.length, 9, "three kubeadm templates on three releases");
    for (const f of released) {
      const r = run("cni", [place(f)]);
      assert.equal(r.status, 1, `${f.template} on ${f.release}: ${r.output}`);
      assert.match(
        r.output,
        /failed to load netconf: json: cannot unmarshal string into Go struct field NetConf\.windows_loopback_DSR of type bool/,
      );
    }
    const fixed = (t: string): string =>
      t.replace(/"windows_loopback_DSR": "(true|false)"/, '"windows_loopback_DSR": true');
    const one = released[0] as GeneratedFile;
    const ok = run("cni", [place({ ...one, template: "fixed", text: fixed(one.text) })]);
    assert.equal(ok.status, 0, `the same configuration with a boolean decodes: ${ok.output}`);
    const typo = run("cni", [
      place({ ...one, template: "typo", text: fixed(one.text).replace('"vxlan_vni"', '"vxlanVNI"') }),
    ]);
    assert.equal(typo.status, 1, typo.output);
    assert.match(typo.output, /key "vxlanVNI": no decoder on the node reads it/);
  });

  it("Calico: the decode is the plugin's, not a string check (the same file, any string value, refused)", () => {
    const one = shipped.find((x) => x.kind === "cni") as GeneratedFile;
    const r = run("cni", [
      place({
        ...one,
        template: "broken",
        text: one.text.replace(/"windows_loopback_DSR": "(true|false)"/, '"windows_loopback_DSR": "yes"'),
      }),
    ]);
    assert.equal(r.status, 1, r.output);
    assert.match(r.output, /cannot unmarshal string into Go struct field NetConf\.windows_loopback_DSR of type bool/);
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
