"""The operator killed mid-batch and restarted, two replicas with leader election, graceful shutdown,
the cluster-wide mode."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import time

import pytest
from kubernetes import client

from hack.lib.operator import alive, cmdline, descendants
from hack.lib.wait import wait_until
from tests.support.mpijob import (
    children,
    create_mpijob,
    expected_children,
    get_mpijob,
    has_condition,
    new_mpijob,
    owned_children,
    wait_condition,
)

pytestmark = [pytest.mark.integration]


def _all_succeeded(api_client, namespace, names):
    return all(has_condition(get_mpijob(api_client, namespace, n), "Succeeded") for n in names)


def _owned_children(api_client, namespace):
    """Every object the operator creates in the namespace, with the uid of its controller."""
    return [(c.kind, c.name, c.owner_kind, c.owner_uid) for c in owned_children(api_client, namespace)]


def _batch_in_flight(op) -> bool:
    """A batch was handed to a run that has not ended (batch_size counts a run's start, runner_runs its end); the idle
    warm run, always there, is no batch in flight."""
    started = op.metric("mpi_operator_batch_size_count") or 0
    return started > sum(op.metric_values("mpi_operator_runner_runs_total"))


def test_killed_mid_batch_then_restarted_every_job_finishes_once(operator_factory, api_client, namespace):
    args = ("--namespace", namespace, "--no-leader-elect", "--threadiness", "1", "--max-batch", "4")
    first = operator_factory(*args, name="first")
    names = [f"k{i:02d}" for i in range(12)]
    for n in names:
        create_mpijob(api_client, namespace, new_mpijob(n, workers=2))
    # wait for a batch to have finished and another to be in flight, then kill everything at once
    wait_until(
        lambda: sum(first.metric_values("mpi_operator_runner_runs_total")) >= 1 and _batch_in_flight(first),
        60,
        what="a batch in flight after a finished one",
        interval=0.01,
    )
    first.kill_all()
    assert not _all_succeeded(api_client, namespace, names), "too late: every job had finished before the kill"

    operator_factory(*args, name="second")
    wait_until(lambda: _all_succeeded(api_client, namespace, names), 180, what="every job Succeeded after the restart")
    for n in names:
        found = children(api_client, namespace, n)
        assert {k: sorted(v) for k, v in found.items() if k != "LauncherPod"} == expected_children(n, 2), n
        assert len(found["LauncherPod"]) == 1, f"{n}: launcher pods {found['LauncherPod']}"
        job = get_mpijob(api_client, namespace, n)
        assert [c["type"] for c in job["status"]["conditions"]].count("Created") == 1
    uids = {get_mpijob(api_client, namespace, n)["metadata"]["uid"] for n in names}
    launcher_jobs = {j.metadata.uid for j in client.BatchV1Api(api_client).list_namespaced_job(namespace).items}
    for kind, name, owner_kind, owner_uid in _owned_children(api_client, namespace):
        if kind == "Pod" and owner_kind == "Job":
            assert owner_uid in launcher_jobs, f"orphan launcher pod {name}"
        else:
            assert owner_kind == "MPIJob" and owner_uid in uids, f"orphan {kind} {name}"


def _leaders(ops):
    return [op for op in ops if op.metric("mpi_operator_is_leader") == 1]


def test_two_replicas_one_leader_and_takeover(operator_factory, api_client, namespace):
    args = ("--namespace", namespace, "--leader-elect", "--lock-namespace", namespace)
    a = operator_factory(*args, name="replica-a")
    b = operator_factory(*args, name="replica-b")
    ops = [a, b]
    leader = wait_until(lambda: _leaders(ops)[0] if len(_leaders(ops)) == 1 else None, 30, what="one leader")
    follower = b if leader is a else a
    create_mpijob(api_client, namespace, new_mpijob("led", workers=1))
    wait_condition(api_client, namespace, "led", "Succeeded", 90)
    assert _leaders(ops) == [leader]
    assert (follower.metric("mpi_operator_batch_size_count") or 0) == 0, "the follower reconciled"
    assert follower.get("/readyz")[0] == 200  # a standby replica is ready: it waits for the lease
    lease = client.CoordinationV1Api(api_client).read_namespaced_lease("mpi-operator", namespace)
    assert lease.spec.holder_identity and lease.spec.lease_duration_seconds == 15

    killed = time.monotonic()
    leader.kill_all()
    wait_until(
        lambda: follower.metric("mpi_operator_is_leader") == 1, 30, what="the follower to take over", interval=0.2
    )
    takeover = time.monotonic() - killed
    assert takeover <= 15 + 2 + 3, f"takeover took {takeover:.1f}s"
    create_mpijob(api_client, namespace, new_mpijob("after", workers=1))
    wait_condition(api_client, namespace, "after", "Succeeded", 90)

    # graceful shutdown: SIGTERM exits 0 and hands the lease back at once
    follower.signal(signal.SIGTERM)
    assert follower.wait(30) == 0
    lease = client.CoordinationV1Api(api_client).read_namespaced_lease("mpi-operator", namespace)
    assert not lease.spec.holder_identity


@pytest.mark.serial  # watches every namespace: it would reconcile every concurrent test's jobs
def test_cluster_wide_mode(operator_factory, api_client, namespace):
    op = operator_factory("--no-leader-elect")
    create_mpijob(api_client, namespace, new_mpijob("wide", workers=1))
    wait_condition(api_client, namespace, "wide", "Succeeded", 90)
    assert op.get("/readyz")[0] == 200


def test_sigterm_lets_the_runs_in_flight_finish(operator_factory, api_client, namespace):
    op = operator_factory("--namespace", namespace, "--no-leader-elect", name="graceful")
    names = [f"g{i}" for i in range(3)]
    for n in names:
        create_mpijob(api_client, namespace, new_mpijob(n, workers=1))
    wait_until(lambda: _batch_in_flight(op), 60, what="a batch in flight", interval=0.01)
    runs = descendants(op.proc.pid)
    op.signal(signal.SIGTERM)
    assert op.wait(120) == 0
    assert "shutting down" in op.logs()
    # the run that was in flight completed: every job it held got its Created condition and its children
    created = [n for n in names if has_condition(get_mpijob(api_client, namespace, n), "Created")]
    assert created, "the run in flight was abandoned"
    for n in created:
        found = children(api_client, namespace, n)
        assert found["Job"] == [f"{n}-launcher"] and len(found["Worker"]) == 1, n
    assert not alive(runs), "processes of the operator's runs outlived it"


def test_sigterm_ends_the_idle_warm_run_and_leaves_no_process(operator_factory, namespace):
    op = operator_factory("--namespace", namespace, "--no-leader-elect", name="warm")

    # the warm run: ansible-runner's ansible, its worker and the module waiting for a batch
    def module_connected() -> bool:
        """The warm run's module has imported and opened its socket to the operator: it waits for a batch."""
        for pid in descendants(op.proc.pid):
            if "AnsiballZ_mpijob_reconcile" in cmdline(pid):
                with contextlib.suppress(OSError):
                    if any(os.readlink(fd).startswith("socket:") for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir()):
                        return True
        return False

    wait_until(module_connected, 60, what="the warm run's module to connect", interval=0.1)
    runs = descendants(op.proc.pid)
    stopped = time.monotonic()
    op.signal(signal.SIGTERM)
    assert op.wait(60) == 0
    assert time.monotonic() - stopped < 15, "the idle warm run held the shutdown back"
    wait_until(lambda: not alive(runs), 10, what="the warm run to end with the operator")


def test_without_warm_runs_no_run_waits_idle(operator_factory, api_client, namespace):
    op = operator_factory("--namespace", namespace, "--no-leader-elect", "--no-warm-runs", name="cold")
    create_mpijob(api_client, namespace, new_mpijob("cold", workers=1))
    wait_condition(api_client, namespace, "cold", "Created", 60)
    # runs come and go (its pods' events); none is ever a warm one, waiting on a socket (batch_from in its args)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        assert not [p for p in descendants(op.proc.pid) if "batch_from" in cmdline(p)], "a warm run with --no-warm-runs"
        time.sleep(0.1)
