"use strict";
// Starts a command line from a checkout: the TypeScript sources through tsx, or,
// with WINFLEET_LAUNCH=bundle, the single-file bundle `npm run build` wrote under
// dist/ — refused when missing or older than any file it was built from (the
// sizes and mtimes dist/.build/<name>.json recorded; a stat each, about a
// millisecond in all), so an old build never runs in place of an edit. A
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
  if (mode === "bundle" || !haveSources) {
    const why = !fs.existsSync(bundleFile) ? `${path.relative(root, bundleFile)} does not exist (run npm run build)` : haveSources ? staleness(bundle.dir) : "";
    if (why === "") {
      require(bundleFile);
      return;
    }
    process.stderr.write(`cannot run the ${bundle.dir} bundle: ${why}\n`);
    process.exit(1);
  }
  require("tsx/cjs");
  require(sourceFile);
};
