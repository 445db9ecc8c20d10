#!/usr/bin/env bash
# Waits for every upgrader DaemonSet of a stack to finish its rollout, and fails when one does not
# within ROLLOUT_TIMEOUT: `pulumi up` only sets the new pod template (the DaemonSets are not
# awaited, since a rollout over many Windows hosts outlasts any await), so a rollout that halts on
# a host that never converges would otherwise leave the deploy green.
#   usage: STACK=<org>/winfleet/<stack> ROLLOUT_TIMEOUT=60m scripts/rollout-status.sh
# Reads the stack's `upgraders` output ({ namespace, daemonSets }) with the Pulumi CLI and waits
# with kubectl (both on PATH, with node, KUBECONFIG set).
set -euo pipefail

stack="${STACK:?STACK must name the stack}"
timeout="${ROLLOUT_TIMEOUT:-60m}"
upgraders="$(pulumi stack output upgraders --json --stack "$stack")"
# Node reads the JSON (the runner has it for the program anyway): the namespace, then a DaemonSet a line.
mapfile -t fields < <(node -e 'const u = JSON.parse(require("fs").readFileSync(0, "utf8")) ?? {};
console.log([u.namespace ?? "", ...(u.daemonSets ?? [])].join("\n"));' <<<"$upgraders")
namespace="${fields[0]:-}"
daemonsets=("${fields[@]:1}")
if [ "${#daemonsets[@]}" -eq 0 ]; then
  echo "stack $stack has no upgrader: nothing rolls out"
  exit 0
fi
failed=0
for ds in "${daemonsets[@]}"; do
  echo "waiting up to $timeout for daemonset/$ds in $namespace"
  if ! kubectl rollout status "daemonset/$ds" --namespace "$namespace" --timeout "$timeout"; then
    echo "::error::the rollout of daemonset/$ds in $namespace did not finish within $timeout: a host has not converged (kubectl get pods --namespace $namespace -l app.kubernetes.io/name=winfleet-upgrader shows which)"
    failed=1
  fi
done
exit "$failed"
