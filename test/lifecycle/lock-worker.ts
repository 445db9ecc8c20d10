/**
 * One contender for the apply lock (started by lock.test.ts): waits for the
 * start signal, tries once, and on success records when it held the lock.
 * argv: root, go-file, log-file, hold-ms. Exits 0 having held it, 3 refused.
 */
import { appendFileSync, existsSync } from "node:fs";
import { linuxProcessHost } from "../../agent/broker/process-host";
import { acquireLock } from "../../agent/lifecycle/lock";

const [root = "", go = "", log = "", hold = "200"] = process.argv.slice(2);
// The real probe, as slow as it is on Windows (where it asks PowerShell) and as unevenly.
const probe = {
  identity: async (pid: number) => {
    await new Promise((r) => setTimeout(r, Math.random() * 60));
    return linuxProcessHost.identity(pid);
  },
};

async function main(): Promise<void> {
  const end = Date.now() + 20_000;
  while (!existsSync(go) && Date.now() < end) await new Promise((r) => setTimeout(r, 2));
  let lock;
  try {
    lock = await acquireLock(root, "lock-worker", probe);
  } catch {
    process.exitCode = 3;
    return;
  }
  appendFileSync(log, `+${process.pid}\n`);
  await new Promise((r) => setTimeout(r, Number(hold)));
  appendFileSync(log, `-${process.pid}\n`);
  await lock.release();
}
void main();
