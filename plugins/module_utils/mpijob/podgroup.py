# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The gang scheduler's PodGroup of an MPIJob, for Volcano or scheduler-plugins, named and filled as the Kubeflow MPI
Operator does (its podgroup.go): minMember, minResources (the resources of the highest-priority pods of the gang),
the priority class and Volcano's queue; and which of its fields a drifted PodGroup gets back.

A difference from Kubeflow (docs/differences.md): the PodGroup of a WaitForWorkersReady job does not count the
launcher (no gang deadlock). The pods join the gang in children.py (their scheduler name, and the group's label or
annotation).
"""

from __future__ import annotations

from fractions import Fraction

from . import constants as C
from .children import Options, owner_reference
from .plan import replace_map
from .quantity import format_quantity, is_binary, parse_quantity
from .spec import MPIJob, ReplicaSpec


def _launcher_outside_gang(job: MPIJob) -> bool:
    """A WaitForWorkersReady launcher only exists once the workers run, so the gang is the workers alone
    (kubeflow/mpi-operator#608 deadlocks on workers+1)."""
    return (
        job.launcher_creation_policy == C.WAIT_FOR_WORKERS_READY
        and job.worker_replicas > 0
        and (job.run_policy.scheduling_policy is None or job.run_policy.scheduling_policy.min_available is None)
    )


def min_member(job: MPIJob) -> int:
    sp = job.run_policy.scheduling_policy
    if sp is not None and sp.min_available is not None:
        return sp.min_available
    return job.worker_replicas if _launcher_outside_gang(job) else job.worker_replicas + 1


def priority_class_name(job: MPIJob) -> str:
    sp = job.run_policy.scheduling_policy
    if sp is not None and sp.priority_class:
        return sp.priority_class
    for replica in (job.launcher, job.worker):
        if replica is not None and (replica.template.get("spec") or {}).get("priorityClassName"):
            return replica.template["spec"]["priorityClassName"]
    return ""


def _container_resources(replica: ReplicaSpec) -> list[dict]:
    """Per container: requests, falling back to limits for names without a request."""
    result = []
    for container in (replica.template.get("spec") or {}).get("containers") or []:
        res = container.get("resources") or {}
        merged = dict(res.get("limits") or {})
        merged.update(res.get("requests") or {})
        result.append(merged)
    return result


def min_resources(job: MPIJob, members: int, priorities: dict[str, int]) -> dict | None:
    """PodGroup minResources: the resources of the `members` pods with the highest priority (ties: launcher first)."""
    sp = job.run_policy.scheduling_policy
    if sp is not None and sp.min_resources is not None:
        return dict(sp.min_resources)
    if members == 0:
        return None
    order: list[tuple[int, bool, ReplicaSpec, int]] = []
    if not _launcher_outside_gang(job):
        order.append(((priorities.get(_pc(job.launcher), 0)), False, job.launcher, job.launcher.replicas))
    if job.worker is not None:
        order.append((priorities.get(_pc(job.worker), 0), True, job.worker, job.worker.replicas))
    order.sort(key=lambda o: (-o[0], o[1]))  # highest priority first; workers last on a tie
    total = sum(o[3] for o in order)
    if len(order) > 1 and total > members:
        prio, is_worker, replica, _count = order[1]
        order[1] = (prio, is_worker, replica, max(members - 1, 0))
    elif len(order) == 1 and total > members:
        prio, is_worker, replica, _count = order[0]
        order[0] = (prio, is_worker, replica, members)
    sums: dict[str, Fraction] = {}
    binary: dict[str, bool] = {}
    for _prio, _is_worker, replica, count in order:
        for resources in _container_resources(replica):
            for name, quantity in resources.items():
                sums[name] = sums.get(name, Fraction(0)) + parse_quantity(quantity) * count
                binary[name] = binary.get(name, True) and is_binary(quantity)
    return {name: format_quantity(value, binary[name]) for name, value in sorted(sums.items())}


def _pc(replica: ReplicaSpec) -> str:
    return (replica.template.get("spec") or {}).get("priorityClassName") or ""


def pod_group(job: MPIJob, opts: Options, priorities: dict[str, int] | None = None) -> dict | None:
    """PodGroup `<job>` for Volcano or scheduler-plugins; None without gang scheduling."""
    if not opts.gang_scheduling:
        return None
    members = min_member(job)
    resources = min_resources(job, members, priorities or {})
    sp = job.run_policy.scheduling_policy
    meta = {"name": job.name, "namespace": job.namespace, "ownerReferences": [owner_reference(job)]}
    spec: dict = {"minMember": members}
    if opts.volcano:
        queue = (sp.queue if sp and sp.queue else "") or job.annotations.get(C.VOLCANO_QUEUE_ANNOTATION, "")
        if queue:
            spec["queue"] = queue
        if priority_class_name(job):
            spec["priorityClassName"] = priority_class_name(job)
        if resources is not None:
            spec["minResources"] = resources
        return {"apiVersion": C.VOLCANO_PODGROUP_API, "kind": "PodGroup", "metadata": meta, "spec": spec}
    timeout = sp.schedule_timeout_seconds if sp and sp.schedule_timeout_seconds is not None else 0
    spec["scheduleTimeoutSeconds"] = timeout
    if resources:
        spec["minResources"] = resources
    return {"apiVersion": C.PLUGINS_PODGROUP_API, "kind": "PodGroup", "metadata": meta, "spec": spec}


def _same_quantities(a: dict | None, b: dict | None) -> bool:
    try:
        return {k: parse_quantity(v) for k, v in (a or {}).items()} == {
            k: parse_quantity(v) for k, v in (b or {}).items()
        }
    except ValueError:
        return False


def patch(have: dict, want: dict) -> dict | None:
    """The merge patch that gives a PodGroup the fields of `want` it lost or changed; None when it has them all."""
    old, new = have.get("spec") or {}, want["spec"]
    keys = {"minMember", "queue", "priorityClassName", "minResources", "scheduleTimeoutSeconds"}
    changes: dict = {}
    for key in keys:
        if key == "minResources":
            if not _same_quantities(old.get(key), new.get(key)):
                changes[key] = replace_map(old.get(key), new.get(key))
        elif old.get(key) != new.get(key) and not (key == "queue" and key not in new):
            changes[key] = new.get(key)
    return {"spec": changes} if changes else None
