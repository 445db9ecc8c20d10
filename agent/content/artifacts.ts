/**
 * A component's `artifacts.json`: everything it downloads, each with a URL, a
 * version and a digest pinned in the content (`sha256`, or `sha512` where the
 * upstream publishes only that) or the name of the variable the stack sets it
 * in (`sha256Variable`, when no published value could be pinned), plus where
 * the value came from. `Get-WinfleetArtifact` in winfleet-common reads the
 * same file on the host; the content reference lists it.
 */
import { z } from "zod";
import { ValidationError, zodIssues } from "../common";
import { variableName } from "./schema";

const hex = (length: number) =>
  z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`), `${length} lower-case hex digits`);

/** One download. */
export const artifactSchema = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lower-case letters, digits and '-'"),
    version: z.string().min(1),
    url: z.url({ protocol: /^https$/, message: "an https:// URL" }),
    sha256: hex(64).optional(),
    sha512: hex(128).optional(),
    sha256Variable: variableName.optional(),
    /** Where the pinned value comes from, or why the stack provides it. */
    source: z.string().min(20, "say where the digest comes from"),
  })
  .refine((a) => [a.sha256, a.sha512, a.sha256Variable].filter((v) => v !== undefined).length === 1, {
    message: "pin exactly one of sha256, sha512 and sha256Variable",
  });

/** A parsed artifact. */
export type Artifact = z.infer<typeof artifactSchema>;

/** The file. */
export const artifactsFileSchema = z.strictObject({ artifacts: z.array(artifactSchema).min(1) });

/** Parses an artifacts.json text; errors name the path of the bad value. */
export function parseArtifacts(text: string, subject: string): Artifact[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ValidationError(subject, [
      { path: "", message: `not valid JSON: ${(e as Error).message}`, severity: "error" },
    ]);
  }
  const parsed = artifactsFileSchema.safeParse(doc);
  if (!parsed.success) throw new ValidationError(subject, zodIssues(parsed.error));
  return parsed.data.artifacts;
}
