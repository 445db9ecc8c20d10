/**
 * The on-disk queue of Events waiting for the API server: one JSON file per
 * report, named by sequence number, written atomically before `append` returns
 * (write-ahead), removed only after the API server took it. Bounded: past the
 * limit the oldest reports are folded into one summary report in the oldest's
 * place, never dropped silently. Identical consecutive reports not yet sent
 * become one Event with a count, as the kubelet's event correlator does.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, constants, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { type ConfinedDir, confinedDir, errorMessage, type Logger } from "../common";
import { REASONS, truncateUtf8, type EventReport } from "./reports";
import { removeSync, writeJsonSync } from "./sync-file";

const record = z.strictObject({
  v: z.literal(1),
  seq: z.number().int().positive(),
  /** The Event's metadata.name, fixed when queued: a resend after a lost response meets 409 and counts as delivered. */
  name: z.string().min(1).max(253),
  type: z.enum(["Normal", "Warning"]),
  reason: z.string().min(1).max(128),
  message: z.string(),
  first: z.string(),
  last: z.string(),
  count: z.number().int().positive(),
  /**
   * Summaries only: reports with seq in (seq, mergedUpTo] are folded in (and any left on disk after a crash are stale).
   */
  mergedUpTo: z.number().int().positive().optional(),
  /** Summaries only: how many of each reason were folded in. */
  folded: z.record(z.string(), z.number().int().positive()).optional(),
  /** Summaries only: the newest Warning folded in, so a failure is not reduced to a number. */
  lastWarning: z.string().optional(),
});

/** One queued report. */
export type QueuedReport = z.infer<typeof record>;

/** Options for {@link ReportQueue}. */
export interface ReportQueueOptions {
  /** Most reports kept; past it the oldest are summarised. */
  readonly limit: number;
  /** The Node's name: Event names start with it, as the kubelet's do. */
  readonly nodeName: string;
  readonly log: Logger;
}

const FILE = /^r-(\d{12})\.json$/;
const fileName = (seq: number): string => `r-${String(seq).padStart(12, "0")}.json`;

/** Event names are DNS subdomains of at most 253 characters: long Node names are hashed. */
function namePrefix(nodeName: string): string {
  return nodeName.length <= 220 ? nodeName : createHash("sha256").update(nodeName).digest("hex").slice(0, 32);
}

/** The queue; every method is synchronous so the observer never waits on the network. */
export class ReportQueue {
  private readonly records: QueuedReport[] = [];
  private nextSeq = 1;
  private inflight: number | undefined;
  private readonly prefix: string;

  private readonly dir: ConfinedDir;

  /**
   * `dir`: where reports wait; a path is used as given, the agent's own queue is reached through its
   * state directory's no-follow walk (every read, write and removal).
   */
  constructor(
    dir: string | ConfinedDir,
    private readonly options: ReportQueueOptions,
  ) {
    this.prefix = namePrefix(options.nodeName);
    this.dir = typeof dir === "string" ? confinedDir(dir, []) : dir;
    if (typeof dir === "string") mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.load();
  }

  private at<T>(fn: (dir: string) => T): T {
    return this.dir.useSync(fn);
  }

  /** Reports waiting. */
  get length(): number {
    return this.records.length;
  }

  /** The oldest report, the next to send. */
  head(): QueuedReport | undefined {
    return this.records[0];
  }

  /** Marks the head as being sent: it is neither merged into nor folded until {@link settle}. */
  begin(seq: number): void {
    this.inflight = seq;
  }

  /** Ends a send; `delivered` removes the report for good. */
  settle(seq: number, delivered: boolean): void {
    if (this.inflight === seq) this.inflight = undefined;
    if (!delivered) return;
    const i = this.records.findIndex((r) => r.seq === seq);
    if (i < 0) return;
    this.records.splice(i, 1);
    this.at((d) => removeSync(join(d, fileName(seq))));
  }

  /** Queues a report durably, merging it into an identical unsent predecessor and folding the oldest when full. */
  append(report: EventReport): void {
    const tail = this.records.at(-1);
    if (
      tail &&
      tail.seq !== this.inflight &&
      tail.mergedUpTo === undefined &&
      tail.type === report.type &&
      tail.reason === report.reason &&
      tail.message === report.message
    ) {
      this.write({ ...tail, count: tail.count + 1, last: report.at }, this.records.length - 1);
      return;
    }
    const seq = this.nextSeq++;
    const rec: QueuedReport = {
      v: 1,
      seq,
      name: this.newName(),
      type: report.type,
      reason: report.reason,
      message: report.message,
      first: report.at,
      last: report.at,
      count: 1,
    };
    this.write(rec, this.records.length);
    while (this.records.length > this.options.limit) {
      if (!this.foldOldest()) break;
    }
  }

