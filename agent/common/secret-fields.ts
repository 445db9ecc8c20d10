/**
 * Secret fields are marked in the zod schema that parses them (a registry, not
 * a guess from key names), so whatever shows a config — `diagnose`'s archive —
 * can replace exactly those values, and a field added later as secret is
 * hidden without touching the code that shows it.
 */
import { z } from "zod";

/** What a secret field's mark says. */
export interface SecretMeta {
  /** Why it is secret, for people reading the schema. */
  readonly reason: string;
}

/** The registry of secret fields. */
export const secretFields = z.registry<SecretMeta>();

/** What a secret value is replaced by. */
export const REDACTED = "[secret]";

/** Marks `schema` secret and returns it (the same instance: mark a fresh schema, never one shared by other fields). */
export function secretField<T extends z.ZodType>(schema: T, reason: string): T {
  secretFields.add(schema, { reason });
  return schema;
}

type Def = {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly in?: z.ZodType;
  readonly shape?: Readonly<Record<string, z.ZodType>>;
  readonly valueType?: z.ZodType;
  readonly element?: z.ZodType;
  readonly options?: readonly z.ZodType[];
  readonly catchall?: z.ZodType;
};

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

const WRAPPERS = new Set(["optional", "default", "prefault", "nullable", "readonly", "catch", "nonoptional"]);

/** Whether `schema` (or a schema it wraps) is marked secret. */
function isSecret(schema: z.ZodType): boolean {
  for (let s: z.ZodType | undefined = schema; s;) {
    if (secretFields.has(s)) return true;
    const def = defOf(s);
    s = WRAPPERS.has(def.type) ? def.innerType : def.type === "pipe" ? def.in : undefined;
  }
  return false;
}

/**
 * `value` with every value the schema marks secret replaced by {@link REDACTED}.
 * It works on any value, valid or not (a broken config is shown too): a key the
 * schema does not know, or a value no union member accepts, is shown as
 * {@link REDACTED} — only what the schema knows to be harmless is shown as is.
 */
export function redactSecrets(schema: z.ZodType, value: unknown): unknown {
  if (value === undefined || value === null) return value;
  if (isSecret(schema)) return REDACTED;
  const def = defOf(schema);
  if (WRAPPERS.has(def.type) && def.innerType) return redactSecrets(def.innerType, value);
  if (def.type === "pipe" && def.in) return redactSecrets(def.in, value);
  if (def.type === "union" && def.options) {
    const member = def.options.find((o) => o.safeParse(value).success);
    return member ? redactSecrets(member, value) : REDACTED;
  }
  if (def.type === "object" && def.shape) {
    if (typeof value !== "object" || Array.isArray(value)) return REDACTED;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const field = def.shape[k] ?? (def.catchall && defOf(def.catchall).type !== "never" ? def.catchall : undefined);
      out[k] = field ? redactSecrets(field, v) : REDACTED;
    }
    return out;
  }
  if (def.type === "record" && def.valueType) {
    if (typeof value !== "object" || Array.isArray(value)) return REDACTED;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactSecrets(def.valueType as z.ZodType, v)]));
  }
  if (def.type === "array" && def.element) {
    return Array.isArray(value) ? value.map((v) => redactSecrets(def.element as z.ZodType, v)) : REDACTED;
  }
  return value;
}
