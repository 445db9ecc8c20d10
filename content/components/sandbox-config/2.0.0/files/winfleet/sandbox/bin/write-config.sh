#!/bin/sh
# Writes the sandbox node's configuration (format 2: KEY=VALUE lines, which a
# format-1 reader cannot parse, hence the upgrade through uninstall).
# Idempotent: written to a temporary name and renamed into place.
set -eu
etc="$WINFLEET_ROOT/winfleet/sandbox/etc"
mkdir -p "$etc"
tmp="$etc/.node.env.$$"
{
  printf 'FORMAT=2\n'
  printf 'NODE=%s\n' "$WINFLEET_NODE_NAME"
  printf 'GREETING=%s\n' "$SANDBOX_GREETING"
} > "$tmp"
mv -f "$tmp" "$etc/node.env"
echo "wrote $etc/node.env"
