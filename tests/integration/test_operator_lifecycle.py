"""The operator loop end to end on the local cluster (kwok nodes): the real operator process, the real
reconcile module through ansible-runner, a real API server. One operator per test, scoped to its namespace."""

from __future__ import annotations

import time

import pytest

from hack.lib.wait import wait_until
from tests.support.mpijob import (
    children,
    create_mpijob,
    delete_mpijob,
    expected_children,
    get_mpijob,
    has_condition,
    new_mpijob,
    patch_mpijob,
    wait_condition,
    wait_event_reasons,
)

pytestmark = [pytest.mark.integration]


def _without_launcher_pod(found: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: sorted(v) for k, v in found.items() if k != "LauncherPod"}


OUTCOME = "kwok.mpi.operator/outcome"  # docs/dev/local-cluster.md: how a simulated pod ends
OUTCOME_AFTER = "kwok.mpi.operator/outcome-after"


def test_created_running_succeeded(running_operator, api_client, namespace):
    started = time.monotonic()
    # the launcher runs 8 s: long enough to be seen Running together with the workers
    create_mpijob(api_client, namespace, new_mpijob("pi", workers=2, launcher_annotations={OUTCOME_AFTER: "8s"}))
    want = expected_children("pi", 2)
    wait_until(
        lambda: _without_launcher_pod(children(api_client, namespace, "pi")) == want, 30, what="every child of pi"
    )
    children_after = time.monotonic() - started
    job = wait_condition(api_client, namespace, "pi", "Created", 10)
    assert job["status"]["conditions"][0]["reason"] == "MPIJobCreated"
    wait_condition(api_client, namespace, "pi", "Running", 60)
    job = wait_condition(api_client, namespace, "pi", "Succeeded", 90)
    assert job["status"].get("completionTime")
    assert not has_condition(job, "Running")  # a finished job is not Running any more
    wait_event_reasons(api_client, namespace, "pi", lambda r: {"MPIJobCreated", "MPIJobSucceeded"} <= r)
    assert running_operator.metric("mpi_operator_jobs_created_total") == 1
    wait_until(lambda: running_operator.metric("mpi_operator_jobs_successful_total") == 1, 10, what="success counted")
    assert running_operator.metric("mpi_operator_jobs_failed_total") == 0
    assert running_operator.metric("mpi_operator_job_info", {"launcher": "pi-launcher", "namespace": namespace}) == 1
    assert running_operator.metric("mpi_operator_is_leader") == 1
    assert running_operator.metric("mpi_operator_runner_duration_seconds_count") >= 1
    assert running_operator.get("/healthz")[0] == 200
    # the target is 3 s on an idle operator; `make bench` measures it, this only catches a regression
    assert children_after < 15, f"children took {children_after:.1f}s"


def test_launcher_failure_fails_the_job(running_operator, api_client, namespace):
    body = new_mpijob("bad", workers=1, launcher_annotations={OUTCOME: "fail"}, runPolicy={"backoffLimit": 0})
    create_mpijob(api_client, namespace, body)
    job = wait_condition(api_client, namespace, "bad", "Failed", 90)
    assert job["status"].get("completionTime")
    assert not has_condition(job, "Succeeded")
    wait_event_reasons(
        api_client,
        namespace,
        "bad",
        lambda r: "MPIJobFailed" in r or any(x.startswith("BackoffLimitExceeded") for x in r),
    )
    wait_until(lambda: running_operator.metric("mpi_operator_jobs_failed_total") == 1, 10, what="failure counted")
    assert running_operator.metric("mpi_operator_jobs_successful_total") == 0


def test_suspend_and_resume(running_operator, api_client, namespace):
    create_mpijob(api_client, namespace, new_mpijob("sus", workers=2, runPolicy={"suspend": True}))
    wait_condition(api_client, namespace, "sus", "Suspended", 30)
    # a wrong operator would create the pods in the run that set Suspended, or in one its events start
    wait_until(running_operator.idle, 30, what="the operator idle after suspending")
    assert children(api_client, namespace, "sus")["Worker"] == []
    wait_event_reasons(api_client, namespace, "sus", lambda r: "MPIJobSuspended" in r)
    patch_mpijob(api_client, namespace, "sus", {"spec": {"runPolicy": {"suspend": False}}})
    wait_condition(api_client, namespace, "sus", "Suspended", 30, status="False")
    wait_event_reasons(api_client, namespace, "sus", lambda r: "MPIJobResumed" in r)
    wait_condition(api_client, namespace, "sus", "Succeeded", 90)


