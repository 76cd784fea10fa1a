"""What must hold once the faults are over, read from the cluster as it is: every job has exactly its children
(no orphan, no duplicate, each controlled by its job), and one Event per condition it reached."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubernetes import client

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from hack.lib.mpijob import GROUP, PLURAL, VERSION, child_refs
from hack.lib.wait import wait_until

JOB_LABEL = C.JOB_NAME_LABEL
# The reasons of the transitions a harness job makes, each wanted exactly once.
TRANSITION_REASONS = (C.REASON_CREATED, C.REASON_RUNNING, C.REASON_SUCCEEDED)


def _controller(obj: Any) -> str | None:
    refs = obj.metadata.owner_references or []
    return next((r.uid for r in refs if r.controller), None)


def children(api: client.ApiClient, namespace: str) -> list[tuple[str, list[Any]]]:
    """(kind, objects) of every kind a job's children are, as the namespace holds them now."""
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    return [
        ("Service", core.list_namespaced_service(namespace).items),
        ("ConfigMap", core.list_namespaced_config_map(namespace).items),
        ("Secret", core.list_namespaced_secret(namespace).items),
        ("Job", batch.list_namespaced_job(namespace).items),
        ("Pod", core.list_namespaced_pod(namespace).items),
    ]


def children_findings(api: client.ApiClient, namespace: str, jobs: dict[str, dict], workers: int) -> list[str]:
    """Every child that is missing, extra (an orphan or a duplicate) or controlled by something else than its job.
    `jobs` is every MPIJob of the namespace by name (as listed)."""
    uids = {name: job["metadata"]["uid"] for name, job in jobs.items()}
    found: dict[str, set[str]] = {name: set() for name in jobs}
    findings: list[str] = []
    listings = [
        (kind, [o for o in items if kind != "Pod" or (o.metadata.labels or {}).get(C.JOB_ROLE_LABEL) == C.ROLE_WORKER])
        for kind, items in children(api, namespace)
    ]
    for kind, items in listings:
        for obj in items:
            labels = obj.metadata.labels or {}
            job = labels.get(JOB_LABEL) or labels.get(C.APP_LABEL)
            if job is None:
                continue  # not a child of any job (the namespace's own ConfigMap kube-root-ca.crt)
            ref = f"{kind}/{obj.metadata.name}"
            if job not in jobs:
                findings.append(f"orphan {ref} (no MPIJob {job})")
            elif _controller(obj) != uids[job]:
                findings.append(f"{ref} not controlled by MPIJob {job}")
            elif ref in found[job]:
                findings.append(f"duplicate {ref}")
            else:
                found[job].add(ref)
    for name, got in found.items():
        want = child_refs(name, workers)
        findings += [f"{name}: missing {r}" for r in sorted(want - got)]
        findings += [f"{name}: extra {r}" for r in sorted(got - want)]
    return findings


def event_findings(api: client.ApiClient, namespace: str, jobs: dict[str, dict]) -> list[str]:
    """Jobs without exactly one Event (count 1) per transition reason."""
    counts: Counter[tuple[str, str]] = Counter()
    for ev in client.CoreV1Api(api).list_namespaced_event(namespace).items:
        involved = ev.involved_object
        if involved.kind == C.KIND and ev.reason in TRANSITION_REASONS:
            counts[(involved.name, ev.reason)] += ev.count or 1
    findings = []
    for name in sorted(jobs):
        for reason in TRANSITION_REASONS:
            if counts[(name, reason)] != 1:
                findings.append(f"{name}: {counts[(name, reason)]} {reason} events")
    return findings


def list_jobs(api: client.ApiClient, namespace: str) -> dict[str, dict]:
    listed = client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    return {j["metadata"]["name"]: j for j in listed["items"]}


def delete_jobs(api: client.ApiClient, namespace: str, timeout: float = 300) -> None:
    """Deletes every MPIJob of the namespace (an earlier scenario's) and waits until they and their children are gone."""
    client.CustomObjectsApi(api).delete_collection_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)

    def gone() -> bool:
        return not list_jobs(api, namespace) and not any(
            (o.metadata.labels or {}).get(JOB_LABEL) for _, items in children(api, namespace) for o in items
        )

    wait_until(gone, timeout, f"the MPIJobs of {namespace} and their children to go", interval=1)
