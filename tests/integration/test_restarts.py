"""The failure policy on the local cluster (kwok pods whose status the tests set, a kwok node the tests lose): the CRDs
refuse bad policies naming the field; the real operator restarts the whole world after an eviction and after a
program failure, counts each against its budget, and fails the job saying which budget ran out; a pass after an
operator that died between the status and the deletions finishes the restart; a job deleted in the middle leaves
nothing; a lost node's pods go at once and the scheduler's taint keeps the new world off it."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from hack.lib.kwok import end_pod, kwok_node, lose_node, node_ready
from hack.lib.wait import wait_until
from tests.integration._fixtures.install import MANIFESTS
from tests.support.mpijob import create_mpijob, delete_mpijob, get_mpijob, install_crd, new_mpijob, wait_condition
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
OUTCOME, OUTCOME_AFTER, EXIT_CODE = (
    "kwok.mpi.operator/outcome",
    "kwok.mpi.operator/outcome-after",
    "kwok.mpi.operator/exit-code",
)
ATTEMPT = "mpi.operator/attempt"
FILES = ROOT / "roles/crds/files"


def _core(api_client: Any):
    from kubernetes import client

    return client.CoreV1Api(api_client)


def pods(api_client: Any, namespace: str, name: str) -> list[Any]:
    return (
        _core(api_client).list_namespaced_pod(namespace, label_selector=f"training.kubeflow.org/job-name={name}").items
    )


def live(api_client: Any, namespace: str, name: str, role: str) -> list[Any]:
    return [
        p
        for p in pods(api_client, namespace, name)
        if p.metadata.labels.get("training.kubeflow.org/job-role") == role and not p.metadata.deletion_timestamp
    ]


def fail_pod(api_client: Any, namespace: str, pod: str, code: int = 1, reason: str = "", disruption: str = "") -> None:
    end_pod(_core(api_client), namespace, pod, code, pod_reason=reason, disruption=disruption)


def restarted(api_client: Any, namespace: str, name: str, count: int, timeout: float = 60) -> dict[str, Any]:
    def seen() -> dict[str, Any] | None:
        job = get_mpijob(api_client, namespace, name) or {}
        return job if (job.get("status") or {}).get("restartCount") == count else None

    return wait_until(seen, timeout, what=f"{namespace}/{name} restartCount={count}")


def restart_said(api_client: Any, namespace: str, name: str, job: dict[str, Any], reason: str) -> str:
    """The message of the restart that made `job`'s attempt: its Restarting condition's, or, once the new world is
    Running (Running replaces Restarting: on a fast cluster that can be before the test reads the job), the Warning
    Event of that restart, which says the same."""
    cond = next((c for c in job["status"].get("conditions") or [] if c["type"] == "Restarting"), None)
    if cond is not None:
        assert cond["reason"] == reason, cond
        return str(cond["message"])
    said = [e for e in events(api_client, namespace, name) if e.reason == reason]
    assert said, f"no Restarting condition and no {reason} Event: {job['status']}"
    return str(max(said, key=lambda e: e.last_timestamp or e.first_timestamp).message)


def events(api_client: Any, namespace: str, name: str) -> list[Any]:
    return (
        _core(api_client)
        .list_namespaced_event(namespace, field_selector=f"involvedObject.kind=MPIJob,involvedObject.name={name}")
        .items
    )


def running_again(api_client: Any, namespace: str, name: str, attempt: int) -> None:
    """Every pod of the job is of `attempt` and Running, the launcher's among them."""

    def check() -> bool:
        found = [p for p in pods(api_client, namespace, name) if not p.metadata.deletion_timestamp]
        return (
            bool(found)
            and all(p.metadata.labels.get(ATTEMPT) == str(attempt) for p in found)
            and any(p.metadata.labels.get("training.kubeflow.org/job-role") == "launcher" for p in found)
            and all(p.status.phase == "Running" for p in found)
        )

    wait_until(check, 60, what=f"{namespace}/{name} running as attempt {attempt}")


# ---- refused at apply ----------------------------------------------------------------------------------------------


