/**
 * The boundary every Ignition document crosses: JSON text in, a validated and
 * normalised {@link IgnitionConfig} out, or a {@link ValidationError} listing every
 * problem with the JSON path of the value at fault. Nothing is applied here.
 */
import { type Issue, ValidationError, zodIssues } from "../common";
import { IssueList } from "./checks";
import type { IgnitionConfig } from "./model";
import { normalizeV2 } from "./normalize-v2";
import { normalizeV3 } from "./normalize-v3";
import { configV2 } from "./schema-v2";
import { addedInV3Minor, configV3 } from "./schema-v3";
import { stripUnusedKeys } from "./unused-keys";

/** The spec versions this engine reads. */
export const SUPPORTED_VERSIONS = ["2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"] as const;

/** Options for {@link parseIgnition}. */
export interface ParseOptions {
  /** Accept known defects of legacy content (see `normalizeV2`) and report each repair as a warning. @default false */
  readonly lenient?: boolean;
  /** Names the document in error messages. @default "Ignition config" */
  readonly subject?: string;
}

/** A successfully parsed config with the warnings found on the way. */
export interface ParsedIgnition {
  readonly config: IgnitionConfig;
  readonly warnings: readonly Issue[];
}

/** Parses JSON text (or an already-decoded JSON value); throws {@link ValidationError}. */
export function parseIgnition(input: unknown, options: ParseOptions = {}): ParsedIgnition {
  const subject = options.subject ?? "Ignition config";
  let doc: unknown = input;
  if (typeof input === "string") {
    try {
      doc = JSON.parse(input);
    } catch (e) {
      throw new ValidationError(subject, [
        { path: "", message: `not valid JSON: ${(e as Error).message}`, severity: "error" },
      ]);
    }
  }
  const fail = (message: string, path = "ignition.version"): never => {
    throw new ValidationError(subject, [{ path, message, severity: "error" }]);
  };
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) fail("a config must be a JSON object", "");
  const ignition = (doc as { ignition?: unknown }).ignition;
  const version =
    ignition !== null && typeof ignition === "object" ? (ignition as { version?: unknown }).version : undefined;
  if (typeof version !== "string" || !/^\d+\.\d+\.\d+(-experimental)?$/.test(version)) {
    return fail("invalid config version (couldn't parse)");
  }
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
    return fail(`unsupported config version ${version}: this agent reads ${SUPPORTED_VERSIONS.join(", ")}`);
  }

  const issues = new IssueList();
  let config: IgnitionConfig | undefined;
  if (version === "2.2.0") {
    const { cleaned, warnings } = stripUnusedKeys(doc, configV2);
    issues.issues.push(...warnings);
    const typed = configV2.safeParse(cleaned);
    if (!typed.success) issues.issues.push(...zodIssues(typed.error));
    else config = normalizeV2(typed.data, issues, { lenient: options.lenient ?? false });
  } else {
    const minor = Number(version.split(".")[1]);
    const known = (keyPath: string): boolean => {
      const dotted = keyPath.split(".");
      for (let n = dotted.length; n > 0; n--) {
        const added = addedInV3Minor[dotted.slice(0, n).join(".")];
        if (added !== undefined && added > minor) return false;
      }
      return true;
    };
    const { cleaned, warnings } = stripUnusedKeys(doc, configV3, known);
    issues.issues.push(...warnings);
    const typed = configV3.safeParse(cleaned);
    if (!typed.success) issues.issues.push(...zodIssues(typed.error));
    else config = normalizeV3(typed.data, version, minor, issues);
  }
  if (issues.hasErrors || config === undefined) throw new ValidationError(subject, issues.issues);
  return { config, warnings: issues.issues };
}
