/** What the Windows content checks report. */

/** The check names, in report order. */
export const CHECKS = [
  "syntax",
  "commands",
  "downloads",
  "native-exit-codes",
  "exits",
  "outputs",
  "kubelet-config",
  "secrets",
  "uninstall",
  "variables",
] as const;
/** One of {@link CHECKS}. */
export type CheckName = (typeof CHECKS)[number];

/** One thing wrong. */
export interface Finding {
  readonly check: CheckName;
  /** `components/<name>/<version>/files/…:line`, or the metadata command. */
  readonly where: string;
  readonly message: string;
}
