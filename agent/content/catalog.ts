/**
 * What the agent applies from: a content directory read into templates and
 * components. Three layouts are accepted, so content arrives however it was
 * made: a built bundle (`manifest.json` + `templates/*.json` +
 * `components/*.ign`, every artifact checked against the manifest's
 * SHA-256), a content source tree (`components/<name>/<version>/metadata.json`,
 * compiled in memory), or loose files (any `*.ign` component and any template
 * JSON below the directory, as the 2019 prototype served them).
 */
import { createHash } from "node:crypto";
import { readFile, readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { z } from "zod";
import { ValidationError } from "../common";
import { configPaths } from "./config-paths";
import { type Component, loadComponent, parseTemplate } from "./load";
import type { Template } from "./schema";
import { validateContent } from "./validate";

/** A component ready to apply. */
export interface CatalogComponent extends Component {
  /** The Ignition file's text, recorded on the host when the component is laid down. */
  readonly ignition: string;
  /** Config paths of every node the component lays down. */
  readonly paths: readonly string[];
  /** Where it came from, for messages. */
  readonly source: string;
}

/** A content directory, read. */
export interface Catalog {
  readonly dir: string;
  readonly layout: "bundle" | "source" | "loose";
  readonly templates: readonly Template[];
  /** By `<name>_<version>`. */
  readonly components: ReadonlyMap<string, CatalogComponent>;
  /** SHA-256 of the bundle manifest (bundles), or of every template and component (other layouts). */
  readonly digest: string;
}

const manifestSchema = z.object({
  format: z.literal(1),
  templates: z.array(z.object({ path: z.string(), sha256: z.string() })),
  components: z.array(z.object({ path: z.string(), sha256: z.string() })),
  files: z.array(z.object({ path: z.string(), sha256: z.string() })).default([]),
});

const MAX_DEPTH = 4;

/** How {@link loadCatalog} reads. */
export interface LoadOptions {
  /** Accept components whose Ignition config only warns. */
  readonly lenient?: boolean;
  /**
   * The SHA-256 of each file as its signature was checked: the content must
   * then be a built bundle, and its manifest.json (which pins every other
   * file's digest) must still be the one that was signed.
   */
  readonly signed?: Readonly<Record<string, string>>;
}

/** Reads a content directory; throws a {@link ValidationError} listing every problem. */
export async function loadCatalog(dir: string, options: LoadOptions = {}): Promise<Catalog> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory())
    throw new ValidationError(dir, [
      {
        path: "",
        message: "is not a content directory (a built bundle, a content source tree or a folder of .ign files)",
        severity: "error",
      },
    ]);
  if (options.signed !== undefined && options.signed["manifest.json"] === undefined) {
    throw new ValidationError(dir, [
      {
        path: "",
        message:
          "is signed but not a built content bundle (no manifest.json among its signed files): only bundles from winfleet release are applied under a pinned key",
        severity: "error",
      },
    ]);
  }
  if (options.signed !== undefined || (await exists(join(dir, "manifest.json")))) return loadBundle(dir, options);
  if (
    (await readdir(join(dir, "components")).catch(() => [])).length > 0 &&
    (await hasSourceComponents(join(dir, "components")))
  )
    return loadSource(dir);
  return loadLoose(dir, options);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function hasSourceComponents(componentsDir: string): Promise<boolean> {
  for (const name of await readdir(componentsDir)) {
    for (const version of await readdir(join(componentsDir, name)).catch(() => [])) {
      if (await exists(join(componentsDir, name, version, "metadata.json"))) return true;
    }
  }
  return false;
}

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex");

async function loadBundle(dir: string, options: LoadOptions): Promise<Catalog> {
  const manifestBytes = await readFile(join(dir, "manifest.json"));
  const signedManifest = options.signed?.["manifest.json"];
  if (signedManifest !== undefined && sha256(manifestBytes) !== signedManifest) {
    throw new ValidationError(join(dir, "manifest.json"), [
      { path: "", message: "changed after the bundle's signature was checked: refused", severity: "error" },
    ]);
  }
  const manifestText = manifestBytes.toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(manifestText);
  } catch (e) {
    throw new ValidationError(join(dir, "manifest.json"), [
      { path: "", message: `not valid JSON: ${(e as Error).message}`, severity: "error" },
    ]);
  }
  const manifest = manifestSchema.safeParse(parsed);
  if (!manifest.success)
    throw new ValidationError(join(dir, "manifest.json"), [
      { path: "", message: "is not a content bundle manifest", severity: "error" },
    ]);
  const problems: { path: string; message: string; severity: "error" }[] = [];
  const read = async (entry: { path: string; sha256: string }): Promise<string | undefined> => {
    const data = await readFile(join(dir, ...entry.path.split("/"))).catch(() => undefined);
    if (!data)
      problems.push({ path: entry.path, message: "is listed in manifest.json but missing", severity: "error" });
    else if (sha256(data) !== entry.sha256)
      problems.push({
        path: entry.path,
        message: `SHA-256 is ${sha256(data)}, the manifest says ${entry.sha256}: the bundle was changed after it was built`,
        severity: "error",
      });
    else return data.toString("utf8");
    return undefined;
  };
  const templates: Template[] = [];
  for (const t of manifest.data.templates) {
    const text = await read(t);
    if (text !== undefined) templates.push(parseTemplate(text, t.path).value);
  }
  const components = new Map<string, CatalogComponent>();
  for (const c of manifest.data.components) {
    const text = await read(c);
    if (text !== undefined) await addComponent(components, text, join(dir, c.path), options, problems);
  }
  if (problems.length > 0) throw new ValidationError(`content bundle ${dir}`, problems);
  return { dir, layout: "bundle", templates, components, digest: sha256(manifestText) };
}

