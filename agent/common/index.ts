/**
 * Building blocks every layer uses: errors, logging, atomic files, canonical JSON, archives, keys and paths.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { AtomicWriteBatch, writeFileAtomic } from "./atomic-file";
export { BodyTooLargeError, readBodyLimited } from "./bounded-body";
export { canonicalJson } from "./canonical-json";
export { baseEnvironment } from "./child-environment";
export {
  DEFAULT_DRAIN,
  decodeDrainArgument,
  type DrainSettings,
  drainSettingsSchema,
  encodeDrainArgument,
} from "./drain-settings";
export {
  AGENT_NODE_FLAGS,
  defaultBrokerConfig,
  defaultInstallDir,
  defaultRoot,
  defaultRunDir,
  LINUX_AGENT_CONFIG,
  LINUX_BROKER_CONFIG,
  LINUX_INSTALL_DIR,
  WINDOWS_AGENT_CONFIG,
  WINDOWS_BROKER_CONFIG,
  WINDOWS_INSTALL_DIR,
  WINDOWS_NSSM,
} from "./defaults";
export { ed25519KeyProblem, ed25519PrivateKeyProblem, ed25519PublicKey } from "./ed25519-key";
export {
  AgentError,
  AgentErrorCode,
  errorMessage,
  formatIssues,
  formatPath,
  type Issue,
  type PathSegment,
  ValidationError,
} from "./errors";
export { IMPORT_EXTERNAL, importExternal } from "./import-external";
export { type LabelRequirement, type LabelSelector, matchesLabels, parseLabelSelector } from "./label-selector";
export { createLogger, type Logger } from "./log";
export { loopbackPeerUid } from "./loopback-peer";
export { assertReplaceable, type OutputShape, replaceDirectory } from "./output-dir";
export {
  checkBelow,
  fdPath,
  O_PATH_FLAG,
  openBelow,
  WalkError,
  type WalkOptions,
  walksByDescriptor,
} from "./no-follow";
export { printable } from "./printable";
export {
  agentStateDir,
  type ConfinedDir,
  confinedDir,
  readdirIn,
  readFileIn,
  readFileInSync,
  realPathOf,
  removeIn,
  STATE_DIR_NAME,
  type StateDirOptions,
  writeFileIn,
} from "./state-dir";
export { projectRoot } from "./project-root";
export { REDACTED, redactSecrets, secretField } from "./secret-fields";
export { MASK, maskBuffer, secretMasker } from "./secret-mask";
export { untar } from "./untar";
export { type TarEntry, tarGz } from "./ustar";
export { zodIssues } from "./zod-issues";
