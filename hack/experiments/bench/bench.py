"""`make bench`: the operator loop under load on the local cluster (kwok nodes).

1. the cost of one bare ansible-runner run (ansible.builtin.ping, the runner path the operator uses);
2. one MPIJob on an idle operator: creation -> all children, and -> Running;
3. BENCH_JOBS MPIJobs x BENCH_WORKERS workers created at once: the same latencies (p50/p95/max), wall time,
   reconciles/s, batches, mean batch size and ansible-runner runs started, and the operator's peak RSS;
4. then all those jobs finish at once: every launcher pod is told (a kwok annotation) to succeed, and the time
   to the Succeeded condition is measured, split into the cluster's share (to the launcher Job's Complete) and the
   operator's (from it); then the time until every job's workers are marked for deletion (cleanPodPolicy Running),
   which ends this step's CPU and request window (an operator that cleans up later is charged for it). The step
   starts once the machine is quiet (BENCH_SETTLE_CORES, 0.5 busy cores, for a second; BENCH_SETTLE_MAX 30 s).
Launchers keep running until step 4 (BENCH_LAUNCHER_OUTCOME=succeed lets them end 2 s after they start, as
kwok's default for a Job's pod does: then step 3 also carries the completions).
CPU seconds of the operator, this script and each cluster component are printed for steps 3 and 4.
The operator runs as a subprocess, no leader election, watching only the bench's namespace (all namespaces with
BENCH_ALL_NAMESPACES=1); times are taken by this script's
own watches, from just before each create call to the first event that shows the object or condition.

BENCH_PEERS=kubeflow then runs steps 2-4 again, in fresh namespaces on the same cluster, against the Kubeflow MPI
Operator v0.8.2 (hack/lib/kubeflow.py: the binary hack/build/kubeflow.sh builds, out of cluster, watching
only the bench's namespace and holding its lease there) at its defaults, then tuned (client QPS/burst 1000/2000 and
its work queue's rate limit/burst 1000/2000), and prints one table with the ratios peer / ours. One operator at a
time: each is stopped (and must have exited) and its namespace deleted before the next starts. A peer's wait for all
Running and for all Succeeded is bounded by BENCH_PEER_TIMEOUT (300 s): at its defaults it may not get there.
BENCH_PEERS=kubeflow-tuned runs only the tuned one (a long run, e.g. BENCH_JOBS=1000, where the defaults cannot keep up).
The code is in hack/experiments/bench/, a module per job (settings, accounting, tracker, cluster, subjects, scenario,
results, report); this is its entry point.
"""

from __future__ import annotations

import os
import sys

from kubernetes import client

from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import api_client

from .cluster import delete_namespaces, pods_needed, prepare
from .report import compare, report
from .results import Result, reached
from .scenario import Bench, runner_baseline
from .settings import JOBS, OUTCOME, SINGLE_RUNS, WORKERS
from .subjects import Ours, peer_subjects


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    api = api_client({"kubeconfig": kubeconfig})
    peers = peer_subjects()  # before the long run: a wrong BENCH_PEERS fails now
    capacity = prepare(api, pods_needed(JOBS, WORKERS, SINGLE_RUNS))
    baseline = runner_baseline()
    results = [Bench(kubeconfig, api, Ours()).run()]
    report(results[0], capacity, baseline)
    for peer in peers:
        if isinstance(peer, Result):
            results.append(peer)
            continue
        delete_namespaces(client.CoreV1Api(api), wait=300)  # the previous run's teardown, off this run's clock
        results.append(Bench(kubeconfig, api, peer).run())
        report(results[-1], capacity, baseline)
    if len(results) > 1:
        compare(results)
    ours = results[0]
    assert ours.bulk is not None and ours.finish is not None
    ok = reached(ours.bulk.to_running) == JOBS and (OUTCOME != "run" or reached(ours.finish.to_succeeded) == JOBS)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
