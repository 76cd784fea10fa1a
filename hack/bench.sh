#!/usr/bin/env bash
# `make bench`: brings up (or reuses) the local cluster, installs the CRD, runs the operator locally and
# measures it (hack/bench.py). BENCH_JOBS (200) x BENCH_WORKERS (4); BENCH_OPERATOR_ARGS adds operator flags;
# BENCH_ALL_NAMESPACES=1 runs the operator cluster-wide; BENCH_TIMEOUT (600 s) bounds the wait for Running.
# The local cluster gets enough simulated nodes for every pod at once (a kwok node holds 110 pods, as a kubelet does):
# without them the bench measures pods queueing for capacity ("Too many pods"), not the operator.
set -euo pipefail
source "$(dirname "$0")/env.sh"
if [ -z "${KUBECONFIG:-}" ]; then
  pods=$(( ${BENCH_JOBS:-200} * (${BENCH_WORKERS:-4} + 1) + ${BENCH_WORKERS:-4} + 1 ))
  nodes=$(( (pods + 99) / 100 ))  # 10 % headroom under 110 pods a node
  MPI_CLUSTER_NODES=$(( nodes > ${MPI_CLUSTER_NODES:-4} ? nodes : ${MPI_CLUSTER_NODES:-4} )) bash hack/cluster/up.sh
  KUBECONFIG=$(bash hack/cluster/kubeconfig.sh)
fi
export KUBECONFIG
exec "$root/.venv/bin/python" hack/bench.py
