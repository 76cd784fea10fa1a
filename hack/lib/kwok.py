"""The local cluster's simulated world, steered: a kwok node of one's own (and losing it: kwok lets go of it, so it
stops heartbeating and the node controller marks it unreachable), and a pod's end written as a kubelet writes it
(kwok leaves a Failed pod as it is). The restart tests (tests/integration/test_restarts.py) and `make restarts`
(hack/experiments/restarts) use them."""

from __future__ import annotations

import contextlib
from typing import Any

# kwok manages the nodes that carry this label (hack/worlds/cluster/components.sh: --manage-nodes-with-label-selector).
MANAGED = ("type", "kwok")


def kwok_node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node kwok runs pods on (110 pods, plenty of CPU and memory), with `labels` besides kwok's own."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
            "labels": {MANAGED[0]: MANAGED[1], "kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": {"taints": []},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
    }


def node_ready(core: Any, name: str) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in core.read_node(name).status.conditions or [])


def node_exists(core: Any, name: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        core.read_node(name)
        return True
    except ApiException as e:
        if e.status == 404:
            return False
        raise


def fresh_node(core: Any, node: dict[str, Any], timeout: float = 60) -> None:
    """`node` made anew (a node of that name from an earlier run deleted first), once kwok has it Ready."""
    from kubernetes.client.exceptions import ApiException

    from hack.lib.wait import wait_until

    name = node["metadata"]["name"]
    with contextlib.suppress(ApiException):
        core.delete_node(name)
    wait_until(lambda: not node_exists(core, name), 30, what=f"an old {name} gone")
    core.create_node(node)
    wait_until(lambda: node_ready(core, name), timeout, what=f"{name} Ready")


def lose_node(core: Any, name: str) -> None:
    """kwok lets go of the node: no more heartbeats; past the node monitor grace period the node controller marks it
    unreachable and taints it, and its pods stay as they were (nobody runs or ends them any more)."""
    core.patch_node(name, {"metadata": {"labels": {MANAGED[0]: "lost"}}})


def end_pod(
    core: Any, namespace: str, pod: str, code: int, reason: str = "", pod_reason: str = "", disruption: str = ""
) -> None:
    """What the kubelet writes when a pod's container ends with `code` (`reason`: its termination reason, Error by
    default, OOMKilled...), or the pod is evicted (`pod_reason` Evicted, `disruption` the DisruptionTarget reason)."""
    conditions = [{"type": "Ready", "status": "False"}]
    if disruption:
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": disruption})
    current = core.read_namespaced_pod(pod, namespace)
    container = current.spec.containers[0]
    status: dict[str, Any] = {
        "phase": "Failed" if code else "Succeeded",
        "conditions": conditions,
        "containerStatuses": [
            {
                "name": container.name,
                "image": container.image,
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": code, "reason": reason or ("Error" if code else "Completed")}},
            }
        ],
    }
    if pod_reason:
        status["reason"] = pod_reason
    core.patch_namespaced_pod_status(pod, namespace, {"status": status})
