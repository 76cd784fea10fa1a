#!/usr/bin/env bash
# `make bench`: brings up (or reuses) the local cluster, installs the CRD, runs the operator locally and
# measures it (hack/bench.py). BENCH_JOBS (200) x BENCH_WORKERS (4); BENCH_OPERATOR_ARGS adds operator flags;
# BENCH_ALL_NAMESPACES=1 runs the operator cluster-wide; BENCH_TIMEOUT (600 s) bounds the wait for Running.
# BENCH_PEERS=kubeflow also measures the Kubeflow MPI Operator (hack/kubeflow.sh builds it, cached) at its defaults and
# tuned, one operator after the other, and prints one table with the ratios; BENCH_PEER_TIMEOUT (300 s) bounds its waits.
# The local cluster gets enough simulated nodes for every pod at once (a kwok node holds 110 pods, as a kubelet does):
# without them the bench measures pods queueing for capacity ("Too many pods"), not the operator.
set -euo pipefail
source "$(dirname "$0")/env.sh"
if [ -z "${KUBECONFIG:-}" ]; then
  pods=$(( (${BENCH_JOBS:-200} + ${BENCH_SINGLE_RUNS:-5}) * (${BENCH_WORKERS:-4} + 1) ))
  nodes=$(( (pods + 99) / 100 ))  # 10 % headroom under 110 pods a node
  MPI_CLUSTER_NODES=$(( nodes > ${MPI_CLUSTER_NODES:-4} ? nodes : ${MPI_CLUSTER_NODES:-4} )) bash hack/cluster/up.sh
  KUBECONFIG=$(bash hack/cluster/kubeconfig.sh)
fi
export KUBECONFIG
# Built here, outside the measurements, with its progress shown (about 20 min the first time); without Go it prints
# nothing and the peer rows say so.
peers=${BENCH_PEERS:-}
case " ${peers//,/ } " in *" kubeflow "*|*" kubeflow-tuned "*) bash hack/kubeflow.sh >/dev/null ;; esac
exec "$root/.venv/bin/python" hack/bench.py
