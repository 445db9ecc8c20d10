/**
 * The bootstrap of a POSIX sandbox host adopted over SSH: the twin of the Windows bootstrap
 * (bootstrap.ts) for the `sandbox` template, so the BYO path runs end to end on one Linux
 * machine. POSIX sh with a small Node.js helper for what sh does badly (JSON, SHA-256,
 * downloads); the host's own `node` runs both it and the agent. Like the Windows bootstrap it
 * takes the secret variables as one JSON line on standard input, installs the agent bundle and
 * the copied content (each SHA-256 checked), writes the agent config, and starts the agent as a
 * service; beside it the node's stand-in for a kubelet (`winfleet-agent sandbox-node`), which
 * joins the cluster by TLS bootstrap and runs the upgrader pods. Each runs under a supervisor
 * loop in a session of its own that restarts it when it exits, as the Service Control Manager
 * restarts the Windows service (and as a reboot the agent asks for, exit 194, comes back).
 *
 * Everything lives under `$HOME/winfleet` of the SSH user. The one gate holds here too: the
 * target line is what a new host installs first, a host with an agent and an agent config keeps
 * the versions in them, and {@link posixBootstrapEpoch} leaves the target line out.
 */
import { createHash } from "node:crypto";
import { AGENT_NODE_FLAGS, canonicalJson } from "../agent/common";
import type { BootstrapTarget, PinnedArtifact } from "./bootstrap";

/** Inputs of {@link renderPosixBootstrap}. */
export interface PosixBootstrapArgs {
  readonly agent: PinnedArtifact & { readonly version: string };
  /** The content archive as copied to the host (a path relative to the SSH user's home) and its SHA-256. */
  readonly content: { readonly path: string; readonly sha256: string };
  /** The non-secret agent config; `template` and `templateVersion` are the target's. */
  readonly agentConfig: Readonly<Record<string, unknown>>;
  /** The secret variables the host must be given; the bootstrap refuses to run without any of them. */
  readonly secretVariables: readonly string[];
}

const sq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The target line and the pattern that finds it (as TARGET_LINE is for the Windows bootstrap). */
export const POSIX_TARGET_LINE = {
  render: (target: BootstrapTarget | undefined): string =>
    `winfleet_target=${sq(target === undefined ? "{}" : JSON.stringify(target))}`,
  pattern: "^winfleet_target='[^']*'$",
} as const;

/** The epoch of a POSIX bootstrap: its SHA-256 with the target line neutral. */
export function posixBootstrapEpoch(script: string): string {
  const neutral = script.replace(new RegExp(POSIX_TARGET_LINE.pattern, "m"), POSIX_TARGET_LINE.render(undefined));
  return createHash("sha256").update(neutral).digest("hex");
}

/**
 * The helper the script runs with the host's node: `fetch URL SHA256 FILE` (file:, http:, https:),
 * `check FILE SHA256`, `config` (secrets JSON on stdin; prints `changed` or `same`).
 */
