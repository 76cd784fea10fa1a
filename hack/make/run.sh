#!/usr/bin/env bash
# `make run`: the operator in the foreground against the current kubeconfig ($KUBECONFIG, else the
# local cluster's). No leader election unless asked: `make run ARGS=--leader-elect` or
# `bash hack/make/run.sh --leader-elect --namespace team-a`. Extra arguments are operator flags.
set -euo pipefail
source "$(dirname "$0")/env.sh"
if [ -z "${KUBECONFIG:-}" ]; then
  if [ -f hack/worlds/cluster/kubeconfig.sh ]; then
    KUBECONFIG=$(bash hack/worlds/cluster/kubeconfig.sh)
  elif [ -f "$HOME/.kube/config" ]; then
    KUBECONFIG=$HOME/.kube/config
  fi
fi
[ -n "${KUBECONFIG:-}" ] || { echo "no kubeconfig: set KUBECONFIG or run 'make cluster-up'" >&2; exit 1; }
export KUBECONFIG
# shellcheck disable=SC2086 # ARGS is a list of flags on purpose
exec "$root/.venv/bin/python" -m mpijob_operator --no-leader-elect --kubeconfig "$KUBECONFIG" ${ARGS:-} "$@"
