"""Kueue's topology-aware scheduling (TAS) in front of the operator: a Topology of blocks, racks and hosts over kwok
nodes labelled as a real cluster's, a ResourceFlavor with it, and MPIJobs that ask for a topology on their pod
templates. Kueue admits each job with a topology assignment, puts its scheduling gate on the pod templates, and its
ungater places each gated pod by its rank (the `training.kubeflow.org/replica-index` label the operator writes, less
the `pod-index-offset` Kueue's webhook writes for `runLauncherAsWorker`). What must hold: every pod lands on the host
Kueue assigned to its rank, and the hostfile lists the ranks in that order, so that consecutive ranks share a rack.

Each job's placement is written to build/tas/table.md (job, request, pod -> host -> rank), the table of
docs/dev/verification.md."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hack.lib.kwok import fresh_node, kwok_node
from hack.lib.wait import wait_until
from tests.kueue.conftest import OUTCOME_AFTER, QUEUE_LABEL, Queues
from tests.support.mpijob import create_mpijob, new_mpijob, wait_condition
from tests.support.paths import ROOT

pytestmark = [pytest.mark.slow]

BLOCK, RACK, HOST = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"
REQUIRED, PREFERRED = "kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology"
GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
TAS_LABEL = "mpi.operator/tas-test"
TAINT = {"key": TAS_LABEL, "value": "yes", "effect": "NoSchedule"}
TOLERATION = {"key": TAS_LABEL, "operator": "Exists", "effect": "NoSchedule"}
# Two blocks of two racks of two hosts, 2 CPUs each: one worker (1500m) per host, a launcher (250m) beside it. The
# hosts' names do not sort as their racks do, so that an order by name is not an order by topology.
HOSTS = {
    "tas-h7": ("b1", "b1-r1"),
    "tas-h2": ("b1", "b1-r1"),
    "tas-h5": ("b1", "b1-r2"),
    "tas-h0": ("b1", "b1-r2"),
    "tas-h3": ("b2", "b2-r1"),
    "tas-h6": ("b2", "b2-r1"),
    "tas-h1": ("b2", "b2-r2"),
    "tas-h4": ("b2", "b2-r2"),
}
TABLE = ROOT / "build" / "tas" / "table.md"


@pytest.fixture(scope="module")
def topology_nodes(kueue: None, api_client: client.ApiClient) -> Iterator[dict[str, tuple[str, str]]]:
    core = client.CoreV1Api(api_client)
    for name, (block, rack) in HOSTS.items():
        node = kwok_node(name, {TAS_LABEL: "yes", BLOCK: block, RACK: rack})
        node["spec"]["taints"] = [TAINT]
        node["status"]["allocatable"] = node["status"]["capacity"] = {"cpu": "2", "memory": "8Gi", "pods": "110"}
        fresh_node(core, node)
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(
        "| job | topology request | pod | host (block/rack) | rank | Kueue's host for the rank |\n|---|---|---|---|---|---|\n"
    )
    yield HOSTS
    for name in HOSTS:
        with contextlib.suppress(ApiException):
            core.delete_node(name)


@pytest.fixture
def tas_queue(
    queues: Queues, topology_nodes: dict[str, tuple[str, str]], api_client: client.ApiClient, namespace: str
) -> Iterator[str]:
    """A Topology (block, rack, host), a ResourceFlavor of the test's nodes with it, and a queue with room for all.
    After the test, its jobs deleted and their pods gone from the nodes: Kueue frees a job's hosts when its Workload
    goes, and the next test's pods would wait for the last one's to terminate."""
    topology = queues.name("topology")
    queues.create(
        "topologies",
        {
            "kind": "Topology",
            "metadata": {"name": topology},
            "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
    )
    flavor = queues.flavor(nodeLabels={TAS_LABEL: "yes"}, topologyName=topology, tolerations=[TOLERATION])
    yield queues.local_queue(queues.cluster_queue(flavor, "16"))
    custom, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    custom.delete_collection_namespaced_custom_object("kubeflow.org", "v2beta1", namespace, "mpijobs")
    wait_until(
        lambda: (
            not any(core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={host}").items for host in HOSTS)
        ),
        120,
        what="the test's pods gone from the topology's nodes",
    )


def tas_job(
    name: str,
    queue: str,
    workers: int,
    worker_request: dict[str, str],
    launcher_request: dict[str, str] | None = None,
    as_worker: bool = False,
    worker_cpu: str = "1500m",
) -> dict[str, Any]:
    """A job of `workers` workers of 1500m, its launcher 250m (1500m as a worker) (running on kwok until the test ends), with these TAS
    annotations on the worker (and launcher) templates."""
    extra: dict[str, Any] = {"runPolicy": {"cleanPodPolicy": "Running"}}
    if as_worker:
        extra["runLauncherAsWorker"] = True
    body = new_mpijob(
        name,
        workers,
        launcher_annotations={OUTCOME_AFTER: "600s", **(launcher_request or {})},
        worker_annotations=worker_request,
        **extra,
    )
    body["metadata"]["labels"] = {QUEUE_LABEL: queue}
    for role, replica in body["spec"]["mpiReplicaSpecs"].items():
        cpu = "250m" if role == "Launcher" and not as_worker else worker_cpu
        replica["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        # The toleration in the job's own templates too, not only the flavor's: Kueue's node controller reads the
        # taints against the Workload's pod sets, and fails a pod still Pending on a node they do not tolerate
        # (one whose last job's pods are still terminating, say).
        replica["template"]["spec"]["tolerations"] = [TOLERATION]
    return body


def assigned_hosts(assignment: dict[str, Any]) -> list[str]:
    """The hosts of a PodSet's topology assignment, one per pod, in Kueue's order: the host of rank i is the i-th
    (slices of domains; each level's values universal or individual with prefix and suffix; pod counts likewise)."""
    level = assignment["levels"].index(HOST)
    hosts = []
    for piece in assignment["slices"]:
        values = piece["valuesPerLevel"][level]
        counts = piece["podCounts"]
        for i in range(piece["domainCount"]):
            if "universal" in values:
                host = values["universal"]
            else:
                each = values["individual"]
                host = each.get("prefix", "") + each["roots"][i] + each.get("suffix", "")
            count = counts["universal"] if "universal" in counts else counts["individual"][i]
            hosts.extend([host] * count)
    return hosts


def placement(
    api_client: client.ApiClient, queues: Queues, namespace: str, name: str
) -> list[tuple[str, str, int, str]]:
    """Once every pod of the job is Running: (pod, its host, its rank, Kueue's host for that rank) in rank order.
    Ranks as mpirun counts them: the hostfile's order (its slots one each here)."""
    core = client.CoreV1Api(api_client)

    def pods() -> list[client.V1Pod] | None:
        found = core.list_namespaced_pod(namespace, label_selector=f"training.kubeflow.org/job-name={name}").items
        running = [p for p in found if p.status.phase == "Running" and p.metadata.deletion_timestamp is None]
        return running if len(running) == len(found) and found else None

    ready = wait_until(pods, 120, what=f"every pod of {name} Running")
    assert ready is not None
    by_name = {p.metadata.name: p for p in ready}
    workload = queues.workload_of(name)
    assert workload is not None
    hosts_of = {
        a["name"]: assigned_hosts(a["topologyAssignment"])
        for a in workload["status"]["admission"]["podSetAssignments"]
        if a.get("topologyAssignment")
    }
    hostfile = core.read_namespaced_config_map(f"{name}-config", namespace).data["hostfile"]
    rows: list[tuple[str, str, int, str]] = []
    for rank, line in enumerate(hostfile.split("\n")):
        if not line.strip():
            continue
        short = line.split()[0].split(".")[0]
        pod = next(p for n, p in by_name.items() if n == short or (n.startswith(f"{short}-") and "launcher" in n))
        role = pod.metadata.labels["training.kubeflow.org/job-role"]
        index = int(pod.metadata.labels["training.kubeflow.org/replica-index"])
        podset = "launcher" if role == "launcher" else "worker"
        offset = int(pod.metadata.annotations.get("kueue.x-k8s.io/pod-index-offset", "0"))
        if podset == "worker" and len({"launcher", "worker"} & set(hosts_of)) == 2 and _grouped(workload):
            offset = 1  # one group: the smaller PodSet (the launcher) holds rank 0
        own = hosts_of[podset][index - offset]
        # The hostfile's rank and the pod's rank within its PodSet agree (the launcher's is 0 in either).
        rows.append((str(pod.metadata.name), str(getattr(pod.spec, "node_name", "")), rank, own))
    return rows


def _grouped(workload: dict[str, Any]) -> bool:
    return all(ps.get("topologyRequest", {}).get("podSetGroupName") for ps in workload["spec"]["podSets"])


def record(name: str, request: str, rows: list[tuple[str, str, int, str]]) -> None:
    with TABLE.open("a") as out:
        for pod, host, rank, own in rows:
            block, rack = HOSTS[host]
            out.write(f"| {name} | {request} | {pod} | {host} ({block}/{rack}) | {rank} | {own} |\n")


def racks_contiguous(rows: list[tuple[str, str, int, str]]) -> bool:
    """Consecutive ranks are neighbours: each rack's ranks form one run in the hostfile's order."""
    racks = [HOSTS[host][1] for _, host, _, _ in rows]
    runs = [r for i, r in enumerate(racks) if i == 0 or racks[i - 1] != r]
    return len(runs) == len(set(racks))


@pytest.mark.parametrize(
    ("name", "workers", "worker_request", "launcher_request", "as_worker", "what"),
    [
        ("rack2", 2, {REQUIRED: RACK}, None, False, "workers: required rack"),
        ("block4", 4, {PREFERRED: BLOCK}, None, False, "workers: preferred block"),
        # Three workers of 600m a host: by name worker-10 comes before worker-2, by rank after it.
        ("wide11", 11, {PREFERRED: BLOCK}, None, False, "11 workers of 600m: preferred block"),
        ("law3", 3, {REQUIRED: BLOCK}, None, True, "runLauncherAsWorker; workers: required block"),
        (
            "group3",
            3,
            {REQUIRED: BLOCK, GROUP_NAME: "mpi"},
            {REQUIRED: BLOCK, GROUP_NAME: "mpi"},
            True,
            "runLauncherAsWorker; launcher and workers one group: required block",
        ),
    ],
)
def test_each_rank_lands_where_kueue_assigned_it_and_the_hostfile_follows(
    tas_queue: str,
    queues: Queues,
    running_operator: Any,
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    workers: int,
    worker_request: dict[str, str],
    launcher_request: dict[str, str] | None,
    as_worker: bool,
    what: str,
) -> None:
    worker_cpu = "600m" if workers > len(HOSTS) // 2 else "1500m"
    create_mpijob(
        api_client,
        namespace,
        tas_job(name, tas_queue, workers, worker_request, launcher_request, as_worker, worker_cpu),
    )
    wait_condition(api_client, namespace, name, "Running", timeout=120)
    rows = placement(api_client, queues, namespace, name)
    record(name, what, rows)
    assert [host for _, host, _, _ in rows] == [own for _, _, _, own in rows], rows
    assert len(rows) == workers + (1 if as_worker else 0), rows
    if worker_cpu == "1500m":
        assert len({host for _, host, _, _ in rows}) == len(rows), f"two ranks on one host: {rows}"
    if REQUIRED in worker_request:
        level = 1 if worker_request[REQUIRED] == RACK else 0
        # Every worker (and, in one group, the launcher) in one domain of the required level.
        within = [HOSTS[host][level] for pod, host, _, _ in rows if "worker" in pod or launcher_request]
        assert len(set(within)) == 1, rows
    assert racks_contiguous(rows), rows
