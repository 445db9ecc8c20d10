"use strict";
// Starts a command line from a checkout: the single-file bundle `npm run build`
// wrote under dist/ when there is one built from the sources as they are now,
// else the TypeScript sources through tsx. Whether a bundle is current is what
// dist/.build/<name>.json says: the size and mtime of every file it was built
// from (a stat each, about a millisecond in all), so an old build never runs in
// place of an edit. WINFLEET_LAUNCH=bundle insists on the bundle (refusing a
// missing or stale one, saying why); WINFLEET_LAUNCH=source runs the sources. A
// checkout without sources (a copied dist/) runs its bundle. A release has no
// launcher: its bin/ holds the bundle's entry itself.
const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");

/** The first input that changed since the build, "" when none did, or why there is no usable build. */
function staleness(name) {
  let record;
  try {
    record = JSON.parse(fs.readFileSync(path.join(root, "dist", ".build", `${name}.json`), "utf8"));
  } catch {
    return "no build record (run npm run build)";
  }
  for (const [rel, was] of Object.entries(record.inputs)) {
    const now = fs.statSync(path.join(root, rel), { throwIfNoEntry: false });
    if (!now) return `${rel} was removed`;
    if (now.size !== was.size || now.mtimeMs !== was.mtimeMs) return `${rel} changed`;
  }
  return "";
}

exports.launch = function launch(bundle, source) {
  const mode = process.env.WINFLEET_LAUNCH ?? "";
  const bundleFile = path.join(root, "dist", bundle.dir, bundle.file);
  const sourceFile = path.join(root, `${source}.ts`);
  if (mode !== "" && mode !== "bundle" && mode !== "source") {
    process.stderr.write(`WINFLEET_LAUNCH=${mode}: expected bundle or source\n`);
    process.exit(2);
  }
  const haveSources = fs.existsSync(sourceFile);
  if (mode !== "source") {
    const why = !fs.existsSync(bundleFile)
      ? `${path.relative(root, bundleFile)} does not exist (run npm run build)`
      : haveSources
        ? staleness(bundle.dir)
        : "";
    if (why === "") {
      require(bundleFile);
      return;
    }
    if (mode === "bundle" || !haveSources) {
      process.stderr.write(`cannot run the ${bundle.dir} bundle: ${why}\n`);
      process.exit(1);
    }
  }
  require("tsx/cjs");
  require(sourceFile);
};
