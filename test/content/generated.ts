/**
 * The configuration files the Windows content generates on a node, rendered
 * here without PowerShell: each is a data expression in a script (a hashtable
 * ConvertTo-Json writes, a here-string), read from the script's parse tree
 * (agent/content/powershell-literal.ts) with the values a node of the given
 * template and Windows build would give its variables — the template's
 * variables, then each component's defaults, then the values a node computes
 * (the content root C:\, the node name, DSR by build as Resolve-WinfleetDsr
 * decides it, the run-time source VIP). The script's own assignments (`$x = Get-WinfleetVariable -Name 'X'`,
 * `$y = Join-Path $root '…'`) are followed in order, so a renamed variable or
 * a changed path shows up here as it would on the node. What this does not
 * run: the commands around the expression (a throw on a bad value, the file
 * written with ConvertTo-Json's own escaping).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Catalog, compareVersions } from "../../agent/content";
import { parsePowerShell } from "../../agent/content/powershell-syntax";
import { NotLiteral, type PsValue, literalValue } from "../../agent/content/powershell-literal";
import { pickTemplate, resolveTarget } from "../../agent/lifecycle";
import { CONTENT } from "./shipped";

/** A Windows Server release the templates target, with the build facts that change generated files. */
export interface WindowsRelease {
  readonly name: string;
  readonly build: number;
  /** The update revision (UBR): 17763.1432 is the first 2019 build with DSR. */
  readonly revision: number;
}

/** The releases every generated file is rendered for. */
export const WINDOWS_RELEASES: readonly WindowsRelease[] = [
  { name: "2019", build: 17763, revision: 1432 },
  { name: "2022", build: 20348, revision: 169 },
  { name: "2025", build: 26100, revision: 1742 },
];

/** Which decoder reads a generated file. */
export type GeneratedKind = "cni" | "containerd" | "kubelet" | "kube-proxy";

/** One generated file. */
export interface GeneratedFile {
  readonly template: string;
  readonly release: string;
  readonly component: string;
  readonly kind: GeneratedKind;
  /** Its name on the node. */
  readonly name: string;
  readonly text: string;
  /** Why it could not be rendered (the script no longer holds it as data); its text is then empty. */
  readonly error?: string;
}

/** Where a generated file comes from: the script, the variable holding it, how it is written. */
interface Source {
  readonly component: string;
  readonly script: string;
  readonly variable: string;
  readonly kind: GeneratedKind;
  readonly name: string;
  readonly format: "json" | "text";
  /** Only versions of the component before this one write the file (a later one leaves it to another program). */
  readonly before?: string;
}

const SOURCES: readonly Source[] = [
  {
    component: "calico",
    script: "install.ps1",
    variable: "cniConfig",
    kind: "cni",
    name: "10-calico.conf",
    format: "json",
    // From 3.31 the operator's containers write Calico's CNI configuration, not the content.
    before: "3.31",
  },
  {
    component: "containerd",
    script: "install.ps1",
    variable: "toml",
    kind: "containerd",
    name: "config.toml",
    format: "text",
  },
  {
    component: "kubelet",
    script: "install.ps1",
    variable: "configuration",
    kind: "kubelet",
    name: "config.yaml",
    format: "json",
  },
  {
    component: "kube-proxy",
    script: "kube-proxy-service.ps1",
    variable: "configuration",
    kind: "kube-proxy",
    name: "config.json",
    format: "json",
  },
];

type Node = Awaited<ReturnType<typeof parsePowerShell>>["tree"]["rootNode"];

const READERS = /^(Get|Assert)-WinfleetVariable$/i;

/** The variable a `Get-/Assert-WinfleetVariable -Name 'X' [-Default 'd']` call reads, if `node` is one. */
function variableRead(node: Node): { name: string; default?: string } | undefined {
  const call = [node, ...node.descendantsOfType("command")].find(
    (c) => c.type === "command" && READERS.test(c.children.find((x) => x.type === "command_name")?.text ?? ""),
  );
  if (!call) return undefined;
  const text = call.text;
  const name = /-Name\s+'([A-Z0-9_]+)'/.exec(text)?.[1];
  if (!name) return undefined;
  const def = /-Default\s+'([^']*)'/.exec(text)?.[1];
  return def === undefined ? { name } : { name, default: def };
}

/**
 * The script's top-level assignments followed in order with `facts` as the
 * node's values; returns the value `variable` ends with.
 */
