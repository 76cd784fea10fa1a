"""Warm runs: real ansible-runner runs of mpi.operator.mpijob_reconcile started ahead of need, no cluster. The API
server is an address nobody listens on, so the module fails each batch with a message naming the job it was handed:
proof the batch went through the hand-off."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import job_key
from hack.lib.operator import cmdline, descendants
from hack.lib.wait import wait_until
from mpijob_operator.runner import BatchRunner, WarmRuns

A = job_key("ns", "a")


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

    def make(lifetime: float = 120, slots: int = 1, config: str = kubeconfig) -> tuple[WarmRuns, BatchRunner]:
        pool = WarmRuns(
            BatchRunner(str(tmp_path), slot="warm", kubeconfig=config, timeout=60), lifetime=lifetime, slots=slots
        )
        pools.append(pool)
        pool.start()
        return pool, BatchRunner(str(tmp_path), slot=0, kubeconfig=config, timeout=60, warm=pool)

    yield make
    for pool in pools:
        pool.close()


def handed(ran, key=A) -> bool:
    """The module reconciled the job (it failed on the API server, naming the job's path)."""
    return f"/mpijobs/{key.name}" in (ran.jobs[key].error or "") and ran.jobs[key].retry


def test_one_warm_run_serves_batch_after_batch_without_a_start(warm, tmp_path, kubeconfig):
    pool, runner = warm()
    wait_until(pool.ready, 60, "the warm run to wait for its batch", interval=0.05)
    first = pool._current
    ran = [runner.run([job_key(A.namespace, name)]) for name in ("a", "b", "c")]
    for name, one in zip("abc", ran, strict=True):
        assert handed(one, job_key(A.namespace, name)), one
    assert pool._current is first and first.alive() and pool.batches == 3, "the batches were not served by one run"
    cold = BatchRunner(str(tmp_path), slot=1, kubeconfig=kubeconfig, timeout=60).run([A])
    assert handed(cold), cold
    # the warm run paid ansible-runner's, ansible's and the module's start once, before the batches existed
    assert max(o.duration for o in ran) < cold.duration, ([o.duration for o in ran], cold.duration)


@pytest.fixture
def silent(tmp_path):
    """A kubeconfig whose API server accepts and never answers: each batch holds its slot until the request times
    out (or its module is killed)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    config = tmp_path / "silent"
    config.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{server.getsockname()[1]}", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    yield str(config)
    server.close()


def modules() -> list[int]:
    """The reconcile modules running below this process (not their /bin/sh)."""
    return [
        pid
        for pid in descendants(os.getpid())
        if "python" in cmdline(pid) and "AnsiballZ_mpijob_reconcile" in cmdline(pid) and "/bin/sh" not in cmdline(pid)
    ]


def test_a_warm_run_serves_its_slots_at_once(warm, silent):
    pool, runner = warm(slots=2, config=silent)
    wait_until(pool.ready, 60, "the warm run to wait for its batches", interval=0.05)
    ran = {}
    threads = [
        threading.Thread(target=lambda n=n: ran.setdefault(n, runner.run([job_key(A.namespace, n)]))) for n in "ab"
    ]
    for t in threads:
        t.start()
    wait_until(lambda: pool.batches == 2, 20, "both batches to be taken while neither is done", interval=0.05)
    assert not ran
    # a batch whose module dies after taking it is not lost: it comes back to be retried, as a failed run's
    pool._current.kill()
    for t in threads:
        t.join(30)
    for n in "ab":
        result = ran[n].jobs[job_key(A.namespace, n)]
        assert ran[n].status == "failed" and result.retry and "without this batch's result" in result.error


def test_a_retired_run_ends_before_its_successor_starts(warm, silent):
    """One run's processes at a time: the successor of a run that still holds a batch starts once that run ended."""
    pool, runner = warm(config=silent)
    wait_until(pool.ready, 60, "the warm run to wait for its batch", interval=0.05)
    old = pool._current
    held = threading.Thread(target=runner.run, args=([A],))
    held.start()
    wait_until(lambda: pool.batches == 1, 20, "the first batch to be taken", interval=0.05)
    pool.RETIRE_S = pool.lifetime + 1  # every run is in its last seconds now: the next batch retires this one
    second = threading.Thread(target=runner.run, args=([job_key(A.namespace, "b")],))
    second.start()
    new = wait_until(lambda: pool._current is not old and pool._current, 10, "the successor to be made", interval=0.05)
    seen = []
    for _ in range(30):  # 3 s, while the retired run still holds its batch
        seen.append(len(modules()))
        time.sleep(0.1)
    assert old.alive() and not new.ready() and max(seen) == 1, seen
    old.kill()  # its batch ends (retried), then the run
    held.join(30)
    wait_until(new.ready, 60, "the successor to start once the retired run ended", interval=0.05)
    assert not old.alive() and len(modules()) == 1
    new.kill()
    second.join(30)


def test_a_warm_run_is_replaced_when_its_time_is_up(warm):
    pool, runner = warm(lifetime=3)
    # the third run, once it is set (the count goes up while the run is being made, before it is the current one)
    first = wait_until(
        lambda: pool._count >= 3 and pool._current,
        60,
        "two warm runs to end on their time and be replaced",
        interval=0.05,
    )
    # within its last RETIRE_S seconds a run takes no batch: it is retired, and its successor takes it
    assert handed(runner.run([A]))
    assert pool._current is not first
    wait_until(lambda: not first.alive(), 30, "the retired run to end", interval=0.05)


def test_a_warm_run_that_died_loses_no_batch(warm):
    pool, runner = warm()
    wait_until(pool.ready, 60, "the warm run to wait for its batch", interval=0.05)
    running = modules()
    assert running
    for pid in running:
        os.kill(pid, signal.SIGKILL)
    ran = runner.run([A])  # run cold: the warm one did not acknowledge the batch
    assert handed(ran), ran


def test_close_ends_the_idle_run_and_leaves_nothing_running(warm):
    pool, _runner = warm()
    wait_until(pool.ready, 60, "the warm run to wait for its batch", interval=0.05)
    assert descendants(os.getpid())
    started = time.monotonic()
    pool.close()
    assert time.monotonic() - started < 10
    wait_until(lambda: not descendants(os.getpid()), 10, "no process left below this one", interval=0.05)
    assert not os.path.exists(pool.dir)
    assert pool.run([A], [{"namespace": "ns", "name": "a"}]) is None  # closed: a batch runs cold


# ---- the hand-off alone, both ends in this process (module_utils/warm.py) ----------------------------------------


def _module_end(path, seconds, out, slots=1):
    from ansible_collections.mpi.operator.plugins.module_utils.warm import serve_batches

    def handle(jobs):
        out.append(jobs)
        return {"jobs": [dict(j, done=True) for j in jobs]}

    t = threading.Thread(
        target=lambda: out.append(serve_batches(path, slots, time.monotonic() + seconds, handle)), daemon=True
    )
    t.start()
    return t


def test_handoff_serves_batches_with_their_results(tmp_path):
    from ansible_collections.mpi.operator.plugins.module_utils.warm import Handoff

    h, got = Handoff(str(tmp_path / "h.sock")), []
    t = _module_end(h.path, 30, got)
    for name in ("a", "b"):
        taken, result = h.give([{"namespace": "ns", "name": name}], 10, lambda: True, 10)
        assert taken and result == {"jobs": [{"namespace": "ns", "name": name, "done": True}]}
    assert h.pid == os.getpid()
    h.close()  # the module's waiting slot reads EOF: it returns the number of batches it served
    t.join(5)
    assert got == [[{"namespace": "ns", "name": "a"}], [{"namespace": "ns", "name": "b"}], 2]
    assert not os.path.exists(h.path)


def test_handoff_not_taken_when_the_module_timed_out_or_the_operator_closed(tmp_path):
    from ansible_collections.mpi.operator.plugins.module_utils.warm import Handoff

    h, got = Handoff(str(tmp_path / "h.sock")), []
    _module_end(h.path, 0.3, got).join(5)  # its time was up before any batch came
    assert got == [0]
    assert h.give([{"namespace": "ns", "name": "a"}], 1, lambda: True, 10) == (False, None)  # the caller runs it

    h, got = Handoff(str(tmp_path / "h2.sock")), []
    t = _module_end(h.path, 30, got)
    time.sleep(0.2)
    started = time.monotonic()
    h.close()  # shutdown
    t.join(5)
    assert got == [0] and time.monotonic() - started < 2


def test_a_successor_closed_while_it_waits_never_starts(warm, silent):
    pool, runner = warm(config=silent)
    wait_until(pool.ready, 60, "the warm run to wait for its batch", interval=0.05)
    old = pool._current
    threading.Thread(target=runner.run, args=([A],), daemon=True).start()  # held by the silent API server
    wait_until(lambda: pool.batches == 1, 20, "the first batch to be taken", interval=0.05)
    pool.RETIRE_S = pool.lifetime + 1
    threading.Thread(target=runner.run, args=([job_key(A.namespace, "b")],), daemon=True).start()
    new = wait_until(lambda: pool._current is not old and pool._current, 10, "the successor to be made", interval=0.05)
    pool.close(wait=2)  # shut down: the held batch's run is killed; the successor must not start after it
    wait_until(lambda: not new.alive(), 15, "the successor's thread to end", interval=0.05)
    # never run (its result is the one it starts with); the second batch, not taken, is the caller's to run cold
    assert new.handoff.pid is None and new.result[3] == "error: the run did not end", new.result
