/**
 * The sh session's driver process and its wire protocol. The driver is a small
 * POSIX sh loop; every command runs in a subshell of its own (a "worker"), so
 * no variable, `cd`, `set -e` or `exit` of one command reaches the next. The
 * worker for the next command is forked as soon as the previous one ends, so
 * the fork overlaps the agent's own work instead of delaying the command.
 *
 * Channels (all pipes): fd 0 carries control lines to the driver (`E <n>` +
 * variable updates, `R <token>` = report the worker's end); fd 4 carries
 * command texts to the waiting worker; fd 3 carries the acknowledgement of a
 * variable update (`E`); fd 1 and fd 2 are the commands' own output, each
 * invocation's ended by its random token, which on fd 1 is followed by the
 * worker's exit status and a newline. The token is sent after the worker was
 * forked, so no command can know its own; one write per stream ends a command,
 * and the driver reads every line from its fd 0 without a redirection, since
 * `read` in sh takes a byte per system call and a redirection costs five more.
 *
 * Data never becomes code: a value travels as lines read by `read -r` and is
 * exported with `export "$name=$value"`; names are checked to be identifiers.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { Readable, Writable } from "node:stream";
import { killProcessGroup } from "./process-group";
import { OUTPUT_LIMIT, TailBuffer } from "./shell";

// A value or command is sent as its line count, then its lines; joining the
// lines with newlines gives it back exactly (a trailing newline included).
const DRIVER = `
__wf_readval() {
  __wf_v=; __wf_i=0
  while [ "$__wf_i" -lt "$1" ]; do
    IFS= read -r __wf_l
    if [ "$__wf_i" -gt 0 ]; then __wf_v="$__wf_v
$__wf_l"; else __wf_v=$__wf_l; fi
    __wf_i=$((__wf_i + 1))
  done
}
__wf_fork() {
  (
    exec 3>&- 4<&-
    IFS= read -r __wf_c || exit 0
    __wf_readval "$__wf_c"
    __wf_cmd=$__wf_v
    unset __wf_v __wf_i __wf_l __wf_c __wf_op __wf_a __wf_name __wf_pid __wf_s
    exec </dev/null
    eval "$__wf_cmd"
  ) <&4 &
  __wf_pid=$!
}
__wf_fork
while IFS=' ' read -r __wf_op __wf_a; do
  case $__wf_op in
    E)
      kill "$__wf_pid" 2>/dev/null
      wait "$__wf_pid" 2>/dev/null
      while [ "$__wf_a" -gt 0 ]; do
        IFS=' ' read -r __wf_name __wf_c
        if [ "$__wf_c" = - ]; then unset "$__wf_name"; else __wf_readval "$__wf_c"; export "$__wf_name=$__wf_v"; fi
        __wf_a=$((__wf_a - 1))
      done
      __wf_fork
      printf 'E\\n' >&3
      ;;
    R)
      wait "$__wf_pid"
      __wf_s=$?
      printf '%s' "$__wf_a" >&2
      printf '%s%s\\n' "$__wf_a" "$__wf_s"
      __wf_fork
      ;;
  esac
done
kill "$__wf_pid" 2>/dev/null
`;

/** Encodes a value as its line count and lines. */
function block(value: string): string {
  const lines = value.split("\n");
  return `${lines.length}\n${lines.join("\n")}\n`;
}

/**
 * One output stream, split at invocation tokens. On the stream that carries
 * the exit status after the token, the token counts as found once the status's
 * newline arrived.
 */
class TokenSplitter {
  private current = new TailBuffer(OUTPUT_LIMIT);
  private carry: Buffer = Buffer.alloc(0);
  private done: TailBuffer | undefined;
  private token: Buffer | undefined;
  /** What followed the last token found, up to its newline (the exit status on stdout). */
  trailer = "";

  constructor(private readonly withTrailer: boolean) {}

  expect(token: Buffer): void {
    this.token = token;
    this.done = undefined;
    this.trailer = "";
    this.scan(Buffer.alloc(0));
  }

  push(chunk: Buffer): void {
    if (this.token === undefined || this.done !== undefined) {
      this.current.push(chunk);
      return;
    }
    this.scan(chunk);
  }

  /** The finished invocation's output, once its token arrived. */
  take(): TailBuffer | undefined {
    return this.done;
  }

  private scan(chunk: Buffer): void {
    const token = this.token;
    if (!token) return;
    const window = this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]);
    const at = window.indexOf(token);
    if (at < 0) {
      const keep = Math.max(0, window.length - (token.length - 1));
      this.current.push(window.subarray(0, keep));
      this.carry = window.subarray(keep);
      return;
    }
    this.current.push(window.subarray(0, at));
    let end = at + token.length;
    if (this.withTrailer) {
      // The driver writes token, status and newline at once, but a read may still end inside them.
      const nl = window.indexOf(0x0a, end);
      if (nl < 0) {
        this.carry = window.subarray(at);
        return;
      }
      this.trailer = window.subarray(end, nl).toString("latin1");
      end = nl + 1;
    }
    this.done = this.current;
    this.token = undefined;
    this.carry = Buffer.alloc(0);
    // Anything after the token was written by something the last command left running.
    this.current = new TailBuffer(OUTPUT_LIMIT);
    this.current.push(window.subarray(end));
  }
}

