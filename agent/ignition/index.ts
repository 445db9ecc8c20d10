/** The Ignition engine's public surface. */
export { applyIgnition, resolveAll, type ApplyOptions, type ApplyReport } from "./apply";
export { decodeDataUrl, encodeDataUrl } from "./data-url";
export { resolveResource, type FetchOptions, type RetryPolicy } from "./fetch";
export { readLedger, sha512, type Ledger, type LedgerFile, updateLedger, writeLedger } from "./ledger";
export type {
  DirectoryEntry,
  Entry,
  FileEntry,
  Hash,
  IgnitionConfig,
  LinkEntry,
  NotApplicable,
  Resource,
} from "./model";
export { parseIgnition, SUPPORTED_VERSIONS, type ParseOptions, type ParsedIgnition } from "./parse";
export { reachesStateDir, refPath, rootedMapper, type HostRef, type PathMapper } from "./paths";
export { locateInRoot, openRootedFs, type RootedFs } from "./rooted-fs";
export { renderV3 } from "./render";
