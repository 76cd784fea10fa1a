#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
module: operator_rollout
short_description: Wait until the MPI operator Deployment is rolled out; fail fast, with the reason, when it cannot start
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Polls the Deployment, its pods and their events until every replica is updated and available.
  - Fails as soon as a pod shows a cause that waiting will not cure (the image cannot be pulled, the container keeps
    exiting, the pod cannot be scheduled, the container cannot be created), with the reason, the pod's events, the
    tail of its log and what to do. Otherwise fails after O(timeout) seconds with the same details.
  - Also fails when a pod was scheduled to a node that only simulates pods (a kwok node, annotated
    C(kwok.x-k8s.io/node)), as such a pod is reported Running and nothing runs. Nodes that cannot be read (no RBAC to
    get nodes) are not judged.
  - Used by the C(mpi.operator.operator) role; never changes anything.
extends_documentation_fragment:
  - mpi.operator.auth
  - mpi.operator.attributes_readonly
options:
  name:
    description: Name of the Deployment.
    type: str
    default: mpi-operator
  namespace:
    description: Namespace of the Deployment.
    type: str
    required: true
  timeout:
    description: Seconds to wait for the rollout.
    type: int
    default: 300
  poll:
    description: Seconds between two looks.
    type: float
    default: 2
  allow_simulated_nodes:
    description: Accept pods on nodes that only simulate pods (kwok's), for test clusters.
    type: bool
    default: false
  log_lines:
    description: Lines of the failing container's log shown in the message.
    type: int
    default: 20
"""

EXAMPLES = r"""
- name: Wait for the operator
  mpi.operator.operator_rollout:
    namespace: mpi-operator
    timeout: 300
"""

RETURN = r"""
state:
  description: V(ready), or V(failed) (then the task fails and the task's C(msg) says why).
  returned: always
  type: str
reason:
  description: The cause, in one line.
  returned: always
  type: str
pod:
  description: The pod the diagnosis is about, if any.
  returned: on failure
  type: str
events:
  description: That pod's recent events (type, reason, count, message).
  returned: on failure
  type: list
  elements: str
log:
  description: The tail of that pod's container log (the previous container's, after a crash).
  returned: on failure
  type: list
  elements: str
elapsed:
  description: Seconds waited.
  returned: always
  type: float
"""

import time  # noqa: E402

from ..module_utils import rollout as R  # noqa: E402
from ..module_utils.kube.auth import AUTH_ARG_SPEC  # noqa: E402
from ..module_utils.kube.module import run_module  # noqa: E402
from ..module_utils.kube.paths import collection, item  # noqa: E402
from ..module_utils.kube.rest import Rest  # noqa: E402
from ..module_utils.mpijob.errors import ApiError, JobError, Unreachable  # noqa: E402

LOG_TIMEOUT = 10.0  # a kubelet that cannot serve logs must not hold the task


def argspec() -> dict:
    spec = dict(
        name=dict(type="str", default="mpi-operator"),
        namespace=dict(type="str", required=True),
        timeout=dict(type="int", default=300),
        poll=dict(type="float", default=2.0),
        log_lines=dict(type="int", default=20),
        allow_simulated_nodes=dict(type="bool", default=False),
    )
    spec.update({k: dict(v) for k, v in AUTH_ARG_SPEC.items()})
    return spec


def look(rest, namespace: str, name: str) -> tuple[dict | None, list[dict], list[dict]]:
    """The Deployment, the pods its selector matches, and the namespace's pod events."""
    deployment = rest.get(item("apps/v1", "Deployment", namespace, name))
    if deployment is None:
        return None, [], []
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = rest.list(collection("v1", "Pod", namespace), selector)
    events = (
        rest.request(
            "GET", collection("v1", "Event", namespace), query={"fieldSelector": "involvedObject.kind=Pod"}
        ).get("items")
        or []
    )
    return deployment, pods, events


def read_nodes(rest, pods: list[dict], nodes: dict[str, dict]) -> None:
    """Adds the nodes the pods run on to `nodes` (each read once; one that cannot be read is left out)."""
    for pod in pods:
        name = (pod.get("spec") or {}).get("nodeName")
        if not name or name in nodes:
            continue
        try:
            node = rest.get(item("v1", "Node", "", name))
        except ApiError:  # e.g. no RBAC to get nodes: the node is not judged
            node = None
        nodes[name] = node or {}


def log_tail(rest, namespace: str, verdict: R.Verdict, lines: int) -> str:
    if not verdict.pod or not verdict.container:
        return ""
    query = {"container": verdict.container, "tailLines": str(lines)}
    if verdict.previous_log:
        query["previous"] = "true"
    path = f"{item('v1', 'Pod', namespace, verdict.pod)}/log"
    try:
        status, _reason, raw = rest.raw("GET", path, query=query, accept="*/*", timeout=LOG_TIMEOUT)
    except Unreachable as exc:
        return f"(log unavailable: {exc})"
    text = raw.decode(errors="replace")
    return text if status < 400 else ""


def task(module, rest: Rest) -> dict:
    p = module.params
    start = time.monotonic()
    nodes: dict[str, dict] = {}
    try:
        while True:
            deployment, pods, events = look(rest, p["namespace"], p["name"])
            if not p["allow_simulated_nodes"]:
                read_nodes(rest, pods, nodes)
            verdict = R.verdict(deployment, pods, events, time.time(), nodes)
            if verdict.state != "waiting":
                break
            if time.monotonic() - start >= p["timeout"]:
                verdict = R.timed_out(deployment, pods, events, p["timeout"])
                break
            time.sleep(p["poll"])
        elapsed = round(time.monotonic() - start, 1)
        if verdict.state == "ready":
            return {"changed": False, "state": "ready", "reason": verdict.summary, "elapsed": elapsed}
        tail = log_tail(rest, p["namespace"], verdict, p["log_lines"])
    except ApiError as exc:
        raise JobError(f"cannot read the operator Deployment {p['namespace']}/{p['name']}: {exc.message}") from exc
    raise JobError(
        verdict.message(tail),
        state="failed",
        reason=verdict.summary,
        pod=verdict.pod,
        events=verdict.events,
        log=tail.splitlines(),
        elapsed=elapsed,
    )


def main() -> None:
    run_module(argspec(), task, supports_check_mode=True)


if __name__ == "__main__":
    main()
