#!/bin/sh
# Stops the sandbox "service" for its upgrade, as restarting containerd stops a
# node's containers: what the node's pods need is gone until post_upgrade
# registers it again, which is why its metadata says the upgrade disrupts the
# runtime and the node is drained first. heartbeat.stopped says who stopped it;
# its modification time is when.
set -eu
services="$WINFLEET_ROOT/winfleet/sandbox/services"
mkdir -p "$services"
rm -f "$services/heartbeat.service"
printf 'stopped by %s %s (upgrading from %s)\n' "$WINFLEET_COMPONENT" "$WINFLEET_COMPONENT_VERSION" "${WINFLEET_PREVIOUS_VERSION:-}" > "$services/heartbeat.stopped"
echo "stopped heartbeat"
