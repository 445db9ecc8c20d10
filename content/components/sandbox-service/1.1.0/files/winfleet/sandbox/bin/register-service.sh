#!/bin/sh
# Registers the sandbox "service" once the feature it needs is active: the
# first step after the restart turns feature.pending into feature.active.
# Idempotent: registering twice writes the same definition.
set -eu
var="$WINFLEET_ROOT/winfleet/sandbox/var"
services="$WINFLEET_ROOT/winfleet/sandbox/services"
if [ -f "$var/feature.pending" ]; then
  mv -f "$var/feature.pending" "$var/feature.active"
fi
if [ ! -f "$var/feature.active" ]; then
  echo "the sandbox feature is not enabled; install sandbox-feature first" >&2
  exit 1
fi
mkdir -p "$services"
tmp="$services/.heartbeat.service.$$"
printf 'name=heartbeat\nnode=%s\nregistered-by=%s %s\n' "$WINFLEET_NODE_NAME" "$WINFLEET_COMPONENT" "$WINFLEET_COMPONENT_VERSION" > "$tmp"
mv -f "$tmp" "$services/heartbeat.service"
echo "registered heartbeat"
