"""The hostfile in topology order on the local cluster: four kwok nodes of two racks whose names do not sort as their
racks, one worker on each (the default scheduler picks which), and a job with `mpi.operator/hostfile-topology`. The
operator holds the launcher until every worker is bound, then writes the hostfile by rack (then by index); the same
job without the annotation gets Kubeflow's index order."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hack.lib.kwok import fresh_node, kwok_node
from hack.lib.wait import wait_until
from tests.support.mpijob import create_mpijob, new_mpijob

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("topology-nodes")]

RACK = "example.com/rack"
TEST_LABEL = "mpi.operator/topology-test"
NODES = {"topo-n0": "r2", "topo-n1": "r1", "topo-n2": "r2", "topo-n3": "r1"}


@pytest.fixture(scope="module")
def rack_nodes(api_client: client.ApiClient) -> Iterator[dict[str, str]]:
    core = client.CoreV1Api(api_client)
    for name, rack in NODES.items():
        node = kwok_node(name, {TEST_LABEL: "yes", RACK: rack})
        node["spec"]["taints"] = [{"key": TEST_LABEL, "value": "yes", "effect": "NoSchedule"}]
        fresh_node(core, node)
    yield NODES
    for name in NODES:
        with contextlib.suppress(ApiException):
            core.delete_node(name)


def one_worker_a_node(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    body = new_mpijob(name, 4, runPolicy={"cleanPodPolicy": "Running"})
    body["metadata"]["annotations"] = annotations
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["nodeSelector"] = {TEST_LABEL: "yes"}
    worker["tolerations"] = [{"key": TEST_LABEL, "operator": "Exists", "effect": "NoSchedule"}]
    worker["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    return body


def launched(core: client.CoreV1Api, batch: client.BatchV1Api, namespace: str, name: str) -> tuple[Any, list[Any]]:
    """Once the job's launcher Job exists: it, and the workers by index."""
    launcher = wait_until(lambda: _job(batch, namespace, f"{name}-launcher"), 90, what=f"the launcher Job of {name}")
    workers = sorted(
        core.list_namespaced_pod(
            namespace, label_selector=f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=worker"
        ).items,
        key=lambda p: int(p.metadata.labels["training.kubeflow.org/replica-index"]),
    )
    return launcher, workers


def _job(batch: client.BatchV1Api, namespace: str, name: str) -> Any:
    try:
        return batch.read_namespaced_job(name, namespace)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def hosts(core: client.CoreV1Api, namespace: str, name: str) -> list[str]:
    data = core.read_namespaced_config_map(f"{name}-config", namespace).data["hostfile"]
    return [line.split(".")[0] for line in data.splitlines()]


def test_the_launcher_waits_for_the_workers_nodes_and_the_hostfile_keeps_each_rack_together(
    running_operator: Any, api_client: client.ApiClient, namespace: str, rack_nodes: dict[str, str]
) -> None:
    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    create_mpijob(api_client, namespace, one_worker_a_node("ranked", {"mpi.operator/hostfile-topology": RACK}))
    create_mpijob(api_client, namespace, one_worker_a_node("indexed", {}))

    launcher, workers = launched(core, batch, namespace, "ranked")
    # Made only once every worker was bound: each one's PodScheduled is no later than the launcher's creation.
    scheduled = [
        next(
            c.last_transition_time for c in w.status.conditions or [] if c.type == "PodScheduled" and c.status == "True"
        )
        for w in workers
    ]
    assert len(workers) == 4 and all(w.spec.node_name in rack_nodes for w in workers)
    assert max(scheduled) <= launcher.metadata.creation_timestamp, (scheduled, launcher.metadata.creation_timestamp)
    by_rack = sorted(range(4), key=lambda i: (rack_nodes[workers[i].spec.node_name], i))
    assert hosts(core, namespace, "ranked") == [f"ranked-worker-{i}" for i in by_rack]
    racks = [rack_nodes[workers[i].spec.node_name] for i in by_rack]
    assert racks == sorted(racks), racks  # consecutive ranks share a rack

    # Without the annotation: index order, as Kubeflow writes it, whatever the nodes.
    _launcher, _workers = launched(core, batch, namespace, "indexed")
    assert hosts(core, namespace, "indexed") == [f"indexed-worker-{i}" for i in range(4)]
