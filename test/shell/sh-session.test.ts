import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ShSession } from "../../agent/shell/sh-session";
import { OUTPUT_LIMIT } from "../../agent/shell/shell";
import { alive, pollUntil, tempDir } from "../support";

const T = 10_000;

describe("the POSIX sh runner", () => {
  let dir: string;
  let sh: ShSession;
  before(() => {
    dir = tempDir("sh-runner-");
    sh = new ShSession({ cwd: dir });
  });
  after(async () => {
    await sh.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps stdout, stderr and the exit code apart", async () => {
    const r = await sh.run({ command: "echo out; echo err >&2; exit 7", env: {}, timeoutMs: T });
    assert.equal(r.exitCode, 7);
    assert.equal(r.stdout.toString(), "out\n");
    assert.equal(r.stderr.toString(), "err\n");
    assert.equal(r.timedOut, false);
  });

  it("runs multi-line commands with quotes, here-documents and functions as written", async () => {
    const command = [
      "greet() {",
      "  printf '%s, %s!\\n' \"$1\" 'it'\"'\"'s me'",
      "}",
      'greet "double \\"quoted\\""',
      "cat <<'EOF'",
      "$HOME is not expanded here; neither is `this`",
      "EOF",
    ].join("\n");
    const r = await sh.run({ command, env: {}, timeoutMs: T });
    assert.equal(r.exitCode, 0, r.stderr.toString());
    assert.equal(r.stdout.toString(), 'double "quoted", it\'s me!\n$HOME is not expanded here; neither is `this`\n');
  });

  it("passes non-ASCII and binary output through unharmed", async () => {
    const r = await sh.run({
      command: "printf 'ünïcødé ✓\\n'; printf '\\000\\001\\377\\376\\037end'",
      env: {},
      timeoutMs: T,
    });
    assert.equal(r.exitCode, 0);
    const expected = Buffer.concat([
      Buffer.from("ünïcødé ✓\n"),
      Buffer.from([0, 1, 0xff, 0xfe, 0x1f]),
      Buffer.from("end"),
    ]);
    assert.deepEqual(r.stdout, expected);
  });

  it("hands the environment over as values: nothing in a value is ever run", async () => {
    const marker = join(dir, "pwned");
    const hostile = [
      `$(touch ${marker})`,
      `\`touch ${marker}\``,
      `'; touch ${marker}; '`,
      `"; touch ${marker}; "`,
      `a\nb\n\nc`,
      "  padded  ",
      "",
      "back\\slash\\n",
      "trailing newline\n",
      "ünï",
    ];
    for (const value of hostile) {
      const r = await sh.run({
        command: 'printf "%s" "$VALUE"',
        env: { VALUE: value, WINFLEET_PHASE: "install" },
        timeoutMs: T,
      });
      assert.equal(r.exitCode, 0, r.stderr.toString());
      assert.equal(r.stdout.toString(), value, `value ${JSON.stringify(value)}`);
    }
    assert.equal(existsSync(marker), false, "a value was executed");
  });

  it("gives each invocation exactly its own variables", async () => {
    await sh.run({ command: "true", env: { ONLY_FIRST: "1" }, timeoutMs: T });
    const r = await sh.run({ command: 'echo "[${ONLY_FIRST-unset}] [$SECOND]"', env: { SECOND: "2" }, timeoutMs: T });
    assert.equal(r.stdout.toString(), "[unset] [2]\n");
  });

  it("keeps commands apart: variables, cd, set -e and exit do not reach the next one", async () => {
    const first = await sh.run({ command: "leak=1; cd /; set -e; export EXPORTED=yes; exit 3", env: {}, timeoutMs: T });
    assert.equal(first.exitCode, 3);
    const second = await sh.run({
      command: 'echo "${leak-none} ${EXPORTED-none} $(pwd)"; false; echo still-running',
      env: {},
      timeoutMs: T,
    });
    assert.equal(second.stdout.toString(), `none none ${dir}\nstill-running\n`);
  });

  it("reports success when a command writes to stderr but exits 0", async () => {
    const r = await sh.run({ command: "echo 'warning: something' >&2", env: {}, timeoutMs: T });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stderr.toString(), "warning: something\n");
  });

  it("reports each exit status exactly, whatever the output ends with", async () => {
    // The status travels on stdout right after the end marker, so output that ends without a
    // newline, or with the marker's delimiter byte, must neither swallow nor corrupt it.
    const cases: [string, number, string, string | undefined][] = [
      ["printf 'no newline'; exit 3", 3, "no newline", ""],
      ["printf '\\037'; printf '\\037' >&2; exit 255", 255, "\x1f", "\x1f"],
      ["printf '12\\n'; printf 'x' >&2; exit 1", 1, "12\n", "x"],
      ["printf '\\037R 0\\n'", 0, "\x1fR 0\n", ""],
      ["sh -c 'kill -9 $$'", 137, "", undefined], // the shell may say "Killed" on stderr
      ["true", 0, "", ""],
    ];
    for (const [command, code, out, err] of cases) {
      const r = await sh.run({ command, env: {}, timeoutMs: T });
      assert.equal(r.exitCode, code, command);
      assert.equal(r.stdout.toString("latin1"), out, command);
      if (err !== undefined) assert.equal(r.stderr.toString("latin1"), err, command);
    }
  });

  it("reports a session that dies under a command, and runs the next command in a new one", async () => {
    const before = await sh.run({ command: "echo $$", env: { A: "1" }, timeoutMs: T });
    // In the worker subshell $$ is the session's shell itself.
    const r = await sh.run({ command: "echo partial; kill -9 $$; sleep 5", env: { A: "1" }, timeoutMs: T });
    assert.equal(r.exitCode, null);
    assert.equal(r.timedOut, false);
    assert.match(r.stderr.toString(), /the sh session ended while the command ran/);
    const after = await sh.run({ command: 'echo $$ "$A"', env: { A: "1" }, timeoutMs: T });
    assert.equal(after.exitCode, 0, after.stderr.toString());
    assert.notEqual(after.stdout.toString().split(" ")[0], before.stdout.toString().trim());
    assert.match(after.stdout.toString(), / 1\n$/, "the new session has the invocation's variables");
  });

  it("runs in one session: the shell's pid stays the same", async () => {
    const a = await sh.run({ command: "echo $$", env: {}, timeoutMs: T });
    const b = await sh.run({ command: "echo $$", env: {}, timeoutMs: T });
    assert.equal(a.stdout.toString(), b.stdout.toString());
    const isolated = await sh.run({ command: "echo $$", env: {}, timeoutMs: T, isolated: true });
    assert.notEqual(isolated.stdout.toString(), a.stdout.toString(), "isolated ran in the session");
    assert.equal(isolated.exitCode, 0);
  });

  it("kills the whole process group on a timeout, reports it and starts a new session", async () => {
    const before = await sh.run({ command: "echo $$", env: {}, timeoutMs: T });
    const pidFile = join(dir, "child.pid");
    const r = await sh.run({
      command: `sleep 60 & echo $! > ${pidFile}; echo started; sleep 60`,
      env: {},
      timeoutMs: 500,
    });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
    const child = Number(readFileSync(pidFile, "utf8"));
    await pollUntil(() => !alive(child), 1000, 20);
    assert.equal(alive(child), false, "the command's background child survived the timeout");
    const after = await sh.run({ command: "echo $$; echo fine", env: {}, timeoutMs: T });
    assert.equal(after.exitCode, 0);
    assert.notEqual(
      after.stdout.toString().split("\n")[0],
      before.stdout.toString().trim(),
      "the session was not restarted",
    );
  });

  it("times out isolated commands the same way", async () => {
    const r = await sh.run({ command: "sleep 60", env: {}, timeoutMs: 300, isolated: true });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
  });

  it("keeps the end of very large output and counts all of it", async () => {
    const r = await sh.run({
      command: `head -c ${OUTPUT_LIMIT + 4096} /dev/zero | tr '\\0' 'x'; printf END`,
      env: {},
      timeoutMs: T,
    });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdoutBytes, OUTPUT_LIMIT + 4096 + 3);
    assert.equal(r.stdout.length, OUTPUT_LIMIT);
    assert.equal(r.stdout.subarray(-3).toString(), "END");
  });

  it("refuses variable names that are not identifiers", async () => {
    await assert.rejects(
      sh.run({ command: "true", env: { "A;B": "x" }, timeoutMs: T }),
      /not a valid environment variable name/,
    );
  });
});
