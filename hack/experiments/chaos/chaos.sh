#!/usr/bin/env bash
# `make chaos`: brings up (or reuses) the local cluster with enough kwok nodes for every pod of the run, then runs the
# chaos scenarios (hack/experiments/chaos/__main__.py; CHAOS_* sizes them) and prints their table. It restarts the
# cluster's API server and etcd: run it alone, never beside the test suite or a bench.
set -euo pipefail
source "$(dirname "$0")/../../make/env.sh"
if [ -z "${KUBECONFIG:-}" ]; then
  pods=$(( ${CHAOS_JOBS:-1000} * (${CHAOS_WORKERS:-2} + 1) ))
  nodes=$(( (pods + 99) / 100 ))  # 10 % headroom under 110 pods a node
  MPI_CLUSTER_NODES=$(( nodes > ${MPI_CLUSTER_NODES:-4} ? nodes : ${MPI_CLUSTER_NODES:-4} )) bash hack/worlds/cluster/up.sh
  KUBECONFIG=$(bash hack/worlds/cluster/kubeconfig.sh)
fi
export KUBECONFIG
exec "$root/.venv/bin/python" -m hack.experiments.chaos
