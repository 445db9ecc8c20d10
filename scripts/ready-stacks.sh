#!/usr/bin/env bash
# Which of the named stacks are ready to deploy: those whose stack file holds no REPLACE marker
# any more, a comment line that starts with REPLACE (the sample stacks put one above every value a
# user must set, and a stack deployed with its placeholders fails on them). Prints a notice for each stack left out, and writes
# `stacks=<JSON array of names>` to $GITHUB_OUTPUT (standard output without it) for a job matrix.
#   usage: scripts/ready-stacks.sh dev rke2 byoh
# STACKS_DIR overrides where the stack files are (default: stacks).
set -euo pipefail

dir="${STACKS_DIR:-stacks}"
ready=()
for stack in "$@"; do
  if ! [[ "$stack" =~ ^[a-z0-9][a-z0-9-]*$ ]]; then
    echo "::error::'$stack' is not a stack name (lower-case letters, digits and '-')"
    exit 2
  fi
  file="$dir/Pulumi.$stack.yaml"
  if [ ! -f "$file" ]; then
    echo "::error file=$file::no such stack file"
    exit 2
  fi
  if grep -Eq '^[[:space:]]*#[[:space:]]*REPLACE([^[:alnum:]_]|$)' "$file"; then
    echo "::notice file=$file::stack $stack still has REPLACE markers: it is not deployed until each marked value is set and its marker removed"
  else
    ready+=("$stack")
  fi
done

json="["
for stack in ${ready[@]+"${ready[@]}"}; do
  if [ "$json" != "[" ]; then json+=","; fi
  json+="\"$stack\""
done
json+="]"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "stacks=$json" >> "$GITHUB_OUTPUT"
else
  echo "stacks=$json"
fi
