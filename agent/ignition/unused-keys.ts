/**
 * Finds keys a schema does not know, as Ignition reports them ("Unused key X",
 * a warning), and returns the document without them so that a key from a later
 * spec version is ignored rather than type-checked.
 */
import type { z } from "zod";
import { formatPath, type Issue, type PathSegment } from "../common";

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
}

function defOf(schema: z.ZodType): Def {
  // zod 4 exposes its definition on `def`; only the fields read below are typed.
  return (schema as unknown as { def: Def }).def;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let d = defOf(s); (d.type === "optional" || d.type === "nullable") && d.innerType; d = defOf(s)) s = d.innerType;
  return s;
}

/**
 * @param isKnown decides whether a key the schema has is known in this document's
 *   version; it receives the key's dotted path without array indices.
 */
export function stripUnusedKeys(
  value: unknown,
  schema: z.ZodType,
  isKnown: (keyPath: string) => boolean = () => true,
): { cleaned: unknown; warnings: Issue[] } {
  const warnings: Issue[] = [];
  const walk = (v: unknown, s: z.ZodType, at: PathSegment[], keyPath: string): unknown => {
    const def = defOf(unwrap(s));
    if (def.type === "object" && def.shape && v !== null && typeof v === "object" && !Array.isArray(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, child] of Object.entries(v)) {
        const childKeyPath = keyPath === "" ? k : `${keyPath}.${k}`;
        const childSchema = def.shape[k];
        if (!Object.hasOwn(def.shape, k) || childSchema === undefined || !isKnown(childKeyPath)) {
          warnings.push({ path: formatPath([...at, k]), message: `Unused key ${k}`, severity: "warning" });
          continue;
        }
        out[k] = walk(child, childSchema, [...at, k], childKeyPath);
      }
      return out;
    }
    if (def.type === "array" && def.element && Array.isArray(v)) {
      const element = def.element;
      return v.map((item, i) => walk(item, element, [...at, i], keyPath));
    }
    return v;
  };
  return { cleaned: walk(value, schema, [], ""), warnings };
}
