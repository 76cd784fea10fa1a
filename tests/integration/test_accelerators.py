"""GPUs and slots against the API server and the scheduler: the GPU example of examples/ scheduled on kwok nodes that
advertise nvidia.com/gpu (made by this test, tainted so that no other test's pod lands there), its slots derived
from the GPUs; the same job without the annotation is told at creation that its slots differ."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import pytest
import yaml

from hack.lib.wait import wait_until
from tests.integration._fixtures.reconcile import NOWHERE, _core
from tests.support.mpijob import condition, create_mpijob, event_reasons
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration

EXAMPLE = ROOT / "examples" / "v2beta1" / "nccl-gpus.yaml"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@contextlib.contextmanager
def gpu_nodes(api_client, namespace: str, count: int = 2, gpus: int = 8) -> Iterator[list[str]]:
    """`count` kwok nodes (kwok manages those labelled type=kwok) with `gpus` nvidia.com/gpu each, tainted as GPU
    nodes commonly are; deleted afterwards."""
    core, _ = _core(api_client)
    names = [f"kwok-gpu-{namespace}"[:56] + f"-{chr(ord('a') + i)}" for i in range(count)]
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    try:
        for name in names:
            core.create_node(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {"type": "kwok", "gpu": namespace[:63], "kubernetes.io/hostname": name},
                        "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    },
                    "spec": {"taints": [TAINT]},
                    "status": {"capacity": resources, "allocatable": resources},
                }
            )
            core.patch_node_status(name, {"status": {"capacity": resources, "allocatable": resources}})

        def ready() -> bool:
            nodes = [core.read_node(n) for n in names]
            return all(
                any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
                and n.status.allocatable.get("nvidia.com/gpu") == str(gpus)
                for n in nodes
            )

        wait_until(ready, 60, interval=0.5, what="kwok GPU nodes Ready")
        yield names
    finally:
        for name in names:
            with contextlib.suppress(Exception):
                core.delete_node(name)


def example(namespace: str, placement: dict) -> dict:
    body = yaml.safe_load(EXAMPLE.read_text())
    body["metadata"]["namespace"] = namespace
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"].update(copy.deepcopy(placement))
    # kwok: the launcher keeps running (a finished one would have the workers cleaned up under the test)
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {
        "annotations": {"kwok.mpi.operator/outcome": "run"}
    }
    return body


def test_the_gpu_example_runs_on_gpu_nodes_one_rank_per_gpu(loop, api_client, namespace) -> None:
    core, _ = _core(api_client)
    with gpu_nodes(api_client, namespace) as nodes:
        placement = {"nodeSelector": {"gpu": namespace[:63]}, "tolerations": [{**TAINT, "operator": "Equal"}]}
        create_mpijob(api_client, namespace, example(namespace, placement))

        def workers_running(job, _run) -> bool:
            pods = core.list_namespaced_pod(namespace, label_selector="training.kubeflow.org/job-role=worker").items
            return len(pods) == 2 and all(p.status.phase == "Running" for p in pods)

        job = loop(namespace, "nccl-gpus", workers_running, timeout=90)
        pods = core.list_namespaced_pod(namespace, label_selector="training.kubeflow.org/job-role=worker").items
        assert sorted(p.spec.node_name for p in pods) == nodes  # 8 GPUs each: one worker per node
        hostfile = core.read_namespaced_config_map("nccl-gpus-config", namespace).data["hostfile"]
        assert hostfile.splitlines() == [f"nccl-gpus-worker-{i}.nccl-gpus.{namespace}.svc slots=8" for i in range(2)]
        assert "SlotsDifferFromAccelerators" not in event_reasons(api_client, namespace, "nccl-gpus")
        assert condition(job, "Created")["message"] == f"MPIJob {namespace}/nccl-gpus is created."

    # The same job without the annotation: one rank per worker, and the job is told so when it is created.
    told = example(namespace, NOWHERE)
    told["metadata"] = {"name": "one-rank", "namespace": namespace}
    create_mpijob(api_client, namespace, told)
    job = loop(namespace, "one-rank", lambda j, _: condition(j, "Created") is not None, timeout=30)
    assert (
        "each worker requests 8 nvidia.com/gpu but has 1 slot in the hostfile" in condition(job, "Created")["message"]
    )
    assert "SlotsDifferFromAccelerators" in event_reasons(api_client, namespace, "one-rank")