/** What one finished invocation produced. */
export interface DriverResult {
  /** The worker's exit status, or null if the driver died first. */
  readonly status: number | null;
  readonly stdout: TailBuffer;
  readonly stderr: TailBuffer;
}

/** A running driver. One invocation at a time (the session serialises). */
export class ShDriver {
  private readonly child: ChildProcess;
  private readonly control: Writable;
  private readonly commands: Writable;
  private readonly out = new TokenSplitter(true);
  private readonly err = new TokenSplitter(false);
  private ackText = "";
  private wake: (() => void) | undefined;
  /** Variables set on top of the base environment, as the driver has them now. */
  private extra = new Map<string, string>();
  private readonly baseEnv: Readonly<Record<string, string>>;
  /** Set when the process has exited. */
  exited = false;

  constructor(shell: string, baseEnv: Record<string, string>, cwd: string | undefined) {
    this.child = spawn(shell, ["-c", DRIVER, "winfleet-sh"], {
      env: baseEnv,
      cwd,
      stdio: ["pipe", "pipe", "pipe", "pipe", "pipe"],
      detached: true,
    });
    this.baseEnv = baseEnv;
    this.control = this.child.stdin as Writable;
    this.commands = this.child.stdio[4] as Writable;
    this.child.stdout?.on("data", (c: Buffer) => {
      this.out.push(c);
      this.wake?.();
    });
    this.child.stderr?.on("data", (c: Buffer) => {
      this.err.push(c);
      this.wake?.();
    });
    const acks = this.child.stdio[3] as Readable;
    acks.setEncoding("utf8");
    acks.on("data", (c: string) => {
      this.ackText += c;
      this.wake?.();
    });
    for (const s of [this.control, this.commands]) s.on("error", () => undefined); // death is seen through "exit"
    this.child.on("exit", () => {
      this.exited = true;
      this.wake?.();
    });
    this.child.on("error", () => {
      this.exited = true;
      this.wake?.();
    });
  }

  /** The driver's pid (its process group id). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Makes the next worker see the base environment plus exactly `extra`. Only
   * what differs from the previous invocation crosses the pipe, so the
   * commands of one section, which share their variables, cost nothing here.
   */
  async setEnv(extra: Readonly<Record<string, string>>): Promise<boolean> {
    const ops: string[] = [];
    for (const name of this.extra.keys()) {
      if (name in extra) continue;
      const base = this.baseEnv[name];
      ops.push(base === undefined ? `${name} -\n` : `${name} ${block(base)}`);
    }
    for (const [name, value] of Object.entries(extra))
      if (this.extra.get(name) !== value) ops.push(`${name} ${block(value)}`);
    if (ops.length === 0) return true;
    this.extra = new Map(Object.entries(extra));
    this.control.write(`E ${ops.length}\n${ops.join("")}`);
    return this.until(() => {
      const i = this.ackText.indexOf("E\n");
      if (i < 0) return false;
      this.ackText = this.ackText.slice(0, i) + this.ackText.slice(i + 2);
      return true;
    });
  }

  /** Runs `command` in the waiting worker; resolves when it ended or the driver died. */
  async run(command: string): Promise<DriverResult> {
    // 128 random bits; base64url holds no space, quote or newline the driver's `read` would split at.
    const token = `\u001f${randomBytes(16).toString("base64url")}\u001f`;
    const tokenBytes = Buffer.from(token);
    this.out.expect(tokenBytes);
    this.err.expect(tokenBytes);
    this.commands.write(block(command));
    this.control.write(`R ${token}\n`);
    const finished = await this.until(() => this.out.take() !== undefined && this.err.take() !== undefined);
    const status = finished && /^\d+$/.test(this.out.trailer) ? Number(this.out.trailer) : null;
    const empty = new TailBuffer();
    return { status, stdout: this.out.take() ?? empty, stderr: this.err.take() ?? empty };
  }

  /** Kills the driver, its workers and everything they started in its process group. */
  async kill(): Promise<void> {
    if (this.child.pid !== undefined) killProcessGroup(this.child.pid);
    await this.exit();
  }

  /** Lets the driver finish: closing its control channel ends its loop. */
  async end(): Promise<void> {
    this.control.end();
    this.commands.end();
    await this.exit();
  }

  private async exit(): Promise<void> {
    if (this.exited) return;
    await new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
  }

  // Waits until `ready()` holds; false if the driver exited first.
  private async until(ready: () => boolean): Promise<boolean> {
    for (;;) {
      if (ready()) return true;
      if (this.exited) return false;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }
}