async function loadSource(dir: string): Promise<Catalog> {
  const checked = await validateContent(dir);
  const errors = checked.problems.filter((p) => p.severity === "error");
  if (errors.length > 0) throw new ValidationError(`content in ${dir}`, errors);
  const components = new Map<string, CatalogComponent>();
  const problems: { path: string; message: string; severity: "error" }[] = [];
  for (const c of checked.components) await addComponent(components, c.compiled.ignition, c.source.dir, {}, problems);
  if (problems.length > 0) throw new ValidationError(`content in ${dir}`, problems);
  return {
    dir,
    layout: "source",
    templates: checked.templates,
    components,
    digest: digestOf(checked.templates, components),
  };
}

async function loadLoose(dir: string, options: { lenient?: boolean }): Promise<Catalog> {
  const files = await walk(dir, 0);
  const templates: Template[] = [];
  const components = new Map<string, CatalogComponent>();
  const problems: { path: string; message: string; severity: "error" }[] = [];
  for (const file of files) {
    const rel = relative(dir, file);
    if (file.endsWith(".ign")) {
      await addComponent(components, await readFile(file, "utf8"), file, options, problems);
    } else if (file.endsWith(".template") || file.endsWith(".json")) {
      const text = await readFile(file, "utf8");
      if (!looksLikeTemplate(text)) continue;
      try {
        templates.push(parseTemplate(text, rel, options).value);
      } catch (e) {
        if (!(e instanceof ValidationError)) throw e;
        problems.push(
          ...e.issues
            .filter((i) => i.severity === "error")
            .map((i) => ({
              path: `${rel}${i.path ? `: ${i.path}` : ""}`,
              message: i.message,
              severity: "error" as const,
            })),
        );
      }
    }
  }
  if (problems.length > 0) throw new ValidationError(`content in ${dir}`, problems);
  if (templates.length === 0 && components.size === 0) {
    throw new ValidationError(dir, [
      {
        path: "",
        message:
          "holds no templates and no components (expected a built bundle, a content source tree, or *.ign files and template JSON)",
        severity: "error",
      },
    ]);
  }
  return { dir, layout: "loose", templates, components, digest: digestOf(templates, components) };
}

function looksLikeTemplate(text: string): boolean {
  return /"packages"\s*:/.test(text);
}

async function walk(dir: string, depth: number): Promise<string[]> {
  if (depth > MAX_DEPTH) return [];
  const out: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full, depth + 1)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

async function addComponent(
  into: Map<string, CatalogComponent>,
  text: string,
  source: string,
  options: { lenient?: boolean },
  problems: { path: string; message: string; severity: "error" }[],
): Promise<void> {
  try {
    const { value } = await loadComponent(text, source, { lenient: options.lenient });
    const key = `${value.metadata.name}_${value.metadata.version}`;
    const other = into.get(key);
    if (other) {
      problems.push({ path: source, message: `is ${key} again (also ${other.source})`, severity: "error" });
      return;
    }
    into.set(key, { ...value, ignition: text, paths: configPaths(value.config), source });
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    problems.push(
      ...e.issues
        .filter((i) => i.severity === "error")
        .map((i) => ({
          path: `${source}${i.path ? `: ${i.path}` : ""}`,
          message: i.message,
          severity: "error" as const,
        })),
    );
  }
}

function digestOf(templates: readonly Template[], components: ReadonlyMap<string, CatalogComponent>): string {
  const h = createHash("sha256");
  for (const t of templates) h.update(JSON.stringify(t));
  for (const key of [...components.keys()].sort()) h.update(components.get(key)?.ignition ?? "");
  return h.digest("hex");
}