  private newName(): string {
    // Time then randomness, like the kubelet's `<node>.<unix-nanos hex>`, unique across restarts.
    return `${this.prefix}.${Date.now().toString(16)}${randomBytes(4).toString("hex")}`;
  }

  private write(rec: QueuedReport, index: number): void {
    this.at((d) => writeJsonSync(join(d, fileName(rec.seq)), rec));
    this.records[index] = rec;
  }

  /** Folds the second-oldest unsent report into the oldest unsent one (made a summary if it is not one). */
  private foldOldest(): boolean {
    const at = this.records[0]?.seq === this.inflight ? 1 : 0;
    const target = this.records[at];
    const victim = this.records[at + 1];
    if (!target || !victim) return false;
    const base = target.mergedUpTo !== undefined ? target : this.asSummary(target);
    const folded = { ...(base.folded ?? {}) };
    const add = victim.folded ?? { [victim.reason]: victim.count };
    for (const [reason, n] of Object.entries(add)) folded[reason] = (folded[reason] ?? 0) + n;
    const lastWarning =
      victim.type === "Warning" ? (victim.lastWarning ?? victim.message) : (victim.lastWarning ?? base.lastWarning);
    const summary = this.summaryText({
      ...base,
      folded,
      last: victim.last,
      lastWarning,
      type: base.type === "Warning" || victim.type === "Warning" ? "Warning" : "Normal",
    });
    const mergedUpTo = victim.mergedUpTo ?? victim.seq;
    // Write the summary (naming what it absorbed) before deleting: a crash in between leaves a stale file that load()
    // discards.
    // A fresh name each time: an earlier, smaller version may have reached the server with its answer lost, and a
    // second summary is better than a 409 that would hide what was folded in since.
    this.write({ ...summary, mergedUpTo, name: this.newName() }, at);
    this.records.splice(at + 1, 1);
    this.at((d) => removeSync(join(d, fileName(victim.seq))));
    return true;
  }

  private asSummary(r: QueuedReport): QueuedReport {
    return {
      ...r,
      reason: REASONS.summarized,
      folded: { [r.reason]: r.count },
      mergedUpTo: r.seq,
      ...(r.type === "Warning" ? { lastWarning: r.message } : {}),
    };
  }

  private summaryText(s: QueuedReport): QueuedReport {
    const folded = s.folded ?? {};
    const total = Object.values(folded).reduce((a, b) => a + b, 0);
    const parts = Object.entries(folded)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([r, n]) => `${r} ×${n}`);
    const warning = s.lastWarning === undefined ? "" : `; last warning: ${s.lastWarning}`;
    const message = truncateUtf8(
      `${total} reports from ${s.first} to ${s.last} were summarised because the report queue was full (the API server was unreachable): ${parts.join(", ")}${warning}`,
    );
    return { ...s, message, count: 1 };
  }

  private load(): void {
    const loaded: QueuedReport[] = this.at((d) => {
      const names = readdirSync(d);
      for (const n of names) {
        // A temp file is a write that never finished renaming: the report it held was never accepted.
        if (n.endsWith(".tmp")) rmSync(join(d, n), { force: true });
      }
      const out: QueuedReport[] = [];
      for (const n of names.filter((x) => FILE.test(x)).sort()) {
        try {
          const fd = openSync(join(d, n), constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
          try {
            out.push(record.parse(JSON.parse(readFileSync(fd, "utf8"))));
          } finally {
            closeSync(fd);
          }
        } catch (e) {
          // Kept aside, not deleted: someone may want to read what it was.
          this.options.log.error("unreadable queued report set aside", {
            file: join(this.dir.path, n),
            error: errorMessage(e),
          });
          renameSync(join(d, n), join(d, `corrupt-${n}`));
        }
      }
      return out;
    });
    let covered = 0;
    for (const rec of loaded) {
      if (rec.seq <= covered) {
        this.at((d) => removeSync(join(d, fileName(rec.seq))));
        continue;
      }
      this.records.push(rec);
      if (rec.mergedUpTo !== undefined) covered = Math.max(covered, rec.mergedUpTo);
    }
    this.nextSeq = Math.max(covered, ...this.records.map((r) => r.seq), 0) + 1;
    while (this.records.length > this.options.limit) {
      // A smaller limit than the last run's: fold down to it now.
      if (!this.foldOldest()) break;
    }
  }
}
