#!/usr/bin/env bash
# Checks that a job's GitHub environment holds what winfleet's workflows read, naming each thing
# that is missing (a job that fell back to another environment's, or a repository's, would reach
# the wrong cluster or stack), and writes the cluster's kubeconfig, readable by this user only,
# to the file KUBECONFIG names.
#   usage: scripts/environment-credentials.sh ENVIRONMENT
# Reads KUBECONFIG_DATA (the environment's KUBECONFIG secret), PULUMI_ORG and PULUMI_TEAM (its
# variables) and KUBECONFIG from the environment.
set -euo pipefail

environment="${1:?usage: scripts/environment-credentials.sh ENVIRONMENT}"
missing=()
[ -n "${KUBECONFIG_DATA:-}" ] || missing+=("secret KUBECONFIG (the kubeconfig this environment reaches its cluster with)")
[ -n "${PULUMI_ORG:-}" ] || missing+=("variable PULUMI_ORG (the Pulumi Cloud organization)")
[ -n "${PULUMI_TEAM:-}" ] || missing+=("variable PULUMI_TEAM (the Pulumi Cloud team whose token this environment's jobs get)")
[ -n "${KUBECONFIG:-}" ] || missing+=("KUBECONFIG in the job's env (the file to write the kubeconfig to)")
if [ "${#missing[@]}" -gt 0 ]; then
  for m in "${missing[@]}"; do echo "::error::the environment $environment has no $m"; done
  exit 1
fi
umask 077
printf '%s' "$KUBECONFIG_DATA" > "$KUBECONFIG"
