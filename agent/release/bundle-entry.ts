/**
 * A bundle's `bin/` entry: runs the bundle in `lib/` through the code cache
 * (code-cache.ts). The build bundles this file once per command line, with
 * `WINFLEET_BUNDLE_LIB` naming the library relative to the entry.
 */
import { join } from "node:path";
import { runBundle } from "./code-cache";

declare const WINFLEET_BUNDLE_LIB: string;

runBundle(join(__dirname, WINFLEET_BUNDLE_LIB), process.argv[2] ?? "");
