/**
 * Join tokens per node, and their lifetime. kubeadm gives every node one shared
 * bootstrap token and lets the cluster approve any node name asked with it; a
 * winfleet stack instead derives a token of its own for each node it declares
 * by name (`byo` hosts, `vms` machines, `local` hosts) and one per scale set,
 * and winfleet's approver signs a CSR only for a name its token was made for
 * (`agent/cluster/node-approver.ts`).
 *
 * Tokens expire and rotate without anyone choosing new values: time is cut
 * into epochs of `lifetime`; the secrets of epoch `e` are derived from the
 * stack's token secret and `e`, and expire at the end of epoch `e + 1`, so a
 * token a stack declares is always good for at least one lifetime more. A run
 * of the program in a later epoch writes the next secret into the same token
 * (ids are the node's for good: the Secret keeps its name, so what may manage
 * it — the operator's Role — names it once), and the old secret stops working
 * at once. A token left past its expiry is deleted by the cluster's token
 * cleaner, and the next run creates it again (server-side apply).
 */
import { createHash, createHmac } from "node:crypto";

/** Which nodes a pool's tokens are for: each by name, or (a scale set) any name with a prefix. */
export type PoolNodes =
  { readonly pool: string; readonly names: readonly string[] } | { readonly pool: string; readonly prefix: string };

/** A derived token: its id, and the node (or, for a scale set, the name prefix) it may join as. */
export interface NodeToken {
  readonly pool: string;
  /** The one node name this token may obtain a certificate for. */
  readonly node?: string;
  /** Scale sets: the names it may obtain, the prefix followed by six letters or digits (Azure's instance suffix). */
  readonly prefix?: string;
  readonly id: string;
}

/** How tokens are timed: the lifetime (epoch length) and an optional last moment for any token. */
export interface TokenTiming {
  readonly lifetimeSeconds: number;
  /** No token outlives this (ISO 8601), whatever its epoch. */
  readonly notAfter?: string;
}

/** A token lifetime spelled `90m`, `24h` or `7d`, in seconds. */
export function parseLifetime(text: string): number {
  const m = /^(\d+)([mhd])$/.exec(text);
  if (!m) throw new Error(`${JSON.stringify(text)} is not a lifetime such as 24h or 7d`);
  return Number(m[1]) * { m: 60, h: 3600, d: 86_400 }[m[2] as "m" | "h" | "d"];
}

/** The epoch `now` falls in. */
export function tokenEpoch(now: Date, timing: TokenTiming): number {
  return Math.floor(now.getTime() / 1000 / timing.lifetimeSeconds);
}

/** When the tokens of `epoch` expire (RFC 3339): the end of the next epoch, or `notAfter` if sooner. */
export function tokenExpiration(epoch: number, timing: TokenTiming): string {
  const end = new Date((epoch + 2) * timing.lifetimeSeconds * 1000);
  const cap = timing.notAfter === undefined ? undefined : new Date(timing.notAfter);
  return (cap !== undefined && cap < end ? cap : end).toISOString().replace(/\.\d{3}Z$/, "Z");
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

function letters(digest: Buffer, n: number): string {
  let out = "";
  for (let i = 0; out.length < n; i++) out += ALPHABET[(digest[i % digest.length] ?? 0) % ALPHABET.length];
  return out;
}

function subject(t: { pool: string; node?: string; prefix?: string }): string {
  return t.node !== undefined ? `node\0${t.pool}\0${t.node}` : `pool\0${t.pool}\0${t.prefix ?? ""}`;
}

/**
 * The tokens of `epoch` for `pools`, ids derived from `seed` (the stack and its token id: not secret,
 * but another stack's differ). Throws when two ids collide (one chance in millions for a thousand nodes).
 */
export function nodeTokens(seed: string, pools: readonly PoolNodes[]): NodeToken[] {
  const out: NodeToken[] = [];
  const seen = new Map<string, string>();
  for (const p of pools) {
    const subjects: { pool: string; node?: string; prefix?: string }[] =
      "names" in p ? p.names.map((node) => ({ pool: p.pool, node })) : [{ pool: p.pool, prefix: p.prefix }];
    for (const s of subjects) {
      const id = letters(
        createHash("sha256")
          .update(`${seed}\0${subject(s)}`)
          .digest(),
        6,
      );
      const other = seen.get(id);
      const who = s.node ?? `${s.prefix ?? ""}*`;
      if (other !== undefined)
        throw new Error(`the join tokens of ${other} and ${who} would share the id ${id}: change cluster.join.tokenId`);
      seen.set(id, who);
      out.push({ ...s, id });
    }
  }
  return out;
}

/** A token's 16-character secret, derived from the stack's token secret (so it is as secret as that). */
export function tokenSecretOf(stackSecret: string, epoch: number, token: NodeToken): string {
  return letters(
    createHmac("sha256", stackSecret)
      .update(`${epoch}\0${subject(token)}`)
      .digest(),
    16,
  );
}

/** The names a token may obtain a certificate for, as the approver reads them. */
export function allowedNames(token: NodeToken): {
  readonly pool: string;
  readonly names?: string[];
  readonly prefix?: string;
} {
  return token.node !== undefined
    ? { pool: token.pool, names: [token.node] }
    : { pool: token.pool, prefix: token.prefix ?? "" };
}