def _apply(kubectl: Kubectl, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return kubectl("apply", "--server-side", "--field-manager=restarts-test", "-f", "-", input=json.dumps(obj))


BAD = [
    ({"maxRestarts": -1}, "failurePolicy.maxRestarts"),
    ({"rules": [{"action": "Retry", "onPodConditions": [{"type": "X"}]}]}, "failurePolicy.rules[0].action"),
    ({"rules": [{"action": "Count"}]}, "must set exactly one of onExitCodes and onPodConditions"),
    (
        {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 3]}}]},
        "must not contain 0 with the operator In",
    ),
    (
        {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3, 3]}}]},
        "failurePolicy.rules[0].onExitCodes.values",  # server-side apply: "duplicate entries for key [=3]"
    ),
    ({"workerFailure": "Sometimes"}, "failurePolicy.workerFailure"),
]


@pytest.mark.parametrize(("policy", "named"), BAD)
def test_the_crds_refuse_a_bad_policy_naming_the_field(
    kubectl: Kubectl, api_client: Any, operator_crd: None, namespace: str, policy: dict, named: str
) -> None:
    for group in ("batch.test.bdap.com", "batch.tensorstack.dev"):
        install_crd(api_client, FILES / f"mpijobs.{group}.yaml")

    kubeflow = new_mpijob("bad", runPolicy={"failurePolicy": policy})
    kubeflow["metadata"]["namespace"] = namespace
    t9k = yaml.safe_load((MANIFESTS / "t9k-mpi-example.yaml").read_text())
    t9k["metadata"]["namespace"] = namespace
    t9k["spec"].setdefault("runPolicy", {})["failurePolicy"] = policy
    bdap = yaml.safe_load((MANIFESTS / "bdap-simple-train-cpu.yaml").read_text())
    bdap["metadata"]["namespace"] = namespace
    bdap["spec"]["failurePolicy"] = policy
    v1 = json.loads(json.dumps(kubeflow).replace("kubeflow.org/v2beta1", "kubeflow.org/v1"))
    for obj in (kubeflow, v1, t9k, bdap):
        done = _apply(kubectl, obj)
        assert done.returncode != 0 and named in done.stderr, (obj["apiVersion"], done.stderr)


def test_backoff_limit_with_a_policy_is_refused(kubectl: Kubectl, operator_crd: None, namespace: str) -> None:
    obj = new_mpijob("bad", runPolicy={"backoffLimit": 2, "failurePolicy": {}})
    obj["metadata"]["namespace"] = namespace
    done = _apply(kubectl, obj)
    assert done.returncode != 0
    assert "spec.runPolicy.backoffLimit must not be set with spec.runPolicy.failurePolicy" in done.stderr


# ---- the operator restarts the world -------------------------------------------------------------------------------


