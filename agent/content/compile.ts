/**
 * Compiling a component source into its Ignition file: the metadata at
 * `/bin/metadata/<name>_<version>.metadata`, small files embedded as data URLs,
 * large ones shipped in the bundle as `bundle:///` references, all with sha512.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { canonicalJson } from "../common";
import { encodeDataUrl, parseIgnition } from "../ignition";
import { type ComponentMetadata, metadataPath } from "./schema";
import type { ComponentSource } from "./source";

/** Files up to this size are embedded in the Ignition file. @default 64 KiB */
export const DEFAULT_EMBED_LIMIT = 64 * 1024;

/** A component compiled to Ignition, plus the files it references in the bundle. */
export interface CompiledComponent {
  readonly name: string;
  readonly version: string;
  readonly ignition: string;
  readonly shipped: readonly { readonly bundlePath: string; readonly data: Buffer }[];
}

/** Hex digest. */
export const sha = (alg: "sha256" | "sha512", data: Uint8Array): string => createHash(alg).update(data).digest("hex");

/** Compiles one component source (already validated) into its Ignition file. */
export async function compileComponent(
  source: ComponentSource,
  metadata: ComponentMetadata,
  embedLimit = DEFAULT_EMBED_LIMIT,
): Promise<CompiledComponent> {
  const shipped: { bundlePath: string; data: Buffer }[] = [];
  const metadataBytes = Buffer.from(`${canonicalJson(metadata)}\n`);
  const files: { path: string; data: Buffer; mode: number }[] = [
    { path: metadataPath(metadata.name, metadata.version), data: metadataBytes, mode: 0o644 },
  ];
  for (const f of source.files)
    files.push({ path: `/${f.rel}`, data: await readFile(f.abs), mode: f.executable ? 0o755 : 0o644 });
  const entries = files
    .sort((a, b) => (a.path < b.path ? -1 : 1))
    .map((f) => {
      let url: string;
      if (f.data.length <= embedLimit) url = encodeDataUrl(f.data);
      else {
        const bundlePath = `components/${metadata.name}/${metadata.version}/files${f.path}`;
        shipped.push({ bundlePath, data: f.data });
        url = `bundle:///${bundlePath.split("/").map(encodeURIComponent).join("/")}`;
      }
      return {
        path: f.path,
        mode: f.mode,
        overwrite: true,
        contents: { source: url, verification: { hash: `sha512-${sha("sha512", f.data)}` } },
      };
    });
  const ignition = `${canonicalJson({ ignition: { version: "3.3.0" }, storage: { files: entries } })}\n`;
  parseIgnition(ignition, { subject: `compiled ${metadata.name}_${metadata.version}` }); // a build must never emit an invalid config
  return { name: metadata.name, version: metadata.version, ignition, shipped };
}
