#!/usr/bin/env bash
# make e2e: the end-to-end suite on the real node (tests/e2e). Brings the local cluster and the real node up
# when they are not (both idempotent), installs the operator in-cluster with playbooks/install.yml, runs the
# MPIJobs of tests/e2e/manifests, and times create -> launcher Running and -> Succeeded over MPI_E2E_TIMING_RUNS
# (default 5) runs, then the same against the Kubeflow MPI Operator (tests/e2e/test_mpijobs.py).
# Extra arguments go to pytest (e.g. -k mpich). MPI_E2E_KEEP_OPERATOR=1 leaves the operator installed.
# MPI_E2E_REPEAT=N runs each pi job N times in a row (default 1).
set -euo pipefail
source "$(dirname "$0")/env.sh"
bash hack/worlds/cluster/up.sh
MPI_CLUSTER_REAL_NODE=${MPI_CLUSTER_REAL_NODE:-1} bash hack/worlds/node/up.sh
export MPI_E2E_TIMING_RUNS=${MPI_E2E_TIMING_RUNS:-5}
# The workload examples of examples/v2beta1 (Intel MPI, MPICH, Horovod + PyTorch), as written (tests/e2e/test_examples.py).
export MPI_E2E_WORKLOADS=${MPI_E2E_WORKLOADS:-1}
# The timing runs' peer, the Kubeflow MPI Operator: built (cached) before pytest, outside the timings, with its
# progress shown; without Go it prints nothing and the timing table says so.
if [ "$MPI_E2E_TIMING_RUNS" -gt 0 ]; then bash hack/build/kubeflow.sh >/dev/null; fi
# The images the jobs run, built (cached) before pytest: the Horovod one compiles Horovod when cold (minutes).
nice bash hack/build/images/build.sh operator horovod kubectl-delivery >/dev/null
# Here a missing real node is an error, not a skip.
export MPI_E2E_REQUIRE=1
# The kernel settings the pods' network depends on, in the log of every run (hack/worlds/node/up.sh checks them).
echo "e2e: host net.ipv4.ip_forward=$(cat /proc/sys/net/ipv4/ip_forward)" \
  "net.bridge.bridge-nf-call-iptables=$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo absent)"
set +e
.venv/bin/python -m pytest tests/e2e -m e2e -q -s -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "pytest collected no e2e tests: failing" >&2; exit 1; fi
exit "$rc"
