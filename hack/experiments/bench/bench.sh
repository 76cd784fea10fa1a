#!/usr/bin/env bash
# `make bench`: brings up (or reuses) the local cluster, installs the CRD, runs the operator locally and
# measures it (hack/experiments/bench/bench.py). BENCH_JOBS (200) x BENCH_WORKERS (4); BENCH_OPERATOR_ARGS adds operator
# flags; BENCH_ALL_NAMESPACES=1 runs the operator cluster-wide; BENCH_TIMEOUT (600 s) bounds the wait for Running.
# BENCH_PEERS=kubeflow also measures the Kubeflow MPI Operator (hack/build/kubeflow.sh builds it, cached) at its
# defaults and tuned, one operator after the other, and prints one table with the ratios; BENCH_PEER_TIMEOUT (300 s)
# bounds its waits. The local cluster gets enough simulated nodes for every pod at once (a kwok node holds 110 pods, as
# a kubelet does): without them the bench measures pods queueing for capacity ("Too many pods"), not the operator.
# `hack/experiments/bench/bench.sh --scale` is `make bench-scale` (hack/experiments/bench/bench_scale.py,
# docs/dev/benchmarks.md): BENCH_SCALE_SIZES, the nodes sized for its largest, BENCH_SCALE_PEERS (kubeflow-tuned), and
# matplotlib for its plot (py-spy for BENCH_CPU_PROFILE=1).
set -euo pipefail
source "$(dirname "$0")/../../make/env.sh"
if [ "${1:-}" = "--scale" ]; then
  sizes=${BENCH_SCALE_SIZES:-200x1 1000x1 5000x1 200x4} singles=${BENCH_SCALE_SINGLES:-3} peers=${BENCH_SCALE_PEERS-kubeflow-tuned}
  entry=bench_scale
else
  sizes=${BENCH_JOBS:-200}x${BENCH_WORKERS:-4} singles=${BENCH_SINGLE_RUNS:-5} peers=${BENCH_PEERS:-}
  entry=bench
fi
if [ "$entry" = bench_scale ] || [ "${BENCH_CPU_PROFILE:-0}" != 0 ]; then
  # The plot's and the CPU profile's, not the suite's: into the venv here, a warning where pip cannot.
  "$root/.venv/bin/pip" install -q --disable-pip-version-check -r hack/experiments/bench/requirements-plot.txt ||
    echo "bench: matplotlib and py-spy did not install: no plot, no CPU profile (the table and the JSON are written)" >&2
fi
if [ -z "${KUBECONFIG:-}" ]; then
  pods=0
  for size in ${sizes//,/ }; do
    [[ $size =~ ^[0-9]+x[0-9]+$ ]] || { echo "bench: size '$size' is not JOBSxWORKERS, e.g. 1000x1" >&2; exit 2; }
    p=$(( (${size%x*} + singles) * (${size#*x} + 1) ))
    pods=$(( p > pods ? p : pods ))
  done
  nodes=$(( (pods + 99) / 100 ))  # 10 % headroom under 110 pods a node
  MPI_CLUSTER_NODES=$(( nodes > ${MPI_CLUSTER_NODES:-4} ? nodes : ${MPI_CLUSTER_NODES:-4} )) bash hack/worlds/cluster/up.sh
  KUBECONFIG=$(bash hack/worlds/cluster/kubeconfig.sh)
fi
export KUBECONFIG
# Built here, outside the measurements, with its progress shown (long the first time); without Go it prints
# nothing and the peer rows say so.
case " ${peers//,/ } " in *" kubeflow "*|*" kubeflow-tuned "*) bash hack/build/kubeflow.sh >/dev/null ;; esac
exec "$root/.venv/bin/python" -m "hack.experiments.bench.$entry"