def test_an_eviction_then_a_program_failure_restart_the_world_each_on_its_own_budget(
    running_operator, api_client: Any, namespace: str
) -> None:
    """maxRestarts 1 and maxDisruptionRestarts 1: an eviction and a non-zero exit each restart the whole world once;
    every pod and the launcher Job of the old attempt go before the new ones come (no pod made twice), the pods say
    their attempt, one Event per restart, and the job Succeeds."""
    name = "restarts"
    body = new_mpijob(
        name,
        2,
        launcher_annotations={OUTCOME_AFTER: "30s"},
        runPolicy={"failurePolicy": {"maxRestarts": 1, "maxDisruptionRestarts": 1}},
    )
    create_mpijob(api_client, namespace, body)
    wait_condition(api_client, namespace, name, "Running", 60)
    first = {p.metadata.uid for p in pods(api_client, namespace, name)}
    fail_pod(api_client, namespace, f"{name}-worker-0", 137, reason="Evicted", disruption="EvictionByEvictionAPI")
    job = restarted(api_client, namespace, name, 1)
    said = restart_said(api_client, namespace, name, job, "MPIJobDisruption")
    assert f"worker pod {name}-worker-0 on node kwok-node-" in said
    assert job["status"]["restarts"] == {"program": 0, "disruption": 1}
    running_again(api_client, namespace, name, 1)
    assert not first & {p.metadata.uid for p in pods(api_client, namespace, name)}  # nothing of attempt 0 left
    wait_condition(api_client, namespace, name, "Running", 30)
    fail_pod(api_client, namespace, f"{name}-worker-1", 3)
    job = restarted(api_client, namespace, name, 2)
    said = restart_said(api_client, namespace, name, job, "MPIJobProgramFailure")
    assert "exited with code 3 (Error)" in said
    running_again(api_client, namespace, name, 2)
    for pod in live(api_client, namespace, name, "worker") + live(api_client, namespace, name, "launcher"):
        env = {e.name: e.value for e in pod.spec.containers[0].env or []}
        assert env["MPIJOB_RESTART_ATTEMPT"] == "2" and pod.spec.restart_policy == "Never"
    job = wait_condition(api_client, namespace, name, "Succeeded", 90)
    assert job["status"]["restartCount"] == 2 and job["status"]["restarts"] == {"program": 1, "disruption": 1}
    assert len(live(api_client, namespace, name, "worker")) == 2
    restarts = [
        e for e in events(api_client, namespace, name) if e.reason in ("MPIJobDisruption", "MPIJobProgramFailure")
    ]
    assert sorted((e.reason, e.count) for e in restarts) == [("MPIJobDisruption", 1), ("MPIJobProgramFailure", 1)]
    labels = {"cause": "disruption", "scope": "world"}
    wait_until(lambda: running_operator.metric("mpi_operator_job_restarts_total", labels) == 1, 10, what="metric")
    assert running_operator.metric("mpi_operator_job_restarts_total", {"cause": "program", "scope": "world"}) == 1


def test_a_spent_budget_fails_the_job_saying_which(running_operator, api_client: Any, namespace: str) -> None:
    """Workers that always exit 3 (kwok): maxRestarts 1 allows one restart, then the job is Failed, its message naming
    the budget."""
    name = "spent"
    body = new_mpijob(
        name,
        1,
        launcher_annotations={OUTCOME: "run"},
        worker_annotations={OUTCOME: "fail", EXIT_CODE: "3", OUTCOME_AFTER: "3s"},
        runPolicy={"failurePolicy": {"maxRestarts": 1}},
    )
    create_mpijob(api_client, namespace, body)
    job = wait_condition(api_client, namespace, name, "Failed", 120)
    cond = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert cond["reason"] == "MaxRestartsExceeded"
    assert "the budget for program failures is spent: failurePolicy.maxRestarts is 1, 1 used" in cond["message"]
    assert job["status"]["restartCount"] == 1 and job["status"]["phase"] == "Failed"


def test_a_pass_after_an_operator_killed_mid_restart_finishes_it(
    operator_factory, api_client: Any, namespace: str
) -> None:
    """The operator died right after writing a restart's status (attempt 1): the next operator deletes every pod and
    the launcher Job of attempt 0, makes attempt 1 once, and counts nothing twice."""
    from kubernetes import client

    name = "crashed"
    body = new_mpijob(
        name, 2, launcher_annotations={OUTCOME_AFTER: "30s"}, runPolicy={"failurePolicy": {"maxRestarts": 1}}
    )
    create_mpijob(api_client, namespace, body)
    op = operator_factory("--namespace", namespace, "--no-leader-elect")
    wait_condition(api_client, namespace, name, "Running", 60)
    op.stop()
    old = {p.metadata.uid for p in pods(api_client, namespace, name)}
    job = get_mpijob(api_client, namespace, name)
    status = dict(job["status"], restartCount=1, restarts={"program": 1, "disruption": 0})
    status["conditions"] = [c for c in status["conditions"] if c["type"] != "Running"] + [
        {
            "type": "Restarting",
            "status": "True",
            "reason": "MPIJobProgramFailure",
            "message": "written by the test as a killed operator left it",
            "lastUpdateTime": status["startTime"],
            "lastTransitionTime": status["startTime"],
        }
    ]
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object_status(
        "kubeflow.org", "v2beta1", namespace, "mpijobs", name, {**job, "status": status}
    )
    operator_factory("--namespace", namespace, "--no-leader-elect", name="operator-2")
    running_again(api_client, namespace, name, 1)
    assert not old & {p.metadata.uid for p in pods(api_client, namespace, name)}
    job = wait_condition(api_client, namespace, name, "Succeeded", 60)
    assert job["status"]["restartCount"] == 1 and job["status"]["restarts"] == {"program": 1, "disruption": 0}
    launchers = client.BatchV1Api(api_client).list_namespaced_job(namespace).items
    assert [j.metadata.labels[ATTEMPT] for j in launchers] == ["1"]


