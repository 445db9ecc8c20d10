/**
 * Signed bundles. A bundle (the agent's or the content's) is a directory; its
 * signature file lists the SHA-256 of every other file in it, and the release
 * version, and carries an ed25519 signature over both. A node that pins a public key refuses a
 * bundle that is unsigned, tampered with (a file differs, is missing or was
 * added) or signed by another key, each with its own message, before it reads
 * anything else from it: verification changes nothing.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from "node:crypto";
import { type Dirent, constants, existsSync } from "node:fs";
import { type FileHandle, mkdir, open, readdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { z } from "zod";
import { ed25519PrivateKeyProblem, AgentError, AgentErrorCode, writeFileAtomic, canonicalJson } from "../common";
import { RELEASE_VERSION } from "./anti-rollback";

/** The signature file at a bundle's top. */
export const SIGNATURE_FILE = "winfleet-signature.json";

const signedFields = {
  /** SHA-256 (hex) of each file, by path relative to the bundle, `/`-separated. */
  files: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)),
  /** SHA-256 of the signing public key (DER), to tell keys apart in messages. */
  keyId: z.string().regex(/^[0-9a-f]{64}$/),
  /** ed25519 signature (base64) over the canonical JSON of every other field. */
  signature: z.string().min(1),
};

// Format 1 carries no release version (still read: a node that has accepted no versioned bundle takes
// it); format 2 signs the version too, which is what lets a node refuse an older release (anti-rollback.ts).
const signatureSchema = z.discriminatedUnion("format", [
  z.strictObject({ format: z.literal(1), ...signedFields }),
  z.strictObject({ format: z.literal(2), version: z.string().regex(RELEASE_VERSION), ...signedFields }),
]);

/** How a bundle failed verification. */
export type VerifyFailure = "unsigned" | "tampered" | "wrongly signed";

/** What {@link verifyBundle} established. */
export interface VerifiedBundle {
  readonly files: number;
  readonly digests: Readonly<Record<string, string>>;
  /** The signing (pinned) key's id: SHA-256 of its DER, hex. */
  readonly keyId: string;
  /** The signed release version; undefined when the signature carries none (format 1). */
  readonly version: string | undefined;
}

/** A refused bundle: `kind` says which of the three ways. */
export class BundleVerificationError extends AgentError {
  constructor(
    readonly kind: VerifyFailure,
    message: string,
  ) {
    super(AgentErrorCode.InvalidInput, message);
    this.name = "BundleVerificationError";
  }
}

/** A bundle's entries: regular files, directories, and anything else. */
interface Tree {
  readonly files: string[];
  /** Every directory below the top, so one that holds no file (which no digest covers) is seen. */
  readonly dirs: string[];
  /** Symbolic links, pipes, sockets and devices, with what each is: never signed, always refused. */
  readonly special: { readonly rel: string; readonly kind: string }[];
}

function specialKind(entry: Dirent): string {
  if (entry.isSymbolicLink()) return "a symbolic link";
  if (entry.isFIFO()) return "a named pipe";
  if (entry.isSocket()) return "a socket";
  return "a device";
}

// Entries are told apart by their directory entry, without following links or opening anything: a
// named pipe planted in a bundle would otherwise hang the read that digests it.
async function walk(dir: string, tree: Tree = { files: [], dirs: [], special: [] }, top = dir): Promise<Tree> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const rel = relative(top, path).split(sep).join("/");
    if (entry.isDirectory()) {
      tree.dirs.push(rel);
      await walk(path, tree, top);
    } else if (entry.isFile()) tree.files.push(rel);
    else tree.special.push({ rel, kind: specialKind(entry) });
  }
  return tree;
}

/** The first directory of `dirs` that holds none of `files` at any depth, if any. */
function emptyDirectory(dirs: readonly string[], files: Iterable<string>): string | undefined {
  const holding = new Set<string>();
  for (const f of files) {
    for (let at = f.indexOf("/"); at !== -1; at = f.indexOf("/", at + 1)) holding.add(f.slice(0, at));
  }
  return dirs.find((d) => !holding.has(d));
}

