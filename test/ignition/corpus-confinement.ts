/**
 * fast-check generators for the root-confinement property: random root layouts
 * (directories, files, absolute and relative links that point inside the root,
 * at the sentinel tree beside it, or climb past the host's `/`, hard links to
 * the sentinel's files, and a state directory `/.winfleet` that is a link, holds
 * links or hard links where the agent keeps its files, or belongs to another
 * user) and random configs of every spec version the engine reads, whose paths
 * run through those links and sometimes into the state directory. Link targets
 * that name the sentinel are symbolic here and become text once the case's
 * directory is known.
 */
import { chmodSync, chownSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import fc from "fast-check";

/** A link target: literal text, or the sentinel (absolute, relative from the link, or climbing past `/`). */
export type TargetSpec =
  { readonly text: string } | { readonly outside: string; readonly form: "absolute" | "relative" | "climb" };

/** A node of a root layout. */
export type LayoutNode =
  | { readonly path: string; readonly type: "dir"; readonly mode: number; readonly foreign?: boolean }
  | { readonly path: string; readonly type: "file"; readonly mode: number; readonly data: string }
  | { readonly path: string; readonly type: "symlink"; readonly target: TargetSpec }
  | { readonly path: string; readonly type: "hardlink"; readonly to: "/secret" | "/d/keep" };

/** A config entry before it is written in a spec version's shape. */
export type EntrySpec =
  | {
      readonly kind: "file";
      readonly path: string;
      readonly contents?: string;
      readonly append?: string;
      readonly mode?: number;
      readonly overwrite?: boolean;
    }
  | { readonly kind: "directory"; readonly path: string; readonly mode?: number; readonly overwrite?: boolean }
  | {
      readonly kind: "link";
      readonly path: string;
      readonly target: TargetSpec;
      readonly hard: boolean;
      readonly overwrite?: boolean;
    };

/** One generated case. */
export interface ConfinementCase {
  readonly layout: readonly LayoutNode[];
  readonly version: string;
  readonly entries: readonly EntrySpec[];
}

/** Every spec version the engine accepts. */
export const VERSIONS = ["2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"] as const;

const SEGMENT = fc.constantFrom("a", "b", "c");
const PATH = fc.array(SEGMENT, { minLength: 1, maxLength: 3 }).map((s) => `/${s.join("/")}`);
/** The agent's state directory and what it keeps there. */
export const STATE = "/.winfleet";
const STATE_NAMES = [
  "components",
  "logs",
  "report-queue",
  "broker",
  "journal.json",
  "lock",
  "lock-key",
  "ignition-ledger.json",
  "accepted-versions.json",
] as const;
/** Config paths into the state directory, by its name, another case of it, and below it. */
const STATE_PATH = fc.constantFrom(
  STATE,
  `${STATE}/journal.json`,
  `${STATE}/components/a`,
  "/.WINFLEET/x",
  `${STATE}/a`,
);
const SENTINEL_SUB = fc.constantFrom("", "/d", "/d/e", "/secret", "/missing");
const TARGET: fc.Arbitrary<TargetSpec> = fc.oneof(
  fc
    .constantFrom(
      "/a",
      "/b",
      "/c",
      "/a/b",
      "/b/c",
      "b",
      "c",
      "../a",
      "../../b",
      "../../../../../c",
      ".",
      "..",
      "/",
      "a/../b",
      "/missing/x",
      STATE,
      `${STATE}/components`,
    )
    .map((text) => ({ text })),
  fc.record({
    outside: SENTINEL_SUB,
    form: fc.constantFrom<"absolute" | "relative" | "climb">("absolute", "relative", "climb"),
  }),
);
const HARD_TARGET: fc.Arbitrary<TargetSpec> = fc.oneof(
  fc
    .constantFrom("/a", "/a/b", "/b/c", "/c/a/b", "/a/../b", "/../../../a", "b/c", `${STATE}/lock-key`)
    .map((text) => ({ text })),
  fc.record({
    outside: fc.constantFrom("/secret", "/d/keep"),
    form: fc.constantFrom<"absolute" | "climb">("absolute", "climb"),
  }),
);
const MODE = fc.constantFrom(0o644, 0o600, 0o755, 0o700, 0o444);
const TEXT = fc.string({ maxLength: 12 });

const SENTINEL_DIR: fc.Arbitrary<TargetSpec> = fc.record({
  outside: fc.constantFrom("", "/d"),
  form: fc.constantFrom<"absolute" | "relative" | "climb">("absolute", "relative", "climb"),
});
const SENTINEL_ANY: fc.Arbitrary<TargetSpec> = fc.record({
  outside: fc.constantFrom("/d", "/secret", "/d/keep"),
  form: fc.constantFrom<"absolute" | "relative" | "climb">("absolute", "relative", "climb"),
});
const HARDLINK_TO = fc.constantFrom<"/secret" | "/d/keep">("/secret", "/d/keep");

/** What a prepared root may hold in its state directory: links and hard links out of it, another user's directory. */
const STATE_NODE: fc.Arbitrary<LayoutNode> = fc.oneof(
  fc.record({ path: fc.constant(STATE), type: fc.constant("symlink" as const), target: SENTINEL_DIR }),
  fc.record({ path: fc.constant(STATE), type: fc.constant("dir" as const), mode: MODE, foreign: fc.boolean() }),
  fc.record({
    path: fc.constantFrom(...STATE_NAMES).map((n) => `${STATE}/${n}`),
    type: fc.constant("symlink" as const),
    target: SENTINEL_ANY,
  }),
  fc.record({
    path: fc.constantFrom("journal.json", "lock-key", "ignition-ledger.json").map((n) => `${STATE}/${n}`),
    type: fc.constant("hardlink" as const),
    to: HARDLINK_TO,
  }),
  fc.record({
    path: fc.constantFrom(`${STATE}/components/c_1`, `${STATE}/broker/processes`, `${STATE}/logs/run`),
    type: fc.constant("symlink" as const),
    target: SENTINEL_DIR,
  }),
);

// Hard links and the state directory in about one layout in three, so most cases still compare with CoreOS.
const NODE: fc.Arbitrary<LayoutNode> = fc.oneof(
  { arbitrary: fc.record({ path: PATH, type: fc.constant("dir" as const), mode: MODE }), weight: 4 },
  { arbitrary: fc.record({ path: PATH, type: fc.constant("file" as const), mode: MODE, data: TEXT }), weight: 4 },
  { arbitrary: fc.record({ path: PATH, type: fc.constant("symlink" as const), target: TARGET }), weight: 8 },
  { arbitrary: fc.record({ path: PATH, type: fc.constant("hardlink" as const), to: HARDLINK_TO }), weight: 1 },
  { arbitrary: STATE_NODE, weight: 1 },
);

const ENTRY_PATH = fc.oneof({ arbitrary: PATH, weight: 20 }, { arbitrary: STATE_PATH, weight: 1 });

const ENTRY: fc.Arbitrary<EntrySpec> = fc.oneof(
  fc.record(
    {
      kind: fc.constant("file" as const),
      path: ENTRY_PATH,
      contents: TEXT,
      append: TEXT,
      mode: MODE,
      overwrite: fc.boolean(),
    },
    { requiredKeys: ["kind", "path"] },
  ),
  fc.record(
    { kind: fc.constant("directory" as const), path: ENTRY_PATH, mode: MODE, overwrite: fc.boolean() },
    { requiredKeys: ["kind", "path"] },
  ),
  fc.record(
    {
      kind: fc.constant("link" as const),
      path: ENTRY_PATH,
      target: TARGET,
      hard: fc.constant(false),
      overwrite: fc.boolean(),
    },
    { requiredKeys: ["kind", "path", "target", "hard"] },
  ),
  fc.record(
    {
      kind: fc.constant("link" as const),
      path: PATH,
      target: HARD_TARGET,
      hard: fc.constant(true),
      overwrite: fc.boolean(),
    },
    { requiredKeys: ["kind", "path", "target", "hard"] },
  ),
);

const under = (p: string, dir: string): boolean => p.startsWith(`${dir}/`);

/** Drops nodes a real tree cannot hold: duplicates, anything below a file or link, a leaf over a directory. */
function tidyLayout(nodes: readonly LayoutNode[]): LayoutNode[] {
  const kept: LayoutNode[] = [];
  for (const n of nodes) {
    if (n.path === "/etc" || under(n.path, "/etc")) continue;
    const clash = kept.some(
      (k) =>
        k.path === n.path || (k.type !== "dir" && under(n.path, k.path)) || (n.type !== "dir" && under(k.path, n.path)),
    );
    if (!clash) kept.push(n);
  }
  return kept;
}

/** Keeps configs mostly valid: unique paths, nothing below a link of the config's own. */
function tidyEntries(entries: readonly EntrySpec[]): EntrySpec[] {
  const kept: EntrySpec[] = [];
  for (const e of entries) {
    const clash = kept.some(
      (k) =>
        k.path === e.path ||
        (k.kind === "link" && under(e.path, k.path)) ||
        (e.kind === "link" && under(k.path, e.path)),
    );
    if (!clash) kept.push(e);
  }
  return kept;
}

/** The case generator. */
export const confinementCase: fc.Arbitrary<ConfinementCase> = fc.record({
  layout: fc.array(NODE, { maxLength: 7 }).map(tidyLayout),
  version: fc.constantFrom(...VERSIONS),
  entries: fc.array(ENTRY, { minLength: 1, maxLength: 6 }).map(tidyEntries),
});

/** The text of a link at config path `at` in a root at `base/root` beside the sentinel `base/outside`. */
export function targetText(spec: TargetSpec, at: string, base: string): string {
  if ("text" in spec) return spec.text;
  if (spec.form === "absolute") return `${base}/outside${spec.outside}`;
  const depth = at.split("/").length - 2; // directories between the root and the link
  if (spec.form === "relative") return `${"../".repeat(depth + 1)}outside${spec.outside}`;
  return `${"../".repeat(depth + 24)}${base.slice(1)}/outside${spec.outside}`;
}

/** Writes the sentinel tree: files, a directory tree, a link and a hard link, with distinct modes. */
export function writeSentinel(outside: string): void {
  mkdirSync(join(outside, "d", "e"), { recursive: true });
  writeFileSync(join(outside, "secret"), "secret");
  chmodSync(join(outside, "secret"), 0o640);
  writeFileSync(join(outside, "d", "keep"), "keep");
  chmodSync(join(outside, "d", "keep"), 0o600);
  writeFileSync(join(outside, "d", "e", "deep"), "deep");
  chmodSync(join(outside, "d"), 0o751);
  symlinkSync("secret", join(outside, "lnk"));
  linkSync(join(outside, "secret"), join(outside, "d", "hard"));
}

/** A user other than the one running the tests, to own a "foreign" directory (only root can give one away). */
const OTHER_UID = 65534;

/** Lays `layout` out below `root`. */
export function writeLayout(root: string, base: string, layout: readonly LayoutNode[]): void {
  for (const n of [...layout].sort((a, b) => a.path.split("/").length - b.path.split("/").length)) {
    const host = join(root, n.path);
    mkdirSync(dirname(host), { recursive: true });
    if (n.type === "dir") {
      mkdirSync(host, { recursive: true });
      chmodSync(host, n.mode);
      if (n.foreign && process.getuid?.() === 0) chownSync(host, OTHER_UID, OTHER_UID);
    } else if (n.type === "file") {
      writeFileSync(host, n.data);
      chmodSync(host, n.mode);
    } else if (n.type === "hardlink") linkSync(join(base, "outside", n.to), host);
    else symlinkSync(targetText(n.target, n.path, base), host);
  }
}

/**
 * Whether a case's result may depend on the agent's own rules rather than Ignition's: its state directory, hard
 * links.
 */
export function touchesAgentRules(c: ConfinementCase): boolean {
  const mentions = (p: string): boolean => p.toLowerCase().startsWith(STATE.toLowerCase());
  return (
    c.layout.some(
      (n) =>
        n.type === "hardlink" ||
        mentions(n.path) ||
        (n.type === "symlink" && "text" in n.target && mentions(n.target.text)),
    ) || c.entries.some((e) => mentions(e.path) || (e.kind === "link" && "text" in e.target && mentions(e.target.text)))
  );
}

const dataUrl = (text: string): string => `data:,${encodeURIComponent(text)}`;

/** The config document of a case, in its version's shape. */
export function configOf(c: ConfinementCase, base: string): Record<string, unknown> {
  const v2 = c.version === "2.2.0";
  const fs = v2 ? { filesystem: "root" } : {};
  const files: Record<string, unknown>[] = [];
  const directories: Record<string, unknown>[] = [];
  const links: Record<string, unknown>[] = [];
  for (const e of c.entries) {
    const common = {
      ...fs,
      path: e.path,
      ...(e.overwrite !== undefined && (!v2 || e.kind === "file") ? { overwrite: e.overwrite } : {}),
    };
    if (e.kind === "file") {
      const file: Record<string, unknown> = { ...common, ...(e.mode !== undefined ? { mode: e.mode } : {}) };
      if (v2) {
        if (e.contents !== undefined) file.contents = { source: dataUrl(e.contents) };
        if (e.append !== undefined && e.contents === undefined)
          Object.assign(file, { append: true, contents: { source: dataUrl(e.append) } });
      } else {
        if (e.contents !== undefined) file.contents = { source: dataUrl(e.contents) };
        if (e.append !== undefined) file.append = [{ source: dataUrl(e.append) }];
      }
      files.push(file);
    } else if (e.kind === "directory")
      directories.push({ ...common, ...(e.mode !== undefined ? { mode: e.mode } : {}) });
    else links.push({ ...common, target: targetText(e.target, e.path, base), ...(e.hard ? { hard: true } : {}) });
  }
  return { ignition: { version: c.version }, storage: { files, directories, links } };
}

/**
 * Whether CoreOS Ignition's result on this case depends only on the root. It
 * follows one link per path component relative to the root and leaves the
 * rest to the host, so a link whose target runs into another link (a chain)
 * is followed by the host, outside the root when absolute: such cases are
 * compared for confinement only.
 */
export function coreosConfined(c: ConfinementCase, base: string): boolean {
  const layoutLinks = new Map(
    c.layout.filter((n) => n.type === "symlink").map((n) => [n.path, targetText(n.target, n.path, base)]),
  );
  const reroot = (text: string, dir: string): string => posix.normalize(text.startsWith("/") ? text : `${dir}/${text}`);
  const join1 = (path: string): string => {
    let real = "/";
    const names = path.split("/").filter((n) => n !== "");
    for (const name of names.slice(0, -1)) {
      const here = posix.join(real, name);
      const text = layoutLinks.get(here);
      real = text === undefined ? here : reroot(text, posix.dirname(here));
    }
    return posix.join(real, names[names.length - 1] ?? "");
  };
  const links: [string, string][] = [...layoutLinks].map(([at, text]) => [at, reroot(text, posix.dirname(at))]);
  for (const e of c.entries) {
    if (e.kind === "link" && !e.hard) {
      const at = join1(e.path);
      links.push([at, reroot(targetText(e.target, e.path, base), posix.dirname(at))]);
    }
  }
  return links.every(([, to]) => links.every(([at]) => to !== at && !to.startsWith(`${at}/`)));
}
