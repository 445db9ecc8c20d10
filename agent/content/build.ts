/**
 * The content build: every component source becomes one Ignition file (its
 * metadata at `/bin/metadata/<name>_<version>.metadata`, small files embedded as
 * data URLs, large ones shipped beside it as `bundle:///` references, all with
 * sha512), templates are normalised, and a manifest lists every artifact with
 * its SHA-256. Same input, byte-identical output; the output directory is
 * replaced in one rename, never left half-written.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { canonicalJson, ValidationError, type OutputShape, assertReplaceable, replaceDirectory } from "../common";
import { SIGNATURE_FILE } from "../release";
import { DEFAULT_EMBED_LIMIT, sha } from "./compile";
import { validateContent } from "./validate";

/** One file of the bundle, as the manifest lists it. */
export interface Artifact {
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
}

/** The bundle manifest (`manifest.json`). */
export interface BundleManifest {
  readonly format: 1;
  readonly templates: readonly (Artifact & { name: string; version: string })[];
  readonly components: readonly (Artifact & { name: string; version: string })[];
  /** Large component files shipped beside the Ignition files. */
  readonly files: readonly Artifact[];
}

/** Builds `contentDir` into `outDir`; throws {@link ValidationError} listing every content problem. */
export async function buildContent(
  contentDir: string,
  outDir: string,
  embedLimit = DEFAULT_EMBED_LIMIT,
): Promise<BundleManifest> {
  const checked = await validateContent(contentDir, embedLimit);
  const errors = checked.problems.filter((p) => p.severity === "error");
  if (errors.length > 0) throw new ValidationError(`content in ${contentDir}`, checked.problems);

  await assertReplaceable(outDir, CONTENT_BUNDLE_SHAPE);
  await mkdir(dirname(outDir), { recursive: true });
  const staging = await mkdtemp(join(dirname(outDir), `.${basename(outDir)}.building-`));
  try {
    const put = async (rel: string, data: string | Buffer): Promise<Artifact> => {
      const file = join(staging, ...rel.split("/"));
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, data);
      const bytes = typeof data === "string" ? Buffer.from(data) : data;
      return { path: rel, sha256: sha("sha256", bytes), size: bytes.length };
    };
    const templates = [];
    for (const t of checked.templates) {
      templates.push({
        name: t.name,
        version: t.version,
        ...(await put(`templates/${t.name}_${t.version}.json`, `${canonicalJson(t)}\n`)),
      });
    }
    const components = [];
    const shipped: Artifact[] = [];
    for (const { compiled: c } of checked.components) {
      components.push({
        name: c.name,
        version: c.version,
        ...(await put(`components/${c.name}_${c.version}.ign`, c.ignition)),
      });
      for (const s of c.shipped) shipped.push(await put(s.bundlePath, s.data));
    }
    const manifest: BundleManifest = { format: 1, templates, components, files: shipped };
    await put("manifest.json", `${canonicalJson(manifest)}\n`);
    await replaceDirectory(staging, outDir, CONTENT_BUNDLE_SHAPE);
    return manifest;
  } catch (e) {
    await rm(staging, { recursive: true, force: true });
    throw e;
  }
}

/** What a built content bundle holds at its top (a signed one also its signature file). */
export const CONTENT_BUNDLE_SHAPE: OutputShape = {
  what: "a content bundle",
  marker: "manifest.json",
  owns: (e) =>
    e.isFile()
      ? e.name === "manifest.json" || e.name === SIGNATURE_FILE
      : e.isDirectory() && (e.name === "templates" || e.name === "components"),
};