// Opened without following a link or waiting on a pipe, and read only if it is still a regular
// file: an entry swapped between the walk and the read is refused, not followed.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

async function readRegular(path: string): Promise<Buffer | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, READ_FLAGS);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ELOOP") return undefined;
    throw e;
  }
  try {
    return (await handle.stat()).isFile() ? await handle.readFile() : undefined;
  } finally {
    await handle.close();
  }
}

// A null-prototype record: a file named after an Object.prototype member (`constructor`,
// `__proto__`) is an entry like any other, never an inherited property or a prototype change.
async function digests(dir: string, files: readonly string[]): Promise<Record<string, string>> {
  const out = Object.create(null) as Record<string, string>;
  for (const rel of files.filter((f) => f !== SIGNATURE_FILE).sort()) {
    const bytes = await readRegular(join(dir, ...rel.split("/")));
    if (bytes === undefined)
      throw new BundleVerificationError(
        "tampered",
        `${dir} was tampered with: ${rel} stopped being a regular file while it was read`,
      );
    out[rel] = createHash("sha256").update(bytes).digest("hex");
  }
  return out;
}

/**
 * The SHA-256 of every file in `dir` but the signature file, sorted by path.
 * Throws when `dir` holds anything but regular files and directories, which no
 * bundle may hold (a link could point anywhere once installed), or a directory
 * with no file in it, which no digest would cover.
 */
export async function digestTree(dir: string): Promise<Record<string, string>> {
  const tree = await walk(dir);
  const odd = tree.special[0];
  if (odd !== undefined)
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${dir}: ${odd.rel} is ${odd.kind}; a bundle holds only regular files and directories`,
    );
  const empty = emptyDirectory(tree.dirs, tree.files);
  if (empty !== undefined)
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${dir}: ${empty}/ holds no file, and a signature covers only files; remove it or put its file in`,
    );
  // JSON readers (zod's records among them) drop a `__proto__` key, so no signature could cover it.
  if (tree.files.includes("__proto__"))
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${dir}: __proto__ cannot be signed (a signature's file list cannot hold the name __proto__); rename it`,
    );
  return digests(dir, tree.files);
}

function keyId(publicKeyPem: string): string {
  return createHash("sha256")
    .update(createPublicKey(publicKeyPem).export({ type: "spki", format: "der" }))
    .digest("hex");
}

/**
 * Signs the bundle in `dir` with an ed25519 private key (PEM), writing its
 * signature file; with a `version`, the release version is signed too (format
 * 2), so a node can refuse an older release replayed to it.
 */
export async function signBundle(
  dir: string,
  privateKeyPem: string,
  version?: string,
): Promise<{ files: number; keyId: string }> {
  const problem = ed25519PrivateKeyProblem(privateKeyPem);
  if (problem !== undefined) throw new AgentError(AgentErrorCode.InvalidInput, `the signing key ${problem}`);
  if (version !== undefined && !RELEASE_VERSION.test(version))
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `release version ${JSON.stringify(version)} is not a version such as 1.4.0`,
    );
  const key = createPrivateKey(privateKeyPem);
  const files = await digestTree(dir);
  const id = keyId(createPublicKey(key).export({ type: "spki", format: "pem" }).toString());
  const body =
    version === undefined
      ? { format: 1 as const, files, keyId: id }
      : { format: 2 as const, version, files, keyId: id };
  const signature = sign(null, Buffer.from(canonicalJson(body)), key).toString("base64");
  await writeFileAtomic(join(dir, SIGNATURE_FILE), `${canonicalJson({ ...body, signature })}\n`);
  return { files: Object.keys(files).length, keyId: id };
}

/**
 * Verifies the bundle in `dir` against the pinned public key (PEM); throws a
 * {@link BundleVerificationError} saying how it failed, naming the file when
 * one was changed, removed or added. Returns the signed SHA-256 of each file,
 * for a reader that must see the bytes that were checked, and the signing key's
 * id and the signed release version (undefined for a format-1 signature).
 */
