/**
 * The paths an Ignition config lays down. A module of its own so that reading
 * a recorded component (status, verify) does not load the catalog, with its
 * validation and PowerShell checks.
 */
import type { IgnitionConfig } from "../ignition";

/** Config paths of everything a config lays down. */
export function configPaths(config: IgnitionConfig): string[] {
  return [...config.files, ...config.directories, ...config.links].map((e) => e.path);
}
