"""Warm runs: real ansible-runner runs of mpi.operator.mpijob_reconcile started ahead of need, no cluster. The API
server is an address nobody listens on, so the module fails its batch with a message naming the job it was handed:
proof the batch went through the hand-off."""
from __future__ import annotations

import os
import signal
import time

import pytest

from mpijob_operator.runner import BatchRunner, WarmRuns
from tests.integration._fixtures.operator import cmdline, descendants

A = ("ns", "a")


def _wait(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def kubeconfig(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    return str(path)


@pytest.fixture
def warm(tmp_path, kubeconfig):
    pools = []

    def make(idle_timeout: float = 120) -> tuple[WarmRuns, BatchRunner]:
        pool = WarmRuns(BatchRunner(str(tmp_path), slot="warm", kubeconfig=kubeconfig, timeout=60),
                        idle_timeout=idle_timeout)
        pools.append(pool)
        pool.start()
        return pool, BatchRunner(str(tmp_path), slot=0, kubeconfig=kubeconfig, timeout=60, warm=pool)

    yield make
    for pool in pools:
        pool.close()


def handed(outcome, key=A) -> bool:
    """The module reconciled the job (it failed on the API server, naming the job's path)."""
    return f"/mpijobs/{key[1]}" in (outcome.jobs[key].error or "") and outcome.jobs[key].retry


def test_a_batch_handed_to_the_warm_run_skips_the_start(warm, tmp_path, kubeconfig):
    pool, runner = warm()
    _wait(pool.ready, 60, "the warm run to wait for its batch")
    first = pool._current
    outcome = runner.run([A])
    assert handed(outcome), outcome
    assert pool._current is not first, "no new warm run was started when this one was taken"
    cold = BatchRunner(str(tmp_path), slot=1, kubeconfig=kubeconfig, timeout=60).run([A])
    assert handed(cold), cold
    # the warm run paid ansible-runner's, ansible's and the module's start before the batch existed
    assert outcome.duration < cold.duration, (outcome.duration, cold.duration)
    _wait(pool.ready, 60, "the next warm run")
    assert handed(runner.run([("ns", "b")]), ("ns", "b"))


def test_an_idle_warm_run_ends_on_its_timeout_and_is_replaced(warm):
    pool, runner = warm(idle_timeout=1)
    _wait(lambda: pool._count >= 3, 60, "two warm runs to time out idle and be replaced")
    assert handed(runner.run([A]))


def test_a_warm_run_that_died_loses_no_batch(warm):
    pool, runner = warm()
    _wait(pool.ready, 60, "the warm run to wait for its batch")
    modules = [pid for pid in descendants(os.getpid()) if "python" in cmdline(pid)
               and "AnsiballZ_mpijob_reconcile" in cmdline(pid) and "/bin/sh" not in cmdline(pid)]
    assert modules
    for pid in modules:
        os.kill(pid, signal.SIGKILL)
    outcome = runner.run([A])  # run cold: the warm one did not acknowledge the batch
    assert handed(outcome), outcome


def test_close_ends_the_idle_run_and_leaves_nothing_running(warm):
    pool, _runner = warm()
    _wait(pool.ready, 60, "the warm run to wait for its batch")
    assert descendants(os.getpid())
    started = time.monotonic()
    pool.close()
    assert time.monotonic() - started < 10
    _wait(lambda: not descendants(os.getpid()), 10, "no process left below this one")
    assert not os.path.exists(pool.dir)
    assert pool.run([A], [{"namespace": "ns", "name": "a"}]) is None  # closed: a batch runs cold


def test_with_max_runs_the_next_warm_run_waits_for_a_slot(tmp_path, kubeconfig):
    # --threadiness 1: the run holding a batch and a warm run would be two processes where cold runs take one
    pool = WarmRuns(BatchRunner(str(tmp_path), slot="warm", kubeconfig=kubeconfig, timeout=60), max_runs=1)
    try:
        pool.start()
        _wait(pool.ready, 60, "the warm run to wait for its batch")
        first = pool._current
        seen = []
        original = first.give

        def give(*args):
            seen.append(pool._current)  # while this run holds the batch
            return original(*args)

        first.give = give
        assert handed(pool.run([A], [{"namespace": "ns", "name": "a"}]))
        assert seen == [None], "a second run was started while one held a batch"
        assert pool._current is not None and pool._current is not first, "no warm run after the batch"
    finally:
        pool.close()


# ---- the hand-off alone, both ends in this process (module_utils/warm.py) ----------------------------------------

def _module_end(path, timeout, out):
    import threading

    from ansible_collections.mpi.operator.plugins.module_utils.warm import receive_batch

    t = threading.Thread(target=lambda: out.append(receive_batch(path, timeout)), daemon=True)
    t.start()
    return t


def test_handoff_delivers_the_batch_once_acknowledged(tmp_path):
    from ansible_collections.mpi.operator.plugins.module_utils.warm import Handoff

    h, got = Handoff(str(tmp_path / "h.sock")), []
    t = _module_end(h.path, 10, got)
    assert h.give([{"namespace": "ns", "name": "a"}], 10, lambda: True)
    t.join(5)
    assert got == [[{"namespace": "ns", "name": "a"}]] and h.pid == os.getpid()
    assert not os.path.exists(h.path)


def test_handoff_refused_when_the_module_timed_out_or_the_operator_closed(tmp_path):
    from ansible_collections.mpi.operator.plugins.module_utils.warm import Handoff

    h, got = Handoff(str(tmp_path / "h.sock")), []
    _module_end(h.path, 0.3, got).join(5)  # no batch within its timeout
    assert got == [None]
    assert not h.give([{"namespace": "ns", "name": "a"}], 1, lambda: True)  # it is gone: the batch runs cold

    h, got = Handoff(str(tmp_path / "h2.sock")), []
    t = _module_end(h.path, 30, got)
    time.sleep(0.2)
    started = time.monotonic()
    h.close()  # shutdown
    t.join(5)
    assert got == [None] and time.monotonic() - started < 2