export async function verifyBundle(dir: string, publicKeyPem: string): Promise<VerifiedBundle> {
  let bytes: Buffer | undefined;
  try {
    bytes = await readRegular(join(dir, SIGNATURE_FILE));
  } catch {
    throw new BundleVerificationError(
      "unsigned",
      `${dir} is unsigned (no ${SIGNATURE_FILE}), and this agent accepts only bundles signed with its pinned key`,
    );
  }
  if (bytes === undefined)
    throw new BundleVerificationError("tampered", `${dir} was tampered with: ${SIGNATURE_FILE} is not a regular file`);
  const text = bytes.toString("utf8");
  let parsed: z.infer<typeof signatureSchema>;
  try {
    parsed = signatureSchema.parse(JSON.parse(text));
  } catch {
    throw new BundleVerificationError("tampered", `${dir}: ${SIGNATURE_FILE} is not a winfleet signature`);
  }
  const { signature, ...body } = parsed;
  const pinned = keyId(publicKeyPem);
  const ok = verify(
    null,
    Buffer.from(canonicalJson(body)),
    createPublicKey(publicKeyPem),
    Buffer.from(signature, "base64"),
  );
  if (!ok) {
    if (body.keyId === pinned)
      throw new BundleVerificationError(
        "tampered",
        `${dir} was tampered with: ${SIGNATURE_FILE} no longer matches its signature`,
      );
    throw new BundleVerificationError(
      "wrongly signed",
      `${dir} is wrongly signed: it is signed by key ${body.keyId.slice(0, 16)}…, not the pinned key ${pinned.slice(0, 16)}…`,
    );
  }
  const tree = await walk(dir);
  const odd = tree.special[0];
  if (odd !== undefined)
    throw new BundleVerificationError(
      "tampered",
      `${dir} was tampered with: ${odd.rel} is ${odd.kind}, which no signed bundle holds`,
    );
  const actual = await digests(dir, tree.files);
  for (const [rel, digest] of Object.entries(body.files)) {
    if (!Object.hasOwn(actual, rel))
      throw new BundleVerificationError("tampered", `${dir} was tampered with: ${rel} is missing`);
    if (actual[rel] !== digest)
      throw new BundleVerificationError("tampered", `${dir} was tampered with: ${rel} differs from what was signed`);
  }
  // Own keys only: `in` would also find inherited names, letting unsigned files called `constructor` through.
  const extra = Object.keys(actual).find((rel) => !Object.hasOwn(body.files, rel));
  if (extra !== undefined)
    throw new BundleVerificationError("tampered", `${dir} was tampered with: ${extra} was added after signing`);
  // A signed bundle's directories are exactly those its files are in.
  const addedDir = emptyDirectory(tree.dirs, Object.keys(body.files));
  if (addedDir !== undefined)
    throw new BundleVerificationError("tampered", `${dir} was tampered with: ${addedDir}/ was added after signing`);
  return {
    files: Object.keys(body.files).length,
    digests: body.files,
    keyId: pinned,
    version: body.format === 2 ? body.version : undefined,
  };
}

/** Writes a new ed25519 key pair: `<prefix>.key` (PKCS#8 PEM, mode 0600) and `<prefix>.pub` (SPKI PEM). */
export async function generateKeys(prefix: string): Promise<{ privateKey: string; publicKey: string; keyId: string }> {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const pub = publicKey.export({ type: "spki", format: "pem" }).toString();
  const files = { privateKey: `${prefix}.key`, publicKey: `${prefix}.pub` };
  // Both or neither: a half-written pair would be refused on the next try anyway, but confusingly.
  for (const f of Object.values(files))
    if (existsSync(f)) throw Object.assign(new Error(`${f} exists`), { code: "EEXIST" });
  // A new folder for keys is private to its owner, like the key itself.
  await mkdir(dirname(files.privateKey), { recursive: true, mode: 0o700 });
  await writeFile(files.privateKey, privateKey.export({ type: "pkcs8", format: "pem" }).toString(), {
    mode: 0o600,
    flag: "wx",
  });
  await writeFile(files.publicKey, pub, { flag: "wx" });
  return { ...files, keyId: keyId(pub) };
}
