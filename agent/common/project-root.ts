/**
 * The checkout the code runs from. From the sources that is two levels above
 * this file; the operator bundle (dist/winfleet/lib/winfleet.js) is built with
 * `WINFLEET_PROJECT_ROOT` naming the checkout relative to its own directory,
 * since a bundle's `__dirname` is where the bundle lies, not where this file was.
 */
import { resolve } from "node:path";

declare const WINFLEET_PROJECT_ROOT: string | undefined;

/** The repository root: where `stacks/`, `content/` and `bin/` are. */
export function projectRoot(): string {
  return typeof WINFLEET_PROJECT_ROOT === "string"
    ? resolve(__dirname, WINFLEET_PROJECT_ROOT)
    : resolve(__dirname, "..", "..");
}
