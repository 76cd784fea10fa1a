"""Gang scheduling by real gang schedulers, each built from the Go module proxy and run beside the default scheduler:
scheduler-plugins' kube-scheduler with its Coscheduling plugin (hack/worlds/gang/up.sh) and Volcano's vc-scheduler
(hack/worlds/volcano/up.sh), in front of the operator run with `--gang-scheduling` naming one of them. The behaviours
every gang scheduler must give run on both (the `gang` fixture); minResources and priority on Coscheduling. The jobs'
pods go to a kwok node of the test's own with 4 CPUs, tainted so that nothing else lands there: what fits is the
test's to decide."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hack.lib.kwok import fresh_node, kwok_node
from hack.lib.wait import wait_until
from tests.support.mpijob import create_mpijob, get_mpijob, has_condition, new_mpijob, patch_mpijob
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.gang, pytest.mark.slow, pytest.mark.xdist_group("gang")]

NODE = "gang-node"
TAINT = {"key": "mpi.operator/gang-test", "value": "yes", "effect": "NoSchedule"}
PLACEMENT = {
    "nodeSelector": {"kubernetes.io/hostname": NODE},
    "tolerations": [{"key": TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}],
}


@dataclass(frozen=True)
class Scheduler:
    """A gang scheduler the tests run in front of the operator: its world's script, the PodGroup API it reads."""

    script: str
    group: str
    version: str


SCHEDULERS = {
    "scheduler-plugins": Scheduler("hack/worlds/gang/up.sh", "scheduling.x-k8s.io", "v1alpha1"),
    "volcano": Scheduler("hack/worlds/volcano/up.sh", "scheduling.volcano.sh", "v1beta1"),
}
_started: dict[str, str] = {}  # kind -> scheduler name, once its up.sh ran in this worker


