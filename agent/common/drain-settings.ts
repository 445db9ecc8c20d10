/**
 * The drain's knobs, one schema for the stack (per pool), the agent config and the upgrader that
 * carries them to a node: `kubectl drain`'s own knobs, with its defaults.
 */
import { z } from "zod";
import { canonicalJson } from "./canonical-json";
import { AgentError, AgentErrorCode } from "./errors";
import { parseLabelSelector } from "./label-selector";
import { zodIssues } from "./zod-issues";

/** How a node is drained before a disruptive step (see docs/upgrades.md). */
export const drainSettingsSchema = z.strictObject({
  /** Cordon and evict before the first disruptive step of a run. @default true */
  enabled: z.boolean().default(true),
  /**
   * How long the drain may take before the run stops, nothing disruptive done (`kubectl drain --timeout`); 0 waits
   * as long as it takes. @default 0
   */
  timeoutSeconds: z.number().int().min(0).max(86_400).default(0),
  /** Evict pods that use emptyDir volumes, whose data goes with them (`--delete-emptydir-data`). @default false */
  deleteEmptyDirData: z.boolean().default(false),
  /** Delete pods that no controller manages, which nothing brings back (`--force`). @default false */
  force: z.boolean().default(false),
  /**
   * Only pods matching this label selector are evicted; the others are left running (`--pod-selector`), e.g.
   * `winfleet.io/drain!=false`. @default "" (every pod)
   */
  podSelector: z
    .string()
    .max(4096)
    .default("")
    .superRefine((s, ctx) => {
      try {
        parseLabelSelector(s);
      } catch (e) {
        ctx.addIssue({ code: "custom", message: `not a label selector: ${(e as Error).message}` });
      }
    }),
});

/** Parsed drain settings, defaults filled in. */
export type DrainSettings = z.infer<typeof drainSettingsSchema>;

/** The settings with every default: `kubectl drain`'s. */
export const DEFAULT_DRAIN: DrainSettings = drainSettingsSchema.parse({});

/**
 * Drain knobs as an upgrader hands them to `retarget --drain`: base64url of their canonical JSON, which survives every
 * quoting on the way (a PowerShell script, the broker's space-split arguments).
 */
export function encodeDrainArgument(settings: DrainSettings): string {
  return Buffer.from(canonicalJson(settings)).toString("base64url");
}

/** Reads a `--drain` argument; throws naming the bad knob. */
export function decodeDrainArgument(text: string): DrainSettings {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    throw new AgentError(AgentErrorCode.InvalidInput, "--drain: expected base64url-encoded JSON");
  }
  const parsed = drainSettingsSchema.safeParse(doc);
  if (parsed.success) return parsed.data;
  const first = zodIssues(parsed.error)[0];
  throw new AgentError(
    AgentErrorCode.InvalidInput,
    `--drain: ${first?.path || "(root)"}: ${first?.message ?? "not drain settings"}`,
  );
}
