"""hack/bench.py's side-by-side table (`BENCH_PEERS=kubeflow make bench`): what it prints for a peer that did not get
there, or could not run, and how it tells a cluster-wide operator from a namespace-scoped one."""
from __future__ import annotations

import importlib.util
import math
import pathlib
import sys

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[3] / "hack" / "bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench"] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("bench", None)


def result(bench, name, single, running, succeeded, cpu, rss_mib, wall=100.0):
    jobs = bench.JOBS
    keys = [("ns", f"job-{i}") for i in range(jobs)]
    return bench.Result(
        name, ["--flag"], bench.Single(single, single),
        bench.Bulk(keys=keys, created_all=1.0, wall=wall, to_children=running, to_pods_up=running, to_running=running,
                   react=[], runs=math.nan, starts=math.nan, reconciles=math.nan, mean_batch=math.nan,
                   cpu={"operator incl. runner subprocesses": cpu, "machine total (all cores)": 10 * cpu}),
        bench.Finish(wall=wall, to_succeeded=succeeded, cpu={"operator incl. runner subprocesses": cpu / 2}),
        rss_peak_tree=rss_mib * 1024)


def test_table_ratios_a_peer_that_did_not_get_there_and_one_that_could_not_run(bench, capsys):
    n = bench.JOBS
    ours = result(bench, "mpi.operator", 1.0, [10.0] * n, [4.0] * n, 20.0, 400)
    # the peer: twice as fast to start one job, but most of the burst never Running within its 300 s
    peer = result(bench, "Kubeflow", 0.5, [5.0] * (n // 10) + [math.inf] * (n - n // 10), [2.0] * n, 5.0, 100,
                  wall=300.0)
    missing = bench.Result("Kubeflow tuned", note="not run: no Go toolchain to build the Kubeflow MPI Operator")
    bench.compare([ours, peer, missing])
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in capsys.readouterr().out.splitlines() if line.startswith("| ")}
    assert rows["single job, idle: create -> Running p50"][:2] == ["1.00 s", "0.50 s"]
    assert rows["single job, idle: create -> Running p50"][3] == "0.50"  # Kubeflow / ours
    assert rows[f"{n} x {bench.WORKERS}: create -> Running p95"][:2] == ["10.0 s", "> 300 s"]
    assert rows[f"{n} x {bench.WORKERS}: create -> Running p95"][3] == "> 30.0"  # at least 300 s / 10 s
    assert rows["jobs Running"][:2] == [f"{n}/{n}", f"{n // 10}/{n}"]
    assert rows["operator CPU s, create -> all Running"][3] == "0.25"
    assert rows["peak RSS incl. children"][:2] == ["400 MiB", "100 MiB"]
    assert rows["peak RSS incl. children"][2] == "not run: no Go toolchain to build the Kubeflow MPI Operator"
    assert rows["peak RSS incl. children"][4] == ""


@pytest.mark.parametrize(("args", "scoped"), [
    (["python3", "-m", "mpijob_operator", "--namespace", "team-a"], True),
    (["python3", "-m", "mpijob_operator", "--namespace=team-a"], True),
    (["mpi-operator", "-namespace", "team-a"], True),
    (["python3", "-m", "mpijob_operator", "--no-leader-elect"], False),
    (["mpi-operator", "--namespace="], False),  # an empty namespace is every namespace
])
def test_namespace_scoped(bench, args, scoped):
    assert bench._namespace_scoped(args) is scoped
