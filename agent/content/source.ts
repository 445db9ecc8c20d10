/**
 * Reads the content tree as sources: `templates/*.json` and
 * `components/<name>/<version>/{metadata.json, files/…}`. `files/` mirrors the
 * host from the system drive's root: `files/k/kubelet.ps1` lands at `/k/kubelet.ps1`.
 */
import { lstat, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";

/** A template file as found. */
export interface TemplateSource {
  readonly file: string;
  readonly text: string;
}

/** One file a component lays down. */
export interface ComponentFile {
  /** Path below `files/`, with `/` separators. */
  readonly rel: string;
  readonly abs: string;
  readonly executable: boolean;
}

/** A component version's sources. */
export interface ComponentSource {
  readonly name: string;
  readonly version: string;
  readonly dir: string;
  readonly metadataFile: string;
  readonly metadataText: string | undefined;
  readonly files: readonly ComponentFile[];
}

async function entries(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
}

async function walkFiles(root: string, rel = ""): Promise<ComponentFile[]> {
  const out: ComponentFile[] = [];
  for (const name of await entries(join(root, rel))) {
    const childRel = rel === "" ? name : `${rel}/${name}`;
    const abs = join(root, childRel);
    const s = await lstat(abs);
    if (s.isDirectory()) out.push(...(await walkFiles(root, childRel)));
    else if (s.isFile()) out.push({ rel: childRel, abs, executable: (s.mode & 0o111) !== 0 });
  }
  return out;
}

/** Reads every template and component source under `contentDir`, in sorted order. */
export async function readContentTree(
  contentDir: string,
): Promise<{ templates: TemplateSource[]; components: ComponentSource[] }> {
  const templates: TemplateSource[] = [];
  for (const name of await entries(join(contentDir, "templates"))) {
    if (!name.endsWith(".json")) continue;
    const file = join(contentDir, "templates", name);
    templates.push({ file, text: await readFile(file, "utf8") });
  }
  const components: ComponentSource[] = [];
  for (const name of await entries(join(contentDir, "components"))) {
    for (const version of await entries(join(contentDir, "components", name))) {
      const dir = join(contentDir, "components", name, version);
      if (!(await lstat(dir)).isDirectory()) continue;
      const metadataFile = join(dir, "metadata.json");
      let metadataText: string | undefined;
      try {
        metadataText = await readFile(metadataFile, "utf8");
      } catch {
        metadataText = undefined;
      }
      components.push({ name, version, dir, metadataFile, metadataText, files: await walkFiles(join(dir, "files")) });
    }
  }
  return { templates, components };
}
