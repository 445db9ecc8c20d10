/**
 * Structured logging: JSON lines when stderr is not a terminal (services,
 * CI, log collectors), short human lines when it is. Callers pass fields, never
 * secrets: the broker logs names and counts, not arguments or environments.
 */

/** Log fields; values must be safe to print. */
export type Fields = Readonly<Record<string, string | number | boolean | undefined>>;

/** A tagged logger. */
export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

type Level = "debug" | "info" | "warn" | "error";

/**
 * A logger writing to `out` (default stderr) as JSON unless `out` is a TTY. `mask`, when given, is
 * applied to each line before it is written (the agent's: its secrets and key material, should an
 * error message carry them).
 */
export function createLogger(
  tag: string,
  options: {
    debug?: boolean;
    out?: NodeJS.WritableStream & { isTTY?: boolean };
    mask?: (text: string) => string;
  } = {},
): Logger {
  const out = options.out ?? process.stderr;
  const mask = options.mask ?? ((text: string) => text);
  const write = (level: Level, msg: string, fields: Fields = {}): void => {
    if (level === "debug" && !options.debug) return;
    if (out.isTTY) {
      const extra = Object.entries(fields)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(" ");
      out.write(`${mask(`${level.padEnd(5)} [${tag}] ${msg}${extra ? ` ${extra}` : ""}`)}\n`);
    } else {
      out.write(`${mask(JSON.stringify({ time: new Date().toISOString(), level, tag, msg, ...fields }))}\n`);
    }
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