def test_wait_for_workers_ready_creates_the_launcher_after_the_workers(running_operator, api_client, namespace):
    # one worker never starts: the launcher must not be created
    create_mpijob(
        api_client,
        namespace,
        new_mpijob(
            "held", workers=2, launcherCreationPolicy="WaitForWorkersReady", worker_annotations={OUTCOME: "pending"}
        ),
    )
    wait_until(lambda: len(children(api_client, namespace, "held")["Worker"]) == 2, 30, what="held's workers")
    create_mpijob(api_client, namespace, new_mpijob("ready", workers=2, launcherCreationPolicy="WaitForWorkersReady"))
    wait_condition(api_client, namespace, "ready", "Succeeded", 90)
    assert children(api_client, namespace, "held")["Job"] == []
    job = get_mpijob(api_client, namespace, "held")
    assert not has_condition(job, "Running")


def test_scaling_workers_up_and_down(running_operator, api_client, namespace):
    create_mpijob(api_client, namespace, new_mpijob("elastic", workers=2, launcher_annotations={OUTCOME: "run"}))
    wait_condition(api_client, namespace, "elastic", "Running", 60)
    hostfile = _hostfile(api_client, namespace, "elastic")
    assert len(hostfile) == 2
    patch_mpijob(api_client, namespace, "elastic", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 4}}}})
    four = [f"elastic-worker-{i}" for i in range(4)]
    wait_until(lambda: children(api_client, namespace, "elastic")["Worker"] == four, 30, what="4 workers")
    wait_until(lambda: len(_hostfile(api_client, namespace, "elastic")) == 4, 30, what="hostfile with 4 workers")
    patch_mpijob(api_client, namespace, "elastic", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    wait_until(
        lambda: children(api_client, namespace, "elastic")["Worker"] == ["elastic-worker-0"],
        30,
        what="the highest workers removed",
    )
    wait_until(lambda: len(_hostfile(api_client, namespace, "elastic")) == 1, 30, what="hostfile with 1 worker")


def _hostfile(api_client, namespace, name):
    from kubernetes import client

    cm = client.CoreV1Api(api_client).read_namespaced_config_map(f"{name}-config", namespace)
    return [line for line in (cm.data or {}).get("hostfile", "").splitlines() if line.strip()]


def test_clean_pod_policy(running_operator, api_client, namespace):
    # one job per policy, side by side: the workers left once each has succeeded
    want = {"All": 0, "Running": 0, "None": 2}
    for policy in want:
        create_mpijob(
            api_client,
            namespace,
            new_mpijob(f"clean-{policy.lower()}", workers=2, runPolicy={"cleanPodPolicy": policy}),
        )
    for policy, workers_left in want.items():
        name = f"clean-{policy.lower()}"
        wait_condition(api_client, namespace, name, "Succeeded", 90)
        wait_until(
            lambda name=name, n=workers_left: len(children(api_client, namespace, name)["Worker"]) == n,
            30,
            what=f"{workers_left} workers left under cleanPodPolicy {policy}",
        )
    # nothing more happens: the operator has acted on every event of the cleanup (its queue empty, no run in flight)
    wait_until(running_operator.idle, 30, what="the operator idle after the cleanup")
    for policy, workers_left in want.items():
        name = f"clean-{policy.lower()}"
        assert len(children(api_client, namespace, name)["Worker"]) == workers_left, policy
        # the launcher Job (and its completed pod) stays, as in Kubeflow, for its logs
        assert children(api_client, namespace, name)["Job"] == [f"{name}-launcher"]


def test_deleting_a_job_garbage_collects_its_children(running_operator, api_client, namespace):
    create_mpijob(api_client, namespace, new_mpijob("gone", workers=2, launcher_annotations={OUTCOME: "run"}))
    want = expected_children("gone", 2)
    wait_until(lambda: _without_launcher_pod(children(api_client, namespace, "gone")) == want, 30, what="children")
    delete_mpijob(api_client, namespace, "gone")
    empty = {k: [] for k in want}
    wait_until(
        lambda: _without_launcher_pod(children(api_client, namespace, "gone")) == empty,
        60,
        what="children garbage-collected",
    )
    wait_until(
        lambda: (
            running_operator.metric("mpi_operator_job_info", {"launcher": "gone-launcher", "namespace": namespace})
            is None
        ),
        20,
        what="job_info series removed",
    )
