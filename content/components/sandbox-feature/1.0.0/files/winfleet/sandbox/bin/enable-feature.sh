#!/bin/sh
# "Enables an OS feature" that, like Windows' Containers feature, only takes
# effect after a restart: it leaves feature.pending for the first step after
# the reboot to activate. Idempotent: an active feature is left alone.
set -eu
var="$WINFLEET_ROOT/winfleet/sandbox/var"
mkdir -p "$var"
if [ -f "$var/feature.active" ]; then
  echo "feature already active"
  exit 0
fi
: > "$var/feature.pending"
echo "feature enabled; active after the next restart"
