"""MPIJobs for the cluster tests: the builder, the CRD and the API calls of hack/lib/mpijob.py (one source for
the tests and `make bench`), and what the tests check on top: a condition waited for, the children the operator
made, the events it wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from hack.lib.mpijob import (
    CRD,
    GROUP,
    PLURAL,
    VERSION,
    condition,
    create_mpijob,
    delete_mpijob,
    get_mpijob,
    has_condition,
    install_crd,
    new_mpijob,
    patch_mpijob,
)
from hack.lib.wait import wait_until

__all__ = [
    "CRD",
    "GROUP",
    "PLURAL",
    "VERSION",
    "Child",
    "children",
    "condition",
    "create_mpijob",
    "delete_mpijob",
    "event_reasons",
    "expected_children",
    "get_mpijob",
    "has_condition",
    "install_crd",
    "new_mpijob",
    "owned_children",
    "patch_mpijob",
    "wait_condition",
    "wait_event_reasons",
]


def wait_condition(
    api_client: Any, namespace: str, name: str, ctype: str, timeout: float = 60, status: str = "True"
) -> dict[str, Any]:
    job: dict[str, Any] | None = None

    def check() -> bool:
        nonlocal job
        job = get_mpijob(api_client, namespace, name)
        return has_condition(job, ctype, status)

    try:
        wait_until(check, timeout, what=f"{namespace}/{name} {ctype}={status}")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; status: {(job or {}).get('status')}") from None
    assert job is not None
    return job


def children(api_client: Any, namespace: str, name: str) -> dict[str, list[str]]:
    """Names of the job's children by kind (the Kubeflow names and labels)."""
    from kubernetes import client

    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    app = f"app={name}"
    pods = core.list_namespaced_pod(namespace, label_selector=f"training.kubeflow.org/job-name={name}").items
    return {
        "Service": [s.metadata.name for s in core.list_namespaced_service(namespace, label_selector=app).items],
        "ConfigMap": [c.metadata.name for c in core.list_namespaced_config_map(namespace, label_selector=app).items],
        "Secret": [s.metadata.name for s in core.list_namespaced_secret(namespace, label_selector=app).items],
        "Job": [j.metadata.name for j in batch.list_namespaced_job(namespace, label_selector=app).items],
        "Worker": sorted(
            p.metadata.name
            for p in pods
            if (p.metadata.labels or {}).get("training.kubeflow.org/job-role") == "worker"
            and not p.metadata.deletion_timestamp
        ),
        "LauncherPod": [
            p.metadata.name
            for p in pods
            if (p.metadata.labels or {}).get("training.kubeflow.org/job-role") == "launcher"
        ],
    }


class Child(NamedTuple):
    kind: str
    name: str
    uid: str
    owner_kind: str | None  # of its controller
    owner_uid: str | None
    deleting: bool


def owned_children(api_client: Any, namespace: str) -> list[Child]:
    """Every object the operator creates in the namespace, for every job: worker and launcher pods, Services,
    ConfigMaps, Secrets, launcher Jobs."""
    from kubernetes import client

    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    out = []
    for kind, items in (
        ("Pod", core.list_namespaced_pod(namespace, label_selector="training.kubeflow.org/job-name").items),
        ("Service", core.list_namespaced_service(namespace, label_selector="app").items),
        ("ConfigMap", core.list_namespaced_config_map(namespace, label_selector="app").items),
        ("Secret", core.list_namespaced_secret(namespace, label_selector="app").items),
        ("Job", batch.list_namespaced_job(namespace, label_selector="app").items),
    ):
        for obj in items:
            refs = [r for r in obj.metadata.owner_references or [] if r.controller]
            out.append(
                Child(
                    kind,
                    obj.metadata.name,
                    obj.metadata.uid,
                    refs[0].kind if refs else None,
                    refs[0].uid if refs else None,
                    bool(obj.metadata.deletion_timestamp),
                )
            )
    return out


def expected_children(name: str, workers: int) -> dict[str, list[str]]:
    return {
        "Service": [name],
        "ConfigMap": [f"{name}-config"],
        "Secret": [f"{name}-ssh"],
        "Job": [f"{name}-launcher"],
        "Worker": sorted(f"{name}-worker-{i}" for i in range(workers)),
    }


def event_reasons(api_client: Any, namespace: str, name: str) -> set[str]:
    from kubernetes import client

    events = (
        client.CoreV1Api(api_client)
        .list_namespaced_event(namespace, field_selector=f"involvedObject.kind=MPIJob,involvedObject.name={name}")
        .items
    )
    return {e.reason for e in events}


def wait_event_reasons(
    api_client: Any, namespace: str, name: str, predicate: Callable[[set[str]], bool], timeout: float = 10
) -> set[str]:
    """The job's event reasons once predicate holds for them. The running operator writes a job's events after its
    status (a failed status write must not leave the event of a change that did not happen), so a test that has
    just seen a condition waits for its event."""

    def reasons() -> set[str] | None:
        found = event_reasons(api_client, namespace, name)
        return found if predicate(found) else None

    return wait_until(reasons, timeout, what=f"the events of MPIJob {namespace}/{name}")
