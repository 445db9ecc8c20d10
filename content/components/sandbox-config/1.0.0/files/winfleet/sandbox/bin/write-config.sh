#!/bin/sh
# Writes the sandbox node's configuration (format 1: one "key: value" per line)
# from template variables. Idempotent: the same variables give the same file,
# written to a temporary name and renamed into place.
set -eu
etc="$WINFLEET_ROOT/winfleet/sandbox/etc"
mkdir -p "$etc"
tmp="$etc/.node.conf.$$"
{
  printf 'node: %s\n' "$WINFLEET_NODE_NAME"
  printf 'greeting: %s\n' "$SANDBOX_GREETING"
  printf 'written-by: %s %s\n' "$WINFLEET_COMPONENT" "$WINFLEET_COMPONENT_VERSION"
} > "$tmp"
mv -f "$tmp" "$etc/node.conf"
echo "wrote $etc/node.conf"
