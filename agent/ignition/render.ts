/**
 * Renders the internal model as a spec 3.x document. This is the 2.2 → 3.x
 * translation (every 2.x default is already explicit in the model, so the 3.x
 * document means exactly what the 2.2 one did) and the output format of the
 * content build. Keys are emitted in a fixed order so output is byte-stable.
 */
import type { IgnitionConfig, Resource } from "./model";

function resource(r: Resource): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.compression) out.compression = r.compression;
  if (r.httpHeaders.length > 0)
    out.httpHeaders = r.httpHeaders.map((h) =>
      h.value === undefined ? { name: h.name } : { name: h.name, value: h.value },
    );
  if (r.source !== undefined) out.source = r.source;
  if (r.hash) out.verification = { hash: `${r.hash.function}-${r.hash.hex}` };
  return out;
}

/** The model as a 3.x config object of `version` (default 3.3.0, the newest CoreOS Ignition 2.14 reads). */
export function renderV3(config: IgnitionConfig, version = "3.3.0"): Record<string, unknown> {
  const storage: Record<string, unknown> = {};
  if (config.directories.length > 0) {
    storage.directories = config.directories.map((d) => ({
      ...(d.mode !== undefined ? { mode: d.mode } : {}),
      overwrite: d.overwrite,
      path: d.path,
    }));
  }
  if (config.files.length > 0) {
    storage.files = config.files.map((f) => ({
      ...(f.append.length > 0 ? { append: f.append.map(resource) } : {}),
      ...(f.contents ? { contents: resource(f.contents) } : {}),
      ...(f.mode !== undefined ? { mode: f.mode } : {}),
      overwrite: f.overwrite,
      path: f.path,
    }));
  }
  if (config.links.length > 0) {
    storage.links = config.links.map((l) => ({ hard: l.hard, overwrite: l.overwrite, path: l.path, target: l.target }));
  }
  return { ignition: { version }, ...(Object.keys(storage).length > 0 ? { storage } : {}) };
}