def test_a_job_deleted_during_its_restart_leaves_nothing(running_operator, api_client: Any, namespace: str) -> None:
    from kubernetes import client

    name = "gone"
    body = new_mpijob(name, 2, launcher_annotations={OUTCOME: "run"}, runPolicy={"failurePolicy": {"maxRestarts": 3}})
    create_mpijob(api_client, namespace, body)
    wait_condition(api_client, namespace, name, "Running", 60)
    fail_pod(api_client, namespace, f"{name}-worker-1", 1)
    restarted(api_client, namespace, name, 1)
    delete_mpijob(api_client, namespace, name)

    def empty() -> bool:
        batch = client.BatchV1Api(api_client).list_namespaced_job(namespace).items
        return not pods(api_client, namespace, name) and not batch

    wait_until(empty, 60, what="every pod and the launcher Job gone")
    time.sleep(3)  # the operator, told of the deletions, makes nothing again
    assert empty()


# ---- a lost node -----------------------------------------------------------------------------------------------------


@pytest.fixture
def two_nodes(api_client: Any) -> Any:
    core = _core(api_client)
    names = ["restarts-node-a", "restarts-node-b"]
    for n in names:
        core.create_node(kwok_node(n, {"restarts-test": "yes"}))
    wait_until(lambda: all(node_ready(core, n) for n in names), 60, what="the test's kwok nodes Ready")
    yield names
    from kubernetes.client.exceptions import ApiException

    for n in names:
        with contextlib.suppress(ApiException):  # already gone
            core.delete_node(n)


def test_a_lost_node_restarts_the_world_off_it(running_operator, api_client: Any, namespace: str, two_nodes) -> None:
    """Both workers on node a (b cordoned), then b uncordoned and a lost: kwok stops heartbeating it, the node
    controller marks it unreachable and taints it. After nodeLostSeconds the pods on it are lost: they are force
    deleted (nothing on that node would ever confirm a graceful deletion) and the new world lands on b only."""
    core = _core(api_client)
    a, b = two_nodes
    core.patch_node(b, {"spec": {"unschedulable": True}})
    placement = {"nodeSelector": {"restarts-test": "yes"}}
    body = new_mpijob(
        "lost",
        2,
        launcher_annotations={OUTCOME: "run"},
        runPolicy={"failurePolicy": {"maxDisruptionRestarts": 1, "nodeLostSeconds": 5}},
    )
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"].update(placement)
    create_mpijob(api_client, namespace, body)
    wait_condition(api_client, namespace, "lost", "Running", 60)
    assert {p.spec.node_name for p in pods(api_client, namespace, "lost")} == {a}
    core.patch_node(b, {"spec": {"unschedulable": False}})
    lost_at = time.monotonic()
    lose_node(core, a)
    job = restarted(api_client, namespace, "lost", 1, timeout=180)
    said = restart_said(api_client, namespace, "lost", job, "MPIJobDisruption")
    assert f"on node {a} is lost: node {a} unreachable" in said, said
    running_again(api_client, namespace, "lost", 1)
    assert {p.spec.node_name for p in pods(api_client, namespace, "lost")} == {b}
    taints = {t.key for t in core.read_node(a).spec.taints or []}
    assert "node.kubernetes.io/unreachable" in taints
    print(f"lost node: restarted and Running on {b} {time.monotonic() - lost_at:.0f}s after kwok let go of {a}")
