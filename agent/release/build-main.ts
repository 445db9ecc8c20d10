/**
 * `npm run build`: both single-file bundles into dist/ (see build.ts for the
 * layout). Prints what it made; exit 1 with the reason when esbuild fails.
 */
import { relative } from "node:path";
import { errorMessage } from "../common";
import { buildBundles, repositoryRoot } from "./build";

const started = performance.now();
buildBundles(repositoryRoot()).then(
  (result) => {
    for (const b of result.bundles) {
      process.stdout.write(
        `built ${relative(process.cwd(), b.lib)} (${(b.bytes / 1024).toFixed(0)} KiB; ${b.sources} files tracked for staleness)\n`,
      );
    }
    process.stdout.write(
      `winfleet ${result.version} bundled in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
    );
  },
  (e: unknown) => {
    process.stderr.write(`build failed: ${errorMessage(e)}\n`);
    process.exitCode = 1;
  },
);
