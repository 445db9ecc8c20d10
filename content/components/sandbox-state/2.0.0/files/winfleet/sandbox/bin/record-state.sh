#!/bin/sh
# Records a lifecycle event: state holds the latest (schema 2), and history.log
# gets one line per run, so a test can count how often each event ran.
set -eu
event=${1:?usage: record-state.sh EVENT}
var="$WINFLEET_ROOT/winfleet/sandbox/var"
mkdir -p "$var"
tmp="$var/.state.$$"
printf 'schema=2\nevent=%s\ncomponent=%s\nversion=%s\n' "$event" "$WINFLEET_COMPONENT" "$WINFLEET_COMPONENT_VERSION" > "$tmp"
mv -f "$tmp" "$var/state"
printf '%s %s %s\n' "$event" "$WINFLEET_COMPONENT" "$WINFLEET_COMPONENT_VERSION" >> "$var/history.log"
echo "recorded $event for $WINFLEET_COMPONENT $WINFLEET_COMPONENT_VERSION"
