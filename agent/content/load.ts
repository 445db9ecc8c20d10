/**
 * Parsing content at the boundary: templates, metadata and component Ignition
 * files become readonly typed values, or a {@link ValidationError} naming every
 * bad value's path. Lenient mode repairs the 2019 format's missing commas and
 * reports each repair.
 */
import type { z } from "zod";
import { type Issue, ValidationError, zodIssues } from "../common";
import { type IgnitionConfig, type FetchOptions, parseIgnition, resolveResource } from "../ignition";
import { repairMissingCommas } from "./lenient-json";
import { type ComponentMetadata, type Template, metadataPath, metadataSchema, templateSchema } from "./schema";

/** Options for content parsing. */
export interface LoadOptions {
  /** Repair known defects of legacy content and report them as warnings. @default false */
  readonly lenient?: boolean;
}

/** A parsed value plus what was repaired or questionable on the way. */
export interface Loaded<T> {
  readonly value: T;
  readonly warnings: readonly Issue[];
}

function parseJson<S extends z.ZodType>(
  schema: S,
  text: string,
  subject: string,
  options: LoadOptions,
): Loaded<z.infer<S>> {
  const warnings: Issue[] = [];
  let source = text;
  if (options.lenient) {
    const { text: repaired, repairs } = repairMissingCommas(text);
    source = repaired;
    warnings.push(
      ...repairs.map((r) => ({ path: "", message: `repaired: ${r.message}`, severity: "warning" as const })),
    );
  }
  let doc: unknown;
  try {
    doc = JSON.parse(source);
  } catch (e) {
    const hint = options.lenient ? "" : " (legacy content with missing commas loads with --lenient)";
    throw new ValidationError(subject, [
      { path: "", message: `not valid JSON: ${(e as Error).message}${hint}`, severity: "error" },
    ]);
  }
  const parsed = schema.safeParse(doc);
  if (!parsed.success) throw new ValidationError(subject, zodIssues(parsed.error));
  return { value: parsed.data, warnings };
}

/** Parses a template. */
export function parseTemplate(text: string, subject = "template", options: LoadOptions = {}): Loaded<Template> {
  return parseJson(templateSchema, text, subject, options);
}

/** Parses component metadata. */
export function parseMetadata(
  text: string,
  subject = "metadata",
  options: LoadOptions = {},
): Loaded<ComponentMetadata> {
  return parseJson(metadataSchema, text, subject, options);
}

/** A component as the agent consumes it: its Ignition config and its metadata. */
export interface Component {
  readonly metadata: ComponentMetadata;
  readonly config: IgnitionConfig;
}

/**
 * Loads a component from its Ignition file: the config must carry exactly one
 * `/bin/metadata/<name>_<version>.metadata` file whose name and version match it.
 */
export async function loadComponent(
  ignitionText: string,
  subject: string,
  options: LoadOptions & FetchOptions = {},
): Promise<Loaded<Component>> {
  const { config, warnings } = parseIgnition(ignitionText, { lenient: options.lenient, subject });
  const candidates = config.files.filter((f) => /^\/bin\/metadata\/[^/]+\.metadata$/.test(f.path));
  const fail = (message: string): never => {
    throw new ValidationError(subject, [{ path: "storage.files", message, severity: "error" }]);
  };
  if (candidates.length !== 1)
    return fail(`expected exactly one /bin/metadata/<name>_<version>.metadata file, found ${candidates.length}`);
  const file = candidates[0];
  if (!file?.contents) return fail("the metadata file has no contents");
  const bytes = await resolveResource(file.contents, options);
  const metadata = parseMetadata(bytes?.toString("utf8") ?? "", `${subject} ${file.path}`, options);
  const expected = metadataPath(metadata.value.name, metadata.value.version);
  if (file.path !== expected)
    fail(
      `metadata at ${file.path} names ${metadata.value.name} ${metadata.value.version}, which belongs at ${expected}`,
    );
  return { value: { metadata: metadata.value, config }, warnings: [...warnings, ...metadata.warnings] };
}
