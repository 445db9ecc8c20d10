/**
 * Generic collectors the platform lists are built from: a command's output,
 * the tail of a log file, and the recent files of a log directory.
 */
import { open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage } from "../common";
import type { Collector, DiagnoseContext } from "./collector";

/** Most bytes kept of one log file: its newest. */
export const LOG_TAIL_BYTES = 8 * 1024 * 1024;

/** The last `max` bytes of a file. */
export async function readTail(path: string, max = LOG_TAIL_BYTES): Promise<Buffer> {
  const fh = await open(path, "r");
  try {
    const { size } = await fh.stat();
    const length = Math.min(size, max);
    const buf = Buffer.alloc(length);
    await fh.read(buf, 0, length, size - length);
    return buf;
  } finally {
    await fh.close();
  }
}

/** A collector that archives what `argv` prints; a command not installed is recorded as missing, not as a failure. */
export function commandCollector(
  name: string,
  path: string,
  argv: readonly string[],
  options: { timeoutMs?: number; optional?: boolean } = {},
): Collector {
  return {
    name,
    source: argv.join(" "),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    async collect(ctx, sink, signal) {
      const r = await ctx.run(argv, signal);
      if (r.startError !== undefined) {
        sink.missing(
          path,
          options.optional ? `not available on this host: ${r.startError}` : `could not run: ${r.startError}`,
        );
        return;
      }
      if (signal.aborted) return;
      sink.file(
        path,
        r.stdout.length > 0 || r.code !== 0
          ? Buffer.concat([
              r.stdout,
              r.code === 0 ? Buffer.alloc(0) : Buffer.from(`\n[exited ${String(r.code)}] ${r.stderr.trim()}\n`),
            ])
          : Buffer.from(r.stderr),
      );
      if (r.code !== 0)
        sink.missing(
          path,
          `exited ${String(r.code)}${r.stderr.trim() ? `: ${r.stderr.trim().split("\n").slice(-3).join(" / ")}` : ""}`,
        );
    },
  };
}

/** The tail of one file; absent is recorded as missing. */
export function fileCollector(
  name: string,
  path: string,
  fileOf: (ctx: DiagnoseContext) => string | undefined,
  what: string,
  hint: string,
): Collector {
  return {
    name,
    source: what,
    async collect(ctx, sink) {
      const file = fileOf(ctx);
      if (!file) {
        sink.missing(path, `none found: ${hint}`);
        return;
      }
      try {
        sink.file(path, await readTail(file), file);
      } catch (e) {
        sink.missing(path, `cannot read ${file}: ${errorMessage(e)}`, file);
      }
    },
  };
}

/** Every file of `dir` (one level of subdirectories too) written since `ctx.since`, under `prefix`. */
export function logDirCollector(name: string, prefix: string, dir: (root: string) => string): Collector {
  return {
    name,
    source: dir("<root>"),
    async collect(ctx, sink, signal) {
      const base = dir(ctx.root);
      const walk = async (rel: string, depth: number): Promise<number> => {
        let count = 0;
        for (const entry of (await readdir(join(base, rel), { withFileTypes: true })).sort((a, b) =>
          a.name.localeCompare(b.name),
        )) {
          if (signal.aborted) return count;
          const r = rel ? `${rel}/${entry.name}` : entry.name;
          if (entry.isDirectory() && depth < 1) count += await walk(r, depth + 1);
          if (!entry.isFile()) continue;
          const file = join(base, r);
          if ((await stat(file)).mtime < ctx.since) continue;
          sink.file(`${prefix}/${r}`, await readTail(file), file);
          count++;
        }
        return count;
      };
      try {
        if ((await walk("", 0)) === 0) sink.missing(prefix, `no log written since ${ctx.since.toISOString()}`, base);
      } catch (e) {
        // A directory that does not exist is a component this host does not run, not a failure.
        if ((e as NodeJS.ErrnoException).code === "ENOENT") sink.missing(prefix, "not present on this host", base);
        else sink.missing(prefix, `cannot read ${base}: ${errorMessage(e)}`, base);
      }
    },
  };
}
