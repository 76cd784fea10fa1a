"""The bench's knobs, from the environment (hack/experiments/bench/bench.sh documents them;
hack/experiments/bench/bench.py's docstring says what each step measures)."""

from __future__ import annotations

import os

JOBS = int(os.environ.get("BENCH_JOBS", "200"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "4"))
SINGLE_RUNS = max(1, int(os.environ.get("BENCH_SINGLE_RUNS", "5")))  # single jobs on the idle operator, one at a time
# Before step 4, the machine settles (below SETTLE_CORES busy cores for a second, SETTLE_MAX s at most): the cluster's
# backlog of step 3 (pod statuses, endpoints, events) would otherwise weigh on the operator that got there first.
SETTLE_CORES = float(os.environ.get("BENCH_SETTLE_CORES", "0.5"))
SETTLE_MAX = float(os.environ.get("BENCH_SETTLE_MAX", "30"))
TIMEOUT = float(os.environ.get("BENCH_TIMEOUT", "600"))
OPERATOR_ARGS = os.environ.get("BENCH_OPERATOR_ARGS", "").split()
PREFIX = "bench-"
OUTCOME = os.environ.get("BENCH_LAUNCHER_OUTCOME", "run")
OUTCOME_ANNOTATION = "kwok.mpi.operator/outcome"
PEERS = [p for p in os.environ.get("BENCH_PEERS", "").replace(",", " ").split() if p]
PEER_TIMEOUT = float(os.environ.get("BENCH_PEER_TIMEOUT", "300"))
# At each new peak of the operator tree's RSS, what each of its processes held (/proc/<pid>/smaps_rollup).
PROFILE = os.environ.get("BENCH_PROFILE", "") not in ("", "0")
# py-spy's samples of the operator's tree in each measured phase (hack/experiments/bench/cpuprofile.py): it takes CPU
# itself.
CPU_PROFILE = os.environ.get("BENCH_CPU_PROFILE", "") not in ("", "0")
# "Kubeflow tuned": its client's QPS/burst (defaults 5/10) and its work queue's token bucket (defaults 10/100), the
# flags of cmd/mpi-operator/app/options/options.go in v0.8.2.
KUBEFLOW_TUNED = [
    "--kube-api-qps",
    "1000",
    "--kube-api-burst",
    "2000",
    "--controller-queue-rate-limit",
    "1000",
    "--controller-queue-burst",
    "2000",
]
