#!/usr/bin/env bash
# `make bench`: brings up (or reuses) the local cluster, installs the CRD, runs the operator locally and
# measures it (hack/bench.py). BENCH_JOBS (200) x BENCH_WORKERS (4); BENCH_OPERATOR_ARGS adds operator flags;
# BENCH_ALL_NAMESPACES=1 runs the operator cluster-wide; BENCH_TIMEOUT (600 s) bounds the wait for Running.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash hack/venv.sh
export PATH=$root/.venv/bin:$PATH ANSIBLE_CONFIG=$root/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$root/.collections
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
if [ -z "${KUBECONFIG:-}" ]; then
  bash hack/cluster/up.sh
  KUBECONFIG=$(bash hack/cluster/kubeconfig.sh)
fi
export KUBECONFIG
exec "$root/.venv/bin/python" hack/bench.py
