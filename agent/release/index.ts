/**
 * Bundles and their trust: the single-file bundle build, signatures and anti-rollback.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { type AllowedDowngrade, assertAgentVersion, checkRelease, recordRelease } from "./anti-rollback";
export { buildBundles } from "./build";
export {
  BundleVerificationError,
  generateKeys,
  SIGNATURE_FILE,
  signBundle,
  type VerifiedBundle,
  verifyBundle,
} from "./signing";
