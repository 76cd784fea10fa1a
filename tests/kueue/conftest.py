"""The kueue tier (`make test-kueue`): a real Kueue (hack/worlds/kueue/up.sh: built from the Go module proxy, run on the
real node from its manifests) in front of a real operator process, on the local cluster. Kueue's webhooks see every
MPIJob created while it runs, so this tier runs on its own, never beside the other cluster tiers.

Fixtures: the cluster's and the operator's (tests/integration/_fixtures), `kueue` (Kueue up for the session, removed
after it) and `queues` (ResourceFlavor, ClusterQueue, LocalQueue and priority classes for one test, removed after)."""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import api, jobs, operator
from tests.integration._fixtures.cluster import api_client, kubeconfig, namespace
from tests.integration._fixtures.install import playbook
from tests.integration._fixtures.operator import (
    operator_crd,
    operator_factory,
    pytest_runtest_makereport,
    running_operator,
)
from tests.support.mpijob import new_mpijob
from tests.support.paths import ROOT, local_kubeconfig

# The other tiers' fixtures this tier uses (a conftest's names are what pytest finds), and this tier's own.
__all__ = [
    "GROUP",
    "JOB_CPU",
    "OUTCOME_AFTER",
    "PRIORITY_LABEL",
    "QUEUE_LABEL",
    "Queues",
    "api",
    "api_client",
    "jobs",
    "kubeconfig",
    "kueue",
    "namespace",
    "operator",
    "operator_crd",
    "operator_factory",
    "playbook",
    "pytest_runtest_makereport",
    "queued_job",
    "queues",
    "running_operator",
    "worker_kubeconfig",
]

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
OUTCOME_AFTER = "kwok.mpi.operator/outcome-after"
JOB_CPU = 300  # millicores: a launcher and two workers of 100m each


def queued_job(name: str, queue: str, launcher_runs: str, priority: str | None = None) -> dict[str, Any]:
    """An MPIJob for Kueue: its queue (and priority) label, 100m CPU per pod, its launcher succeeding after
    `launcher_runs` on kwok; workers deleted when it ends."""
    body = new_mpijob(
        name, workers=2, launcher_annotations={OUTCOME_AFTER: launcher_runs}, runPolicy={"cleanPodPolicy": "Running"}
    )
    body["metadata"]["labels"] = {QUEUE_LABEL: queue, **({PRIORITY_LABEL: priority} if priority else {})}
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return body


def _script(name: str, cluster: str) -> None:
    # Only on the local cluster: Kueue runs on its real node.
    assert pathlib.Path(cluster).resolve() == local_kubeconfig().resolve(), (
        f"the kueue tier needs the local cluster (make cluster-up), not {cluster}"
    )
    proc = subprocess.run(
        ["bash", str(ROOT / "hack/worlds/kueue" / name)], capture_output=True, text=True, timeout=900, check=False
    )
    assert proc.returncode == 0, f"hack/worlds/kueue/{name} failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="session")
def kueue(kubeconfig: str, operator_crd: None) -> Iterator[None]:
    """Kueue running (its MPIJob integration needs the MPIJob CRD first), for the session; removed after it."""
    _script("up.sh", kubeconfig)
    yield
    _script("down.sh", kubeconfig)


@pytest.fixture(scope="session")
def worker_kubeconfig(kueue: None) -> Iterator[str]:
    """A MultiKueue worker (hack/worlds/kueue/worker.sh): a second local cluster with the MPIJob CRD and its own Kueue;
    its kubeconfig. Stopped after the session."""
    proc = subprocess.run(
        ["bash", str(ROOT / "hack/worlds/kueue/worker.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    assert proc.returncode == 0, f"hack/worlds/kueue/worker.sh failed:\n{proc.stdout}\n{proc.stderr}"
    yield proc.stdout.split()[-1]
    subprocess.run(
        ["bash", str(ROOT / "hack/worlds/kueue/worker.sh"), "down"], capture_output=True, timeout=300, check=False
    )


class Queues:
    """Kueue's objects of one test: cluster-scoped ones named after its namespace."""

    def __init__(self, connection: client.ApiClient, where: str):
        self.custom = client.CustomObjectsApi(connection)
        self.namespace = where
        self.made: list[tuple[str, str, bool]] = []  # (plural, name, namespaced) of each, to delete

    def name(self, what: str) -> str:
        return f"{what}-{self.namespace}"[:63]

    def create(self, plural: str, body: dict[str, Any], namespaced: bool = False) -> dict[str, Any]:
        body = {"apiVersion": f"{GROUP}/{VERSION}", **body}
        if namespaced:
            made = self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, body)
        else:
            made = self.custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
        self.made.append((plural, body["metadata"]["name"], namespaced))
        return made

    def flavor(self, **spec: Any) -> str:
        name = self.name("rf")
        self.create("resourceflavors", {"kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec})
        return name

    def cluster_queue(self, flavor: str, cpu: str, **spec: Any) -> str:
        name = self.name("cq")
        self.create(
            "clusterqueues",
            {
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
                        }
                    ],
                    **spec,
                },
            },
        )
        return name

    def cluster_object(self, plural: str, kind: str, name: str, body: dict[str, Any]) -> str:
        """Any other cluster-scoped Kueue object (MultiKueue's), removed with the rest."""
        self.create(plural, {"kind": kind, "metadata": {"name": name}, **body})
        return name

    def local_queue(self, cluster_queue: str, name: str = "lq") -> str:
        self.create(
            "localqueues",
            {"kind": "LocalQueue", "metadata": {"name": name}, "spec": {"clusterQueue": cluster_queue}},
            namespaced=True,
        )
        return name

    def set_quota(self, cluster_queue: str, cpu: str) -> None:
        queue = self.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", cluster_queue)
        queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = cpu
        self.custom.replace_cluster_custom_object(GROUP, VERSION, "clusterqueues", cluster_queue, queue)

    def priority_class(self, what: str, value: int) -> str:
        name = self.name(what)
        self.create(
            "workloadpriorityclasses", {"kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}
        )
        return name

    def workloads(self) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "workloads")["items"]

    def workload_of(self, job: str) -> dict[str, Any] | None:
        for w in self.workloads():
            if any(
                o.get("kind") == "MPIJob" and o.get("name") == job for o in w["metadata"].get("ownerReferences", [])
            ):
                return w
        return None

    def patch_workload(self, name: str, patch: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, "workloads", name, patch)

    def delete_all(self) -> None:
        # The last made first: a ClusterQueue or ResourceFlavor in use keeps a finalizer until what uses it is gone.
        for plural, name, namespaced in reversed(self.made):
            try:
                if namespaced:
                    self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)
                else:
                    self.custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise


@pytest.fixture
def queues(kueue: None, api_client: client.ApiClient, namespace: str) -> Iterator[Queues]:
    made = Queues(api_client, namespace)
    yield made
    made.delete_all()
