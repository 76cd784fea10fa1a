"""hack/experiments/bench/bench.py's side-by-side table (hack/experiments/bench/report.py, `BENCH_PEERS=kubeflow make
bench`): what it prints for a peer that did not get there, or could not run, and how it tells a cluster-wide operator
from a namespace-scoped one."""

from __future__ import annotations

import math

import pytest

from hack.experiments.bench.accounting import namespace_scoped
from hack.experiments.bench.report import compare
from hack.experiments.bench.results import Bulk, Finish, Result, Single, latencies, reached, shares
from hack.experiments.bench.settings import JOBS, WORKERS


def result(name, single, running, succeeded, cpu, rss_mib, wall=100.0):
    jobs = JOBS
    keys = [("ns", f"job-{i}") for i in range(jobs)]
    return Result(
        name,
        ["--flag"],
        Single(single, single),
        Bulk(
            keys=keys,
            created_all=1.0,
            wall=wall,
            to_children=running,
            to_pods_up=running,
            to_running=running,
            react=[],
            runs=math.nan,
            starts=math.nan,
            reconciles=math.nan,
            mean_batch=math.nan,
            cpu={"operator incl. runner subprocesses": cpu, "machine total (all cores)": 10 * cpu},
        ),
        Finish(wall=wall, to_succeeded=succeeded, cpu={"operator incl. runner subprocesses": cpu / 2}),
        rss_peak_tree=rss_mib * 1024,
        jobs=jobs,
        workers=WORKERS,
    )


def test_table_ratios_a_peer_that_did_not_get_there_and_one_that_could_not_run(capsys):
    n = JOBS
    ours = result("mpi.operator", 1.0, [10.0] * n, [4.0] * n, 20.0, 400)
    # the peer: twice as fast to start one job, but most of the burst never Running within its 300 s
    peer = result("Kubeflow", 0.5, [5.0] * (n // 10) + [math.inf] * (n - n // 10), [2.0] * n, 5.0, 100, wall=300.0)
    missing = Result("Kubeflow tuned", note="not run: no Go toolchain to build the Kubeflow MPI Operator")
    compare([ours, peer, missing])
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| ")
    }
    assert rows["single job, idle: create -> Running p50"][:2] == ["1.00 s", "0.50 s"]
    assert rows["single job, idle: create -> Running p50"][3] == "0.50"  # Kubeflow / ours
    assert rows[f"{n} x {WORKERS}: create -> Running p95"][:2] == ["10.0 s", "> 300 s"]
    assert rows[f"{n} x {WORKERS}: create -> Running p95"][3] == "> 30.0"  # at least 300 s / 10 s
    assert rows["jobs Running"][:2] == [f"{n}/{n}", f"{n // 10}/{n}"]
    assert rows["operator CPU s, create -> all Running"][3] == "0.25"
    assert rows["peak RSS incl. children"][:2] == ["400 MiB", "100 MiB"]
    assert rows["peak RSS incl. children"][2] == "not run: no Go toolchain to build the Kubeflow MPI Operator"
    assert rows["peak RSS incl. children"][4] == ""


@pytest.mark.parametrize(
    ("args", "scoped"),
    [
        (["python3", "-m", "mpijob_operator", "--namespace", "team-a"], True),
        (["python3", "-m", "mpijob_operator", "--namespace=team-a"], True),
        (["mpi-operator", "-namespace", "team-a"], True),
        (["python3", "-m", "mpijob_operator", "--no-leader-elect"], False),
        (["mpi-operator", "--namespace="], False),  # an empty namespace is every namespace
    ],
)
def test_namespace_scoped(args, scoped):
    assert namespace_scoped(args) is scoped


def test_a_job_that_got_there_after_the_wait_ended_did_not_get_there():
    keys = [("ns", "a"), ("ns", "b"), ("ns", "c")]
    start = {k: 100.0 for k in keys}
    done = {keys[0]: 101.0, keys[1]: 130.0}  # b after the wait ended at 110, c never
    assert latencies(done, start, keys, until=110.0) == [1.0, math.inf, math.inf]
    assert reached(latencies(done, start, keys, until=110.0)) == 1
    assert latencies(done, start, keys) == [1.0, 30.0, math.inf]
    # the operator's share: only the jobs that got there in time
    assert shares(done, {k: 100.5 for k in keys}, keys, until=110.0) == [0.5]
