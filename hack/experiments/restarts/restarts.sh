#!/usr/bin/env bash
# `make restarts`: brings up (or reuses) the local cluster, then runs hack/experiments/restarts (RESTARTS_ROWS,
# RESTARTS_COLUMNS, RESTARTS_TRIAL_S) and prints its table. It kills the real node's containerd: run it alone.
set -euo pipefail
source "$(dirname "$0")/../../make/env.sh"
if [ -z "${KUBECONFIG:-}" ]; then
  bash hack/worlds/cluster/up.sh
  KUBECONFIG=$(bash hack/worlds/cluster/kubeconfig.sh)
fi
export KUBECONFIG
exec "$root/.venv/bin/python" -m hack.experiments.restarts