async function evaluate(
  source: string,
  variable: string,
  values: (name: string) => string | undefined,
  computed: ReadonlyMap<string, PsValue>,
  dsrSupported: boolean,
): Promise<PsValue> {
  const { tree } = await parsePowerShell(source);
  const vars = new Map<string, PsValue>(computed);
  let result: PsValue | undefined;
  for (const a of tree.rootNode.descendantsOfType("assignment_expression")) {
    // Top level only: an assignment inside a function or a loop body is not followed.
    let p = a.parent;
    let topLevel = true;
    while (p) {
      if (["function_statement", "foreach_statement", "while_statement", "script_block_expression"].includes(p.type))
        topLevel = false;
      p = p.parent;
    }
    if (!topLevel) continue;
    const left = a.namedChildren[0]?.text.trim().replace(/^\$/, "").toLowerCase() ?? "";
    const right = a.namedChildren[a.namedChildren.length - 1];
    if (!right || !/^[a-z0-9_]+$/.test(left)) continue;
    if (computed.has(left)) continue;
    const read = variableRead(right);
    if (read && /Resolve-WinfleetDsr/i.test(right.text)) {
      // Resolve-WinfleetDsr: 'auto' is what the build supports.
      const v = values(read.name) ?? read.default ?? "";
      vars.set(left, v === "auto" ? dsrSupported : v === "true");
    } else if (read) {
      const v = values(read.name) ?? read.default ?? "";
      vars.set(left, /^\s*\[int\]/i.test(right.text) ? Number(v) : v);
    } else {
      try {
        vars.set(left, literalValue(right, vars));
      } catch (e) {
        if (!(e instanceof NotLiteral)) throw e;
      }
    }
    if (left === variable.toLowerCase() && vars.has(left)) result = vars.get(left);
  }
  if (result === undefined) throw new Error(`${variable} is not plain data in the script`);
  const placeholder = JSON.stringify(result).match(/"\$[a-z0-9_]+"|\$[a-z0-9_]+/i);
  if (placeholder) throw new Error(`${variable} reads ${placeholder[0]}, which the render gives no value`);
  return result;
}

/** Every configuration file the content (in `dir`) generates, for each template and Windows release. */
export async function generatedFiles(
  catalog: Catalog,
  releases = WINDOWS_RELEASES,
  dir = CONTENT,
): Promise<GeneratedFile[]> {
  const out: GeneratedFile[] = [];
  for (const template of catalog.templates) {
    if (template.name.startsWith("sandbox")) continue;
    const resolved = resolveTarget(catalog, pickTemplate(catalog, { name: template.name, version: template.version }));
    for (const release of releases) {
      const dsr = release.build > 17763 || release.revision >= 1432;
      for (const s of SOURCES) {
        const c = resolved.components.find((x) => x.name === s.component);
        if (!c || (s.before !== undefined && compareVersions(c.version, s.before) >= 0)) continue;
        const values = (name: string): string | undefined =>
          template.variables[name] ?? c.metadata.variables?.[name]?.default ?? NODE_VALUES[name];
        const computed = new Map<string, PsValue>([
          ["root", "C:"],
          // kube-proxy's install resolves KUBE_PROXY_ENABLE_DSR and hands the wrapper true or false.
          ["enabledsr", dsr],
          ["sourcevip", "10.244.1.2"],
          ["featuregates", {}],
          ["taints", []],
          ["nodename", "winnode-0"],
          ["network", values("KUBE_PROXY_NETWORK_NAME") ?? "Calico"],
          ["kubeconfig", "C:\\etc\\kubernetes\\kube-proxy.conf"],
          ["clustercidr", ""],
        ]);
        const file = join(dir, "components", c.name, c.version, "files", "k", "winfleet", s.component, s.script);
        const at = {
          template: `${template.name}-${template.version}`,
          release: release.name,
          component: `${c.name} ${c.version}`,
          kind: s.kind,
          name: s.name,
        };
        try {
          const value = await evaluate(readFileSync(file, "utf8"), s.variable, values, computed, dsr);
          if (s.format === "text" && typeof value !== "string") throw new Error(`${s.variable} is not text`);
          out.push({ ...at, text: typeof value === "string" ? value : JSON.stringify(value, null, 2) });
        } catch (e) {
          out.push({ ...at, text: "", error: `${s.script}: ${e instanceof Error ? e.message : String(e)}` });
        }
      }
    }
  }
  return out;
}

/** What the agent and a stack give every node (the node's name, the cluster's service CIDR default). */
const NODE_VALUES: Readonly<Record<string, string>> = {
  WINFLEET_NODE_NAME: "winnode-0",
};
