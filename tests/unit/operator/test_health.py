"""Heartbeats (what /healthz calls stuck) and which endpoints each port serves."""

import math
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from mpijob_operator import health


def test_a_loop_is_stuck_only_past_its_promise():
    now = [100.0]
    beats = health.Heartbeats(clock=lambda: now[0])
    beats.beat("main", 60)
    beats.beat("runner-0", math.inf)  # waiting for work: never stuck
    now[0] += 59
    assert beats.stuck() == []
    now[0] += 2
    assert beats.stuck() == ["main (no heartbeat for 1s past its deadline)"]
    beats.beat("main", 60)
    beats.beat("runner-0", 420)  # in a run: --runner-timeout 300 + margin
    now[0] += 421
    assert [s.split()[0] for s in beats.stuck()] == ["main", "runner-0"]
    beats.forget("main")
    assert [s.split()[0] for s in beats.stuck()] == ["runner-0"]


def test_overdue_is_pure():
    assert health.overdue({"a": 10.0, "b": math.inf, "c": 30.0}, 20.0) == ["a (no heartbeat for 10s past its deadline)"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture
def registry():
    reg = CollectorRegistry()
    Counter("mpi_operator_test", "t", registry=reg).inc()
    return reg


def run_servers(monitoring, health_port, registry):
    return health.servers(monitoring, health_port, registry, lambda: None, lambda: "starting", lambda: None)


def test_monitoring_off_keeps_the_probes(registry):
    hp = free_port()
    servers = run_servers(0, hp, registry)
    try:
        assert len(servers) == 1
        assert get(hp, "/healthz") == (200, "ok\n")
        assert get(hp, "/readyz") == (503, "starting\n")
        assert get(hp, "/metrics")[0] == 404
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def test_separate_ports_split_the_endpoints(registry):
    mp, hp = free_port(), free_port()
    servers = run_servers(mp, hp, registry)
    try:
        assert get(mp, "/metrics")[0] == 200 and "mpi_operator_test_total 1.0" in get(mp, "/metrics")[1]
        assert get(mp, "/healthz")[0] == 404
        assert get(hp, "/healthz")[0] == 200 and get(hp, "/metrics")[0] == 404
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def test_one_port_serves_everything_as_before(registry):
    port = free_port()
    servers = run_servers(port, port, registry)
    try:
        assert len(servers) == 1
        assert get(port, "/metrics")[0] == 200 and get(port, "/healthz")[0] == 200
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()
    assert run_servers(0, 0, registry) == []


def test_a_worker_is_stuck_only_when_its_run_outlives_the_allowance():
    import threading

    from mpijob_operator.controller import Controller
    from mpijob_operator.metrics import Metrics
    from mpijob_operator.queue import WorkQueue

    now = [0.0]
    beats = health.Heartbeats(clock=lambda: now[0])
    release, started = threading.Event(), threading.Event()

    class Blocking:
        def run(self, keys):
            started.set()
            release.wait(10)
            raise RuntimeError("done")  # ends the worker; only the heartbeat is under test

    q = WorkQueue()
    c = Controller(q, Metrics(CollectorRegistry()), lambda slot: Blocking(), 1, 10, heartbeats=beats, run_allowance=420)
    c.start()
    now[0] = 10_000  # idle for hours: waiting for work is not stuck
    assert beats.stuck() == []
    q.add(("ns", "a"))
    assert started.wait(5)
    now[0] += 419
    assert beats.stuck() == []
    now[0] += 2
    assert beats.stuck() == ["runner-0 (no heartbeat for 1s past its deadline)"]
    release.set()
    q.shutdown()
