/**
 * What the engine last wrote, per file: the fingerprint of the entry that wrote
 * it and the digest and mode of the result. Ignition runs once and never needs
 * this; an agent re-applies, so the ledger is what makes a re-apply of an
 * append or a no-overwrite file a no-op instead of an error, and what drift
 * verification compares the host against.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { writeFileAtomic } from "../common";

const ledgerSchema = z.object({
  version: z.literal(1),
  files: z.record(
    z.string(),
    z.object({ fingerprint: z.string(), sha512: z.string(), mode: z.number().int(), host: z.string() }),
  ),
});

/** The ledger's contents. */
export type Ledger = z.infer<typeof ledgerSchema>;
/** One file's record. */
export type LedgerRecord = Ledger["files"][string];

/** An empty ledger. */
export function emptyLedger(): Ledger {
  return { version: 1, files: {} };
}

/** Reads a ledger; a missing file is an empty ledger, a corrupt one is an error. */
export async function readLedger(path: string): Promise<Ledger> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return emptyLedger();
    throw e;
  }
  return ledgerSchema.parse(JSON.parse(text));
}

/** Writes a ledger atomically. */
export async function writeLedger(path: string, ledger: Ledger): Promise<void> {
  const sorted = Object.fromEntries(Object.entries(ledger.files).sort(([a], [b]) => (a < b ? -1 : 1)));
  await writeFileAtomic(path, `${JSON.stringify({ version: 1, files: sorted }, null, 2)}\n`, {
    mode: 0o600,
    makeParents: true,
  });
}

/** SHA-512 hex of bytes. */
export function sha512(data: Uint8Array): string {
  return createHash("sha512").update(data).digest("hex");
}
