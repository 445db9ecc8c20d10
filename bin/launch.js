"use strict";
// Resolves a CLI entry: the TypeScript source when present (a checkout, run through
// tsx), otherwise the compiled JavaScript under dist/ (a release bundle).
const fs = require("node:fs");
const path = require("node:path");

exports.launch = function launch(entry) {
  const root = path.resolve(__dirname, "..");
  const source = path.join(root, entry + ".ts");
  if (fs.existsSync(source)) {
    require("tsx/cjs");
    require(source);
    return;
  }
  require(path.join(root, "dist", entry + ".js"));
};
