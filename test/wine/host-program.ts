/**
 * A host program the broker suites run through the broker (node.exe with this
 * file): `argv` prints its arguments as JSON and exits; `tree` prints its pid
 * and a child's, then waits to be killed; `background` starts a child that
 * is handed its stdout and stderr (as cmd's `start /b` does), prints both pids
 * and exits at once; `output <bytes> <code>` writes a deterministic stream of
 * that many bytes to stdout, a line to stderr, and exits with `code`.
 */
import { spawn } from "node:child_process";
import { patternByte } from "./pattern";

function main(): void {
  const [mode = "", ...rest] = process.argv.slice(2);
  if (mode === "argv") {
    process.stdout.write(`${JSON.stringify(rest)}\n`);
  } else if (mode === "tree") {
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    process.stdout.write(`${process.pid} ${child.pid ?? -1}\n`);
    setInterval(() => undefined, 1000);
  } else if (mode === "background") {
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 120000)"], {
      stdio: ["ignore", "inherit", "inherit"],
      detached: true,
    });
    process.stdout.write(`${process.pid} ${child.pid ?? -1}\n`);
    child.unref();
  } else if (mode === "output") {
    const total = Number(rest[0]);
    const code = Number(rest[1] ?? 0);
    let written = 0;
    const chunk = (): Buffer => {
      const n = Math.min(64 * 1024, total - written);
      const b = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) b[i] = patternByte(written + i);
      written += n;
      return b;
    };
    const pump = (): void => {
      while (written < total) if (!process.stdout.write(chunk())) return void process.stdout.once("drain", pump);
      process.stderr.write("done\n");
      process.stdout.end(() => process.exit(code));
    };
    pump();
  } else {
    process.stderr.write(`host-program: unknown mode ${mode}\n`);
    process.exit(2);
  }
}

main();
