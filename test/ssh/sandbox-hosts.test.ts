/**
 * The SSH sandbox hosts (agent/ssh), in both ways they can live: a network namespace each, and a
 * loopback address each. Real sshds, real users, the real OpenSSH client: each host answers on
 * its own address as its own user with its own host key, is reached with its key alone, and not
 * at another host's address; a host taken down refuses, one brought back answers; a host that
 * presents another key is told apart by its key; and stopping leaves no process, user,
 * namespace or link behind.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type NetworkMode, type SshHost, startSshHosts } from "../../agent/ssh";
import { scratchDir, skipUnlessInstalled, SOCAT, SSHD } from "../support";

const tools = skipUnlessInstalled(SSHD, SOCAT);
const skip = tools || (process.getuid?.() !== 0 ? "the sandbox hosts need root (users, sshd, namespaces)" : false);

/** Runs `command` on `host` with the OpenSSH client, checking its key against `hostKey`. */
function ssh(dir: string, host: SshHost, command: string, hostKey = host.hostKey) {
  const knownHosts = join(dir, `known_hosts-${host.name}`);
  const name = host.port === 22 ? host.address : `[${host.address}]:${host.port}`;
  writeFileSync(knownHosts, `${name} ${hostKey}\n`);
  return spawnSync(
    "ssh",
    [
      "-o",
      "BatchMode=yes",
      "-o",
      `UserKnownHostsFile=${knownHosts}`,
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      "ConnectTimeout=5",
      "-i",
      host.privateKeyFile,
      "-p",
      String(host.port),
      `${host.user}@${host.address}`,
      command,
    ],
    { encoding: "utf8", timeout: 20_000, env: { ...process.env, SSH_AUTH_SOCK: "" } },
  );
}

/**
 * Waits (bounded) for `line` in an sshd log. The log is written from sshd's stderr by this process, whose event
 * loop the synchronous `ssh` above holds up: the line lands a moment after the login it tells of.
 */
async function logged(file: string, line: RegExp): Promise<void> {
  for (let i = 0; i < 100 && !line.test(readFileSync(file, "utf8")); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(readFileSync(file, "utf8"), line);
}

const uids = (users: readonly string[]) =>
  readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .filter((l) => users.includes(l.split(":")[0] ?? ""));

function processesOf(uid: number): number {
  return readdirSync("/proc").filter((p) => {
    if (!/^\d+$/.test(p)) return false;
    try {
      return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1]) === uid;
    } catch {
      return false;
    }
  }).length;
}

for (const mode of ["netns", "loopback"] as NetworkMode[]) {
  describe(
    `SSH sandbox hosts, ${mode === "netns" ? "a network namespace each" : "a loopback address each"}`,
    { skip, timeout: 120_000 },
    () => {
      it("each answers at its own address as its own user with its own key; down, back up, and gone without a trace", async () => {
        const dir = scratchDir("winfleet-ssh-hosts-");
        chmodSync(dir, 0o711);
        const hosts = await startSshHosts({ count: 2, dir: join(dir, "run"), mode });
        const users = hosts.hosts.map((h) => h.user);
        let stopped = false;
        try {
          assert.equal(hosts.mode, mode);
          const [a, b] = hosts.hosts as [SshHost, SshHost];
          assert.notEqual(a.address, b.address);
          assert.notEqual(a.hostKey, b.hostKey, "a host key each, made for the run");
          for (const h of [a, b]) {
            const r = ssh(dir, h, "id -un; echo $HOME; ip -4 -o addr show 2>/dev/null | grep -c inet");
            assert.equal(r.status, 0, r.stderr);
            const [user, home] = r.stdout.trim().split("\n");
            assert.deepEqual([user, home], [h.user, h.home]);
            await logged(h.sshdLog, new RegExp(`Accepted publickey for ${h.user} `));
          }
          // a's key does not log in at b's address (each host its own user and authorized key).
          const crossed = ssh(dir, { ...b, privateKeyFile: a.privateKeyFile }, "true");
          assert.notEqual(crossed.status, 0);
          // Another host key at a's address is told apart by the client (what a pinned key refuses).
          const { hostKey: other } = await a.up({ anotherHostKey: true });
          assert.notEqual(other, a.hostKey);
          const impostor = ssh(dir, a, "true");
          assert.notEqual(impostor.status, 0);
          assert.match(impostor.stderr, /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/);
          await a.up();
          assert.equal(ssh(dir, a, "true").status, 0, "its own key again");
          await a.down();
          assert.notEqual(ssh(dir, a, "true").status, 0, "a host that is down refuses");
          await a.up();
          assert.equal(ssh(dir, a, "true").status, 0, "and answers once it is back");
          // A process the host's user leaves running (a service) is its to stop.
          assert.equal(ssh(dir, b, "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo started").status, 0);
          const numbers = users.map((u) => Number(execFileSync("id", ["-u", u], { encoding: "utf8" }).trim()));
          assert.ok((numbers[1] ?? 0) > 0 && processesOf(numbers[1] ?? 0) > 0, "b's user runs a process");
          await hosts.stop();
          stopped = true;
          assert.deepEqual(uids(users), [], "the users are gone");
          for (const n of numbers) assert.equal(processesOf(n), 0, `no process of uid ${n} is left`);
          if (mode === "netns") {
            const namespaces = execFileSync("ip", ["netns", "list"], { encoding: "utf8" });
            for (const h of [a, b]) assert.ok(!namespaces.includes(h.namespace ?? "?"), `${h.namespace} is gone`);
            // The kernel frees a deleted namespace, and the veth end in it, a moment later, on a workqueue.
            const ours = () =>
              execFileSync("ip", ["-o", "link"], { encoding: "utf8" })
                .split("\n")
                .filter((l) => l.includes(users[0]?.slice(0, 7) ?? "?"));
            for (let i = 0; i < 50 && ours().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
            assert.deepEqual(ours(), [], "their links are gone");
          }
          // (A namespace's address is no longer routed once its link is gone: nothing is dialled there again.)
          if (mode === "loopback")
            for (const h of [a, b]) assert.notEqual(ssh(dir, h, "true").status, 0, `${h.name} answers no more`);
          assert.ok(existsSync(a.home), "what the run wrote stays in its directory, for its owner to remove");
        } finally {
          if (!stopped) await hosts.stop();
        }
      });
    },
  );
}
