/**
 * Generates spec 2.2.0 configs: `filesystem: "root"`, 2.x defaults (files
 * overwrite, unset modes), append as a boolean with repeated entries per path.
 */
import { type ApplyCase, encodeResource } from "./corpus-apply";
import { Rng } from "../support";

/** `count` 2.2 cases from `seed`. */
export function v22Corpus(seed: number, count: number): ApplyCase[] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, (_, i) => {
    const files: Record<string, unknown>[] = [];
    const directories: Record<string, unknown>[] = [];
    const used = new Set<string>();
    for (let n = 0; n < 1 + rng.int(5); n++) {
      const path = `/${rng.pick(["a", "b", "c"])}/${rng.pick(["x", "y", "z.ps1", "w.json"])}`;
      if (rng.chance(0.2) && !used.has(path.split("/").slice(0, 2).join("/"))) {
        directories.push({
          filesystem: "root",
          path: path.split("/").slice(0, 2).join("/"),
          mode: rng.pick([0o755, 0o700]),
        });
        used.add(path.split("/").slice(0, 2).join("/"));
        continue;
      }
      const contents = encodeResource(rng, rng.bytes(rng.int(60), true), 0);
      const file: Record<string, unknown> = { filesystem: "root", path, contents };
      if (used.has(path)) file.append = true;
      else if (rng.chance(0.2)) file.append = true;
      if (rng.chance(0.7)) file.mode = rng.pick([420, 384, 493]);
      files.push(file);
      used.add(path);
    }
    const pre =
      rng.chance(0.3) && files.length > 0
        ? [{ path: files[0]?.path as string, type: "file" as const, data: Buffer.from("existing\n"), mode: 0o644 }]
        : [];
    return { name: `v22-${i}`, config: { ignition: { version: "2.2.0" }, storage: { files, directories } }, pre };
  });
}
