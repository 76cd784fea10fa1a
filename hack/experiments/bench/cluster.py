"""The bench's objects on the cluster: its MPIJob (the tests' builder, hack/lib/mpijob.py), its namespaces, the
launchers told to finish (kwok), the nodes' free pod slots, and the CRD installed before a run."""

from __future__ import annotations

import concurrent.futures as cf
import sys
import time
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hack.experiments.bench.results import Capacity
from hack.experiments.bench.settings import (
    OUTCOME,
    OUTCOME_ANNOTATION,
)
from hack.lib.mpijob import install_crd, new_mpijob
from hack.lib.wait import wait_until


def mpijob(name: str, workers: int) -> dict[str, Any]:
    """The benchmark's job: the integration tests' small MPIJob, workers removed once it succeeds."""
    return new_mpijob(
        name, workers, runPolicy={"cleanPodPolicy": "Running"}, launcher_annotations={OUTCOME_ANNOTATION: OUTCOME}
    )


def finish_all(core: client.CoreV1Api, ns: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """Tells every launcher pod of `keys` to succeed now (kwok's stage acts on the changed annotation);
    returns when each was told."""
    wanted = {name for _, name in keys}
    pods = [
        p
        for p in core.list_namespaced_pod(ns, label_selector="training.kubeflow.org/job-role=launcher").items
        if (p.metadata.labels or {}).get("training.kubeflow.org/job-name") in wanted
    ]
    told: dict[tuple[str, str], float] = {}
    patch = {"metadata": {"annotations": {OUTCOME_ANNOTATION: "succeed", "kwok.mpi.operator/outcome-after": "100ms"}}}

    def tell(pod: Any) -> None:
        told[(ns, pod.metadata.labels["training.kubeflow.org/job-name"])] = time.time()
        core.patch_namespaced_pod(pod.metadata.name, ns, patch)

    with cf.ThreadPoolExecutor(16) as pool:
        list(pool.map(tell, pods))
    return told


def create_namespace(core: client.CoreV1Api, name: str) -> None:
    core.create_namespace({"metadata": {"name": name, "labels": {"mpi-operator-bench": "true"}}})


def delete_namespaces(core: client.CoreV1Api, wait: float = 0) -> None:
    """Deletes the bench's namespaces; with `wait`, until they are gone (a previous run's teardown, 1,000 pods
    and their Events garbage-collected, would otherwise load the cluster while this run measures)."""
    for ns in core.list_namespace(label_selector="mpi-operator-bench=true").items:
        try:
            core.delete_namespace(ns.metadata.name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    if wait:
        wait_until(
            lambda: not core.list_namespace(label_selector="mpi-operator-bench=true").items,
            wait,
            "the previous bench namespaces to be deleted",
            interval=1.0,
        )


def free_pod_slots(core: client.CoreV1Api) -> int:
    """Pods the untainted Ready nodes can still take (allocatable pods minus the pods bound to them)."""
    free = 0
    for node in core.list_node().items:
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        if not ready or node.spec.unschedulable or node.spec.taints:
            continue
        bound = core.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={node.metadata.name},status.phase!=Succeeded,status.phase!=Failed"
        ).items
        free += int(node.status.allocatable.get("pods", "0")) - len(bound)
    return free


def pods_needed(jobs: int, workers: int, single_runs: int) -> int:
    """Pods a run has at once: every job's launcher and workers, the single jobs' too (hack/experiments/bench/bench.sh
    sizes the same)."""
    return (jobs + single_runs) * (workers + 1)


def prepare(api: client.ApiClient, needed: int, wait: float = 300) -> Capacity:
    """The CRD, no namespace of a previous run left, and a warning when the nodes cannot take the `needed` pods."""
    core = client.CoreV1Api(api)
    install_crd(api)
    delete_namespaces(core, wait=wait)
    capacity = Capacity(free_pod_slots(core), needed)
    if capacity.slots < capacity.needed:
        print(
            f"WARNING: the schedulable nodes can take {capacity.slots} more pods, the bench needs {capacity.needed}: "
            "jobs will wait for capacity and the latencies measure that (make bench sizes the local cluster; "
            "MPI_CLUSTER_NODES)",
            file=sys.stderr,
        )
    return capacity
