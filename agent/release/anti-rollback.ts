/**
 * Anti-rollback. A signature proves who made a bundle, not that it is the
 * newest: an old signed release replayed to a node would put back whatever
 * the newer one fixed. So a node remembers, per signing key and per kind of
 * bundle (agent, content), the highest release version it has accepted, in
 * `<root>/.winfleet/accepted-versions.json`, and refuses an older one, or one
 * whose signature carries no version once a versioned one was accepted.
 * An operator can override that for one run (`--allow-downgrade`, or
 * `allowDowngrade` in the agent config); the override is logged and reported,
 * and the version it accepted becomes the one recorded.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import {
  agentStateDir,
  canonicalJson,
  AgentError,
  AgentErrorCode,
  errorMessage,
  readFileIn,
  STATE_DIR_NAME,
  writeFileIn,
} from "../common";

/** The file under `<root>/.winfleet/` that holds the accepted versions. */
export const ACCEPTED_VERSIONS_FILE = "accepted-versions.json";

/** A release version: semantic versioning's `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`. */
export const RELEASE_VERSION =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

/** What a bundle is; each kind has its own record, since a node may take content and agent upgrades apart. */
export type BundleKind = "agent" | "content";

const version = z.string().regex(RELEASE_VERSION, "expected a release version such as 1.4.0");
const recordSchema = z.strictObject({
  format: z.literal(1),
  /** By signing key id (SHA-256 of the public key, hex). */
  keys: z.record(
    z.string().regex(/^[0-9a-f]{64}$/),
    z.strictObject({ agent: version.optional(), content: version.optional() }),
  ),
});
type Record_ = z.infer<typeof recordSchema>;

/** What verification established about a bundle: who signed it, and the version the signature covers, if any. */
export interface SignedRelease {
  readonly keyId: string;
  readonly version: string | undefined;
}

/** A downgrade that was let through: what was recorded, and what was accepted instead. */
export interface AllowedDowngrade {
  readonly kind: BundleKind;
  readonly keyId: string;
  readonly from: string;
  /** undefined when the bundle's signature carries no version. */
  readonly to: string | undefined;
}

/** A refused downgrade. */
export class DowngradeRefusedError extends AgentError {
  constructor(
    readonly downgrade: AllowedDowngrade,
    dir: string,
  ) {
    const key = `key ${downgrade.keyId.slice(0, 16)}…`;
    const what =
      downgrade.to === undefined ? `its signature carries no release version` : `it is version ${downgrade.to}`;
    super(
      AgentErrorCode.PermissionDenied,
      `${dir} is refused as a downgrade: ${what}, and this node has already accepted ${downgrade.kind} version ${downgrade.from} signed with ${key}; pass --allow-downgrade (allowDowngrade in the agent config) to accept it anyway`,
    );
    this.name = "DowngradeRefusedError";
  }
}

function parts(v: string): { core: number[]; pre: string[] } {
  const m = RELEASE_VERSION.exec(v);
  if (!m) throw new AgentError(AgentErrorCode.InvalidInput, `${v} is not a release version`);
  return { core: [Number(m[1]), Number(m[2]), Number(m[3])], pre: m[4] === undefined ? [] : m[4].split(".") };
}

/** Orders release versions as semantic versioning does (build metadata ignored): negative, 0 or positive. */
export function compareVersions(a: string, b: string): number {
  const x = parts(a);
  const y = parts(b);
  for (let i = 0; i < 3; i++) if (x.core[i] !== y.core[i]) return (x.core[i] ?? 0) - (y.core[i] ?? 0);
  // A pre-release sorts before its release.
  if (x.pre.length === 0 || y.pre.length === 0) return y.pre.length - x.pre.length;
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i];
    const q = y.pre[i];
    if (p === undefined || q === undefined) return p === undefined ? -1 : 1;
    if (p === q) continue;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return 0;
}

function recordFile(root: string): string {
  return join(root, STATE_DIR_NAME, ACCEPTED_VERSIONS_FILE);
}

// A record that cannot be read refuses everything rather than nothing: losing it must not reopen the door.
async function readRecord(root: string): Promise<Record_> {
  const file = recordFile(root);
  let text: string;
  try {
    const bytes = await readFileIn(agentStateDir(root), ACCEPTED_VERSIONS_FILE);
    if (bytes === undefined) return { format: 1, keys: {} };
    text = bytes.toString("utf8");
  } catch (e) {
    if (e instanceof AgentError) throw e;
    throw new AgentError(AgentErrorCode.FetchFailed, `cannot read ${file}: ${errorMessage(e)}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${file} is corrupt: not valid JSON (${(e as Error).message}); nothing was accepted`,
    );
  }
  const parsed = recordSchema.safeParse(doc);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${file} is corrupt at ${first?.path.join(".") || "(root)"}: ${first?.message ?? "unexpected shape"}; nothing was accepted`,
    );
  }
  return parsed.data;
}

/**
 * Refuses an agent bundle whose signed release version is not the version its
 * package.json gives, which is the one it installs as and reports: the record
 * would otherwise say one release while the node runs another.
 */
export async function assertAgentVersion(dir: string, signed: SignedRelease): Promise<void> {
  if (signed.version === undefined) return;
  let version: unknown;
  try {
    version = (JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as { version?: unknown }).version;
  } catch (e) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${dir}: package.json cannot be read as JSON (${(e as Error).message})`,
    );
  }
  if (version !== signed.version) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${dir} is signed as release ${signed.version}, but its package.json version is ${JSON.stringify(version)}; it is refused`,
    );
  }
}

/** The version recorded for `kind` under `keyId`, if any. */
export async function acceptedVersion(root: string, kind: BundleKind, keyId: string): Promise<string | undefined> {
  return (await readRecord(root)).keys[keyId]?.[kind];
}

/**
 * Checks a verified bundle against the record, changing nothing. Throws a
 * {@link DowngradeRefusedError} for an older (or unversioned) bundle unless
 * `allowDowngrade`; returns the downgrade it let through, if it let one through.
 */
export async function checkRelease(
  root: string,
  kind: BundleKind,
  dir: string,
  signed: SignedRelease,
  allowDowngrade: boolean,
): Promise<AllowedDowngrade | undefined> {
  const recorded = await acceptedVersion(root, kind, signed.keyId);
  if (recorded === undefined) return undefined;
  if (signed.version !== undefined && compareVersions(signed.version, recorded) >= 0) return undefined;
  const downgrade: AllowedDowngrade = { kind, keyId: signed.keyId, from: recorded, to: signed.version };
  if (!allowDowngrade) throw new DowngradeRefusedError(downgrade, dir);
  return downgrade;
}

/**
 * Records an accepted bundle's version: raised when it is newer, and set to it
 * when it was an allowed downgrade (the operator chose it; keeping the higher
 * one would ask for the override on every later run). An unversioned bundle
 * records nothing.
 */
export async function recordRelease(
  root: string,
  kind: BundleKind,
  signed: SignedRelease,
  downgraded: boolean,
): Promise<void> {
  if (signed.version === undefined) return;
  const record = await readRecord(root);
  const current = record.keys[signed.keyId]?.[kind];
  if (current !== undefined && !downgraded && compareVersions(signed.version, current) <= 0) return;
  if (current === signed.version) return;
  const keys = { ...record.keys, [signed.keyId]: { ...record.keys[signed.keyId], [kind]: signed.version } };
  await writeFileIn(agentStateDir(root), ACCEPTED_VERSIONS_FILE, `${canonicalJson({ format: 1, keys })}\n`, {
    mode: 0o644,
  });
}