const HELPER = String.raw`'use strict';
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { execFileSync } = require('node:child_process');
const [action, a, b, c] = process.argv.slice(2);
const root = process.env.WINFLEET_ROOT;
const fail = (m) => { process.stderr.write('winfleet bootstrap: ' + m + '\n'); process.exit(1); };
const sha = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const shown = (url) => url.split('?')[0];
async function fetchPinned(url, expected, file) {
  if (fs.existsSync(file) && sha(file) === expected) return;
  const partial = file + '.partial';
  for (let attempt = 1; ; attempt++) {
    try {
      if (url.startsWith('file://')) fs.copyFileSync(new URL(url), partial);
      else {
        const res = await fetch(url);
        if (!res.ok) throw new Error('HTTP ' + res.status);
        fs.writeFileSync(partial, Buffer.from(await res.arrayBuffer()));
      }
      break;
    } catch (e) {
      if (attempt >= 5) fail('downloading ' + shown(url) + ' failed ' + attempt + ' times; the last: ' + e.message);
      process.stderr.write('downloading ' + shown(url) + ' failed (' + e.message + '); trying again\n');
      await new Promise((r) => setTimeout(r, 1000 * 2 ** attempt));
    }
  }
  const actual = sha(partial);
  if (actual !== expected) { fs.rmSync(partial, { force: true }); fail('SHA-256 of ' + shown(url) + ' is ' + actual + ', expected ' + expected); }
  fs.renameSync(partial, file);
}
function expandOnce(archive, dir) {
  if (fs.existsSync(path.join(dir, '.complete'))) return;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-xzf', archive, '-C', dir]);
  fs.writeFileSync(path.join(dir, '.complete'), '');
}
function readStdinLine() {
  const text = fs.readFileSync(0, 'utf8');
  return text.split('\n')[0];
}
async function main() {
  if (action === 'fetch') return fetchPinned(a, b, c);
  if (action === 'check') { const actual = sha(a); if (actual !== b) fail('SHA-256 of ' + a + ' is ' + actual + ', expected ' + b); return; }
  if (action === 'agent') {
    const t = JSON.parse(process.env.WINFLEET_TARGET).agent;
    const archive = path.join(root, 'downloads', 'agent-' + t.version + '.tgz');
    await fetchPinned(t.url, t.sha256, archive);
    expandOnce(archive, path.join(root, 'releases', t.version));
    fs.symlinkSync(path.join(root, 'releases', t.version), path.join(root, 'current'));
    return;
  }
  if (action !== 'config') fail('unknown action ' + action);
  let secrets;
  try { secrets = JSON.parse(readStdinLine()); } catch { secrets = undefined; }
  if (!secrets || typeof secrets !== 'object') fail('the secrets are missing: one JSON object on standard input');
  for (const name of JSON.parse(process.env.WINFLEET_SECRET_NAMES)) if (!secrets[name]) fail('the secret variable ' + name + ' is missing from standard input');
  const target = JSON.parse(process.env.WINFLEET_TARGET);
  const file = path.join(root, 'agent.json');
  let kept;
  try { kept = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { kept = undefined; }
  const config = JSON.parse(process.env.WINFLEET_CONFIG);
  // A host with an agent config keeps the template and content in it (where the upgrader took it).
  if (kept && kept.content && kept.templateVersion && fs.existsSync(kept.content)) {
    Object.assign(config, { template: kept.template, templateVersion: kept.templateVersion, content: kept.content });
  } else {
    const archive = path.join(process.env.HOME, target.content.path);
    const actual = sha(archive);
    if (actual !== target.content.sha256) fail('SHA-256 of ' + archive + ' is ' + actual + ', expected ' + target.content.sha256);
    const dir = path.join(root, 'content', target.content.sha256.slice(0, 12));
    expandOnce(archive, dir);
    Object.assign(config, { template: target.template, templateVersion: target.templateVersion, content: dir });
  }
  Object.assign(config, {
    root: path.join(root, 'host'),
    kubeconfig: path.join(root, 'node', 'kubelet.conf'),
    reboot: 'exit',
    broker: { listen: path.join(root, 'broker.sock'), proxy: path.join(root, 'proxy.sock'), white_list: { processPaths: [process.execPath], proxyPorts: [] } },
    secrets,
  });
  fs.mkdirSync(config.root, { recursive: true });
  const json = JSON.stringify(config, null, 2);
  if (kept !== undefined && fs.readFileSync(file, 'utf8') === json) { process.stdout.write('same\n'); return; }
  fs.writeFileSync(file + '.partial', json, { mode: 0o600 });
  fs.renameSync(file + '.partial', file);
  process.stdout.write('changed\n');
}
main().catch((e) => fail(e.message));
`;