def start_scheduler(kind: str) -> str:
    """The scheduler's name; its binary built once (its build.sh), the process left running."""
    if kind not in _started:
        proc = subprocess.run(
            ["bash", str(ROOT / SCHEDULERS[kind].script)], capture_output=True, text=True, timeout=1200, check=False
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        _started[kind] = proc.stdout.strip().splitlines()[-1]
    return _started[kind]


@dataclass(frozen=True)
class Gang:
    """The scheduler of one test and the operator run with `--gang-scheduling` set to it."""

    name: str
    scheduler: Scheduler

    def pod_group(self, api_client: client.ApiClient, namespace: str, job: str) -> dict[str, Any] | None:
        return _pod_group(api_client, namespace, job, self.scheduler.group, self.scheduler.version)


# Volcano's runs are marked `volcano`: `make test-gang` runs them, `make test` leaves them out (hack/make/test.sh).
@pytest.fixture(
    params=[pytest.param(k, marks=pytest.mark.volcano) if k == "volcano" else k for k in sorted(SCHEDULERS)]
)
def gang(request: pytest.FixtureRequest, operator_factory: Any, namespace: str, kubeconfig: str) -> Gang:
    name = start_scheduler(request.param)
    operator_factory("--namespace", namespace, "--no-leader-elect", "--gang-scheduling", name)
    return Gang(name, SCHEDULERS[request.param])


@pytest.fixture
def gang_operator(operator_factory: Any, namespace: str, kubeconfig: str) -> Gang:
    """Coscheduling only: what the other scheduler does differently is not the subject."""
    name = start_scheduler("scheduler-plugins")
    operator_factory("--namespace", namespace, "--no-leader-elect", "--gang-scheduling", name)
    return Gang(name, SCHEDULERS["scheduler-plugins"])


@pytest.fixture
def small_node(api_client: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(api_client)
    node = kwok_node(NODE, {"mpi.operator/gang-test": "yes"})
    node["spec"]["taints"] = [TAINT]
    node["status"]["allocatable"] = node["status"]["capacity"] = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    fresh_node(core, node)
    yield NODE
    with contextlib.suppress(ApiException):
        core.delete_node(NODE)


def gang_job(name: str, workers: int, cpu: str) -> dict[str, Any]:
    """A job whose launcher and workers each ask `cpu`, on the test's node; the launcher runs until told (kwok)."""
    body = new_mpijob(name, workers, runPolicy={"cleanPodPolicy": "Running"})
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        spec.update(PLACEMENT)
        spec["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return body


def job_pods(core: client.CoreV1Api, namespace: str, name: str) -> list[client.V1Pod]:
    return [
        p
        for p in core.list_namespaced_pod(namespace).items
        if (p.metadata.labels or {}).get("training.kubeflow.org/job-name") == name and not p.metadata.deletion_timestamp
    ]


def blocker(namespace: str, cpu: str) -> dict[str, Any]:
    """A pod of the default scheduler holding `cpu` of the node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "blocker"},
        "spec": {
            **PLACEMENT,
            "containers": [{"name": "hold", "image": "hold", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def test_a_gang_that_cannot_all_fit_binds_no_pod_until_room_appears(
    gang: Gang, api_client: client.ApiClient, namespace: str, small_node: str
) -> None:
    core = client.CoreV1Api(api_client)
    # 1 CPU of the node's 4 held: the gang (a launcher and 3 workers, 1 CPU each) needs all 4
    core.create_namespaced_pod(namespace, blocker(namespace, "1"))
    wait_until(lambda: core.read_namespaced_pod("blocker", namespace).spec.node_name == small_node, 60, what="blocker")
    create_mpijob(api_client, namespace, gang_job("gang", 3, "1"))

    pod_group = wait_until(
        lambda: gang.pod_group(api_client, namespace, "gang"), 60, what=f"the job's PodGroup ({gang.scheduler.group})"
    )
    assert pod_group["spec"]["minMember"] == 4, pod_group
    wait_until(lambda: len(job_pods(core, namespace, "gang")) == 4, 60, what="the launcher and 3 workers created")
    pods = job_pods(core, namespace, "gang")
    assert {p.spec.scheduler_name for p in pods} == {gang.name}
    # Three would fit: the gang scheduler binds none of them (Coscheduling reserves three, waits 10 s for the fourth
    # and gives them back; Volcano's gang plugin discards a session's placements short of minMember), for 25 s
    end = time.monotonic() + 25
    while time.monotonic() < end:
        bound = [p.metadata.name for p in job_pods(core, namespace, "gang") if p.spec.node_name]
        assert not bound, f"bound while the gang cannot all fit: {bound}"
        time.sleep(1)

    core.delete_namespaced_pod("blocker", namespace, grace_period_seconds=0)
    wait_until(
        lambda: all(p.spec.node_name == small_node for p in job_pods(core, namespace, "gang")),
        90,
        what="every pod of the gang bound once there is room",
    )
    wait_until(lambda: has_condition(get_mpijob(api_client, namespace, "gang"), "Running"), 90, what="gang Running")


def _pod_group(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    group: str = "scheduling.x-k8s.io",
    version: str = "v1alpha1",
) -> dict[str, Any] | None:
    try:
        return client.CustomObjectsApi(api_client).get_namespaced_custom_object(
            group, version, namespace, "podgroups", name
        )
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def test_two_gangs_that_together_do_not_fit_run_one_after_the_other(
    gang: Gang, api_client: client.ApiClient, namespace: str, small_node: str
) -> None:
    """Two jobs of 3 CPUs each on the 4-CPU node: without a gang scheduler each could hold part of the node and wait
    for the rest for ever. Here one is placed whole, the other not at all; when the first has run (15 s), the second."""
    core = client.CoreV1Api(api_client)
    for name in ("first", "second"):
        body = gang_job(name, 2, "1")
        body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {
            "annotations": {"kwok.mpi.operator/outcome-after": "15s"}
        }
        create_mpijob(api_client, namespace, body)

    def bound(name: str) -> int:
        return sum(1 for p in job_pods(core, namespace, name) if p.spec.node_name)

    running = wait_until(
        lambda: next((n for n in ("first", "second") if bound(n) == 3), None), 90, what="one gang placed whole"
    )
    other = "second" if running == "first" else "first"
    end = time.monotonic() + 8
    while time.monotonic() < end:
        assert bound(other) == 0, f"{other} placed in part beside {running}"
        time.sleep(1)
    for name in (running, other):
        wait_until(
            lambda name=name: has_condition(get_mpijob(api_client, namespace, name), "Succeeded"),
            150,
            what=f"{name} Succeeded",
        )


def test_wait_for_workers_ready_with_a_gang_scheduler_does_not_deadlock(
    gang: Gang, api_client: client.ApiClient, namespace: str, small_node: str
) -> None:
    """kubeflow/mpi-operator#608: the launcher is made only once the workers are Ready, so a PodGroup that counts it
    would wait for it for ever. Here minMember counts the workers, they are placed, then the launcher joins them."""
    body = gang_job("ready-first", 2, "1")
    body["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    create_mpijob(api_client, namespace, body)
    group = wait_until(lambda: gang.pod_group(api_client, namespace, "ready-first"), 60, what="the PodGroup")
    assert group["spec"]["minMember"] == 2, group
    wait_until(
        lambda: has_condition(get_mpijob(api_client, namespace, "ready-first"), "Succeeded"), 150, what="Succeeded"
    )


def test_suspend_deletes_the_gang_and_resume_places_it_again(
    gang: Gang, api_client: client.ApiClient, namespace: str, small_node: str
) -> None:
    core = client.CoreV1Api(api_client)
    body = gang_job("pausing", 2, "1")
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {
        "annotations": {"kwok.mpi.operator/outcome-after": "600s"}
    }
    create_mpijob(api_client, namespace, body)
    bound = lambda: [p for p in job_pods(core, namespace, "pausing") if p.spec.node_name]  # noqa: E731
    wait_until(lambda: len(bound()) == 3, 90, what="the gang placed")

    patch_mpijob(api_client, namespace, "pausing", {"spec": {"runPolicy": {"suspend": True}}})
    wait_until(lambda: has_condition(get_mpijob(api_client, namespace, "pausing"), "Suspended"), 60, what="Suspended")
    wait_until(lambda: not job_pods(core, namespace, "pausing"), 90, what="the gang's pods gone")
    wait_until(lambda: gang.pod_group(api_client, namespace, "pausing") is None, 60, what="the PodGroup gone")

    patch_mpijob(api_client, namespace, "pausing", {"spec": {"runPolicy": {"suspend": False}}})
    group = wait_until(lambda: gang.pod_group(api_client, namespace, "pausing"), 60, what="the PodGroup again")
    assert group["spec"]["minMember"] == 3, group
    wait_until(lambda: len(bound()) == 3, 90, what="the gang placed again")


def test_the_scheduler_reads_the_pod_groups_min_resources(
    gang_operator: Gang, api_client: client.ApiClient, namespace: str, small_node: str
) -> None:
    """`schedulingPolicy.minResources` goes into the PodGroup, and Coscheduling checks it against the cluster's free
    resources before placing any pod: more than the whole cluster has keeps every pod unbound, though each would fit;
    lowered, the operator updates the PodGroup and the gang is placed."""
    core = client.CoreV1Api(api_client)
    body = gang_job("asks-much", 2, "1")
    body["spec"]["runPolicy"]["schedulingPolicy"] = {"minResources": {"cpu": "100000"}}
    create_mpijob(api_client, namespace, body)
    group = wait_until(lambda: _pod_group(api_client, namespace, "asks-much"), 60, what="the PodGroup")
    assert group["spec"]["minResources"] == {"cpu": "100000"}, group
    wait_until(lambda: len(job_pods(core, namespace, "asks-much")) == 3, 60, what="the launcher and 2 workers")
    end = time.monotonic() + 12
    while time.monotonic() < end:
        bound = [p.metadata.name for p in job_pods(core, namespace, "asks-much") if p.spec.node_name]
        assert not bound, f"bound though the cluster cannot hold minResources: {bound}"
        time.sleep(1)

    patch_mpijob(
        api_client,
        namespace,
        "asks-much",
        {"spec": {"runPolicy": {"schedulingPolicy": {"minResources": {"cpu": "3"}}}}},
    )
    wait_until(
        lambda: (
            (_pod_group(api_client, namespace, "asks-much") or {}).get("spec", {}).get("minResources") == {"cpu": "3"}
        ),
        60,
        what="the PodGroup's minResources lowered",
    )
    wait_until(
        lambda: all(p.spec.node_name == small_node for p in job_pods(core, namespace, "asks-much")),
        90,
        what="the gang placed once minResources fits",
    )


@pytest.fixture
def priority_classes(api_client: client.ApiClient, namespace: str) -> Iterator[dict[str, str]]:
    scheduling = client.SchedulingV1Api(api_client)
    made = {}
    for what, value in (("low", 100), ("high", 1000)):
        name = f"{namespace}-{what}"[:63]
        scheduling.create_priority_class(
            client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=value, preemption_policy="Never")
        )
        made[what] = name
    yield made
    for name in made.values():
        with contextlib.suppress(ApiException):
            scheduling.delete_priority_class(name)


def test_of_two_waiting_gangs_the_higher_priority_one_is_placed_first(
    gang_operator: Gang,
    api_client: client.ApiClient,
    namespace: str,
    small_node: str,
    priority_classes: dict[str, str],
) -> None:
    """Coscheduling orders its queue by the pods' priority, then by their PodGroup's age. Two gangs of 3 CPUs wait
    behind a pod holding 2 of the node's 4 (it has the high priority too: nothing is preempted): `early` (low
    priority) made first, `urgent` (high) after it. When the holder goes, `urgent` is placed whole and `early` not at
    all; once `urgent` has run (15 s), `early`."""
    core = client.CoreV1Api(api_client)
    holder = blocker(namespace, "2")
    holder["spec"]["priorityClassName"] = priority_classes["high"]
    core.create_namespaced_pod(namespace, holder)
    wait_until(lambda: core.read_namespaced_pod("blocker", namespace).spec.node_name == small_node, 60, what="blocker")
    for name, priority in (("early", "low"), ("urgent", "high")):
        body = gang_job(name, 2, "1")
        body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {
            "annotations": {"kwok.mpi.operator/outcome-after": "15s"}
        }
        for replica in body["spec"]["mpiReplicaSpecs"].values():
            replica["template"]["spec"]["priorityClassName"] = priority_classes[priority]
        create_mpijob(api_client, namespace, body)
        wait_until(lambda name=name: len(job_pods(core, namespace, name)) == 3, 60, what=f"{name}'s pods")
        time.sleep(2)  # PodGroups seconds apart: the order by age would put `early` first

    def bound(name: str) -> int:
        return sum(1 for p in job_pods(core, namespace, name) if p.spec.node_name)

    time.sleep(5)
    assert bound("early") == 0 and bound("urgent") == 0
    core.delete_namespaced_pod("blocker", namespace, grace_period_seconds=0)
    wait_until(lambda: bound("urgent") == 3 or bound("early") > 0, 90, what="a gang placed once there is room")
    assert bound("urgent") == 3 and bound("early") == 0, (bound("urgent"), bound("early"))
    wait_until(lambda: bound("early") == 3, 120, what="`early` placed once `urgent` has run")