/** The POSIX sh functions that run a command as a service: started once, restarted by its loop, stopped by group. */
export const POSIX_SERVICE_FUNCTIONS = `# A service: NAME runs under a loop that restarts it when it exits, in a session of its own (its
# process group is the loop's pid), so it outlives the SSH session that started it.
service_start() {
    name=$1; shift
    pid=$(cat "$root/$name.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then return 0; fi
    setsid sh -c 'while :; do "$@"; echo "winfleet: $0 exited $?; restarting in 1 s"; sleep 1; done' "$name" "$@" >>"$root/$name.log" 2>&1 </dev/null &
    echo $! >"$root/$name.pid"
}
service_stop() {
    pid=$(cat "$root/$1.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
        # A negative pid is the process group (dash's kill takes no "--").
        kill -TERM "-$pid" 2>/dev/null || true
        i=0
        while kill -0 "-$pid" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
        kill -KILL "-$pid" 2>/dev/null || true
    fi
    rm -f "$root/$1.pid"
}
`;

/** The bootstrap script (run by `sh` in the SSH user's home). */
export function renderPosixBootstrap(args: PosixBootstrapArgs): string {
  if (args.secretVariables.length === 0) throw new Error("a bootstrap needs at least the join token's secret variable");
  const { template, templateVersion, ...config } = args.agentConfig as Record<string, unknown> & {
    template?: string;
    templateVersion?: string;
  };
  const target: BootstrapTarget = {
    agent: { url: args.agent.url, sha256: args.agent.sha256, version: args.agent.version },
    content: { path: args.content.path, sha256: args.content.sha256 },
    ...(template !== undefined ? { template } : {}),
    ...(templateVersion !== undefined ? { templateVersion } : {}),
  };
  const agent = `"$node" ${AGENT_NODE_FLAGS.map(sq).join(" ")} "$root/current/bin/winfleet-agent.js"`;
  return `#!/bin/sh
# winfleet bootstrap of a POSIX sandbox host (the twin of a Windows host's): idempotent, safe to
# re-run. Generated; do not edit. The secret variables arrive as one JSON line on standard input.
# What a new host installs first; the upgrader moves the host's versions from then on.
${POSIX_TARGET_LINE.render(target)}
set -eu
umask 077
root="$HOME/winfleet"
node=$(command -v node) || { echo "winfleet bootstrap: node is not on PATH ($PATH): the POSIX twin runs the agent with the host's Node.js" >&2; exit 1; }
mkdir -p "$root/downloads" "$root/releases" "$root/content" "$root/node"
cat >"$root/bootstrap.js" <<'WINFLEET_HELPER'
${HELPER}WINFLEET_HELPER
export WINFLEET_ROOT="$root" WINFLEET_TARGET="$winfleet_target"
${POSIX_SERVICE_FUNCTIONS}
# A host that runs an agent keeps it: the upgrader moves agent versions, never a re-run bootstrap.
agent_moved=no
if [ ! -e "$root/current" ]; then
    "$node" "$root/bootstrap.js" agent
    agent_moved=yes
fi
changed=$(WINFLEET_CONFIG=${sq(canonicalJson(config))} WINFLEET_SECRET_NAMES=${sq(JSON.stringify([...args.secretVariables].sort()))} "$node" "$root/bootstrap.js" config)
# The host's address as the fleet reached it: the Node's InternalIP.
address=$(printf '%s' "\${SSH_CONNECTION:-}" | cut -d' ' -f3)
if [ "$changed" = changed ] || [ "$agent_moved" = yes ]; then
    service_stop agent
    service_stop node
fi
service_start agent ${agent} serve --config "$root/agent.json"
service_start node ${agent} sandbox-node --config "$root/agent.json" --address "\${address:-127.0.0.1}"
echo "winfleet agent bootstrapped: $(readlink "$root/current")"
`;
}

/** What removing a host runs over SSH: stop both services, uninstall the content, remove the install. */
export function renderPosixUninstall(): string {
  return `root="$HOME/winfleet"
if [ -d "$root" ]; then
${POSIX_SERVICE_FUNCTIONS.split("\n")
  .map((l) => (l === "" ? l : `    ${l}`))
  .join("\n")}
    service_stop node
    service_stop agent
    node=$(command -v node || true)
    if [ -n "$node" ] && [ -f "$root/agent.json" ] && [ -e "$root/current" ]; then
        "$node" "$root/current/bin/winfleet-agent.js" uninstall --config "$root/agent.json"
    fi
    rm -rf "$root"
fi
echo "winfleet removed from $(hostname)"
`;
}
