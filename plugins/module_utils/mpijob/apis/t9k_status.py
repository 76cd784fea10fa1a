# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""batch.tensorstack.dev/v1beta1 MPIJob, T9k's: its status stage (conditions, phase, tasks, aggregate, in T9k's shape)
and the names its status holds. t9k.py parses the API and registers it with this stage.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import constants as C
from .. import status as S
from ..spec import MPIJob

LAUNCHER, WORKER = "launcher", "worker"  # runMode replica types, status.tasks types
# status.conditions types, in the order the status lists them.
INITIALIZED, RUNNING, REPLICA_FAILURE, COMPLETED, FAILED, PAUSED = (
    "Initialized",
    "Running",
    "ReplicaFailure",
    "Completed",
    "Failed",
    "Paused",
)
CONDITION_TYPES = (INITIALIZED, RUNNING, REPLICA_FAILURE, COMPLETED, FAILED, PAUSED)
# status.phase values.
PHASES = ("Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown")
# status.aggregate keys.
AGGREGATE_KEYS = ("creating", "pending", "running", "succeeded", "failed", "deleted", "unknown")
REASON_UNSUPPORTED = "FieldNotApplied"  # a notice's event (ours)


def _set(status: dict, ctype: str, value: str, reason: str, message: str, now: str) -> bool:
    """Sets a condition in T9k's shape; True when its status changed (or it is new). A reason or message change
    alone keeps lastTransitionTime."""
    conds = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    current = next((c for c in conds if c.get("type") == ctype), {})
    changed = not current or current.get("status") != value
    new = {
        "type": ctype,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now if changed else current.get("lastTransitionTime", now),
    }
    conds = [c for c in conds if c.get("type") != ctype] + [new]
    order = {t: i for i, t in enumerate(CONDITION_TYPES)}
    status["conditions"] = sorted(conds, key=lambda c: order.get(c.get("type"), len(order)))
    return changed


def _true(status: dict, ctype: str) -> bool:
    return S.is_true(status, ctype)


def _uid(pod: dict) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _task(kind: str, pods: list[dict]) -> dict:
    existing = sorted((p for p in pods if _uid(p)), key=lambda p: p["metadata"]["name"])
    restarts = sum(
        int(cs.get("restartCount") or 0)
        for p in existing
        for cs in (p.get("status") or {}).get("containerStatuses") or []
    )
    return {
        "type": kind,
        "restartCount": restarts,
        "status": [
            {"phase": S.pod_phase(p) or "Pending", "name": p["metadata"]["name"], "uid": _uid(p), "containers": []}
            for p in existing
        ],
    }


def _aggregate(pods: list[dict], deleting: list[dict], launcher_coming: bool) -> dict:
    counts = dict.fromkeys(AGGREGATE_KEYS, 0)
    counts["creating"] += int(launcher_coming)
    counts["deleted"] += len(deleting)
    for pod in pods:
        if not _uid(pod):
            key = "creating"  # created by this reconcile
        elif (pod.get("metadata") or {}).get("deletionTimestamp"):
            key = "deleted"
        else:
            key = (S.pod_phase(pod) or "Pending").lower()
        counts[key if key in counts else "unknown"] += 1
    return counts


def live_status(job: MPIJob, old: dict, seen: S.Observed, now: str, events: list[S.Event]) -> dict:
    """T9k's status of a live job: conditions, phase, tasks, aggregate."""
    status: dict[str, Any] = {
        "conditions": [
            c
            for c in copy.deepcopy(old.get("conditions") or [])
            if isinstance(c, dict) and not (c.get("type") == FAILED and c.get("reason") == C.REASON_VALIDATION)
        ]
    }
    ref = f"MPIJob {job.namespace}/{job.name}"
    if _set(status, INITIALIZED, "True", "Initialized", "The job has been initialized successfully.", now):
        events.append(S.Event("Normal", "Initialized", f"{ref} is initialized"))
        events.extend(S.Event("Warning", REASON_UNSUPPORTED, n) for n in job.notices)
    launcher_pods = sorted(seen.launcher_pods, key=lambda p: p["metadata"]["name"])
    workers = seen.workers
    pods = launcher_pods + workers
    complete = S.job_condition(seen.launcher, "Complete")
    failed = S.job_condition(seen.launcher, "Failed")
    evicted = [p for p in workers if S.pod_phase(p) == "Failed" and (p.get("status") or {}).get("reason") == "Evicted"]
    broken = [p for p in pods if S.pod_phase(p) == "Failed" and p not in evicted]

    def finish(ctype: str, reason: str, message: str) -> None:
        if _set(status, ctype, "True", reason, message, now):
            events.append(S.Event("Normal" if ctype == COMPLETED else "Warning", reason, f"{ref}: {message}"))
        if ctype == FAILED:
            _set(status, COMPLETED, "False", "Failed", message, now)
        if S.get_condition(status, RUNNING) is not None:
            _set(status, RUNNING, "False", reason, message, now)

    if complete is not None:
        finish(COMPLETED, "Succeeded", "The launcher (mpirun) exited with code 0.")
    elif failed is not None:
        reason, message = S.launcher_failure(f"{job.namespace}/{job.name}", failed, seen.launcher_pods)
        finish(FAILED, reason, S.truncate(f"The job exited with an error code. {message}"))
    elif evicted:
        finish(FAILED, C.REASON_EVICTED, f"{len(evicted)}/{len(workers)} workers are evicted.")
    elif job.suspended:
        msg = "The job is paused: all replicas are deleted or being deleted."
        if _set(status, PAUSED, "True", "Paused", msg, now):
            events.append(S.Event("Normal", "Paused", f"{ref} is paused"))
        if S.get_condition(status, RUNNING) is not None:
            _set(status, RUNNING, "False", "Paused", msg, now)
    else:
        if _true(status, PAUSED):
            _set(status, PAUSED, "False", "Resumed", "The job is resuming.", now)
            events.append(S.Event("Normal", "Resuming", f"{ref} is resuming"))
        if broken:
            msg = S.truncate(f"{len(broken)} replica(s) failed: " + ", ".join(S.failure_detail(p) for p in broken))
            if _set(status, REPLICA_FAILURE, "True", "ReplicaFailed", msg, now):
                events.append(S.Event("Warning", "ReplicaFailed", f"{ref}: {msg}"))
            if S.get_condition(status, RUNNING) is not None:
                _set(status, RUNNING, "False", "ReplicaFailed", msg, now)
        elif (
            any(S.pod_phase(p) == "Running" for p in launcher_pods)
            and len(workers) == job.worker_replicas
            and all(S.pod_phase(p) == "Running" for p in workers)
        ):
            msg = "All pods are running normally."
            if _set(status, RUNNING, "True", "Running", msg, now):
                events.append(S.Event("Normal", "Running", f"{ref} is running"))
            _set(status, REPLICA_FAILURE, "False", "Running", msg, now)
    unknown = any(S.pod_phase(p) == "Unknown" for p in pods)
    status["phase"] = "Unknown" if unknown and not finished(status) else phase(status)
    live_launcher = any(_uid(p) and not (p.get("metadata") or {}).get("deletionTimestamp") for p in launcher_pods)
    launcher_coming = seen.launcher is not None and complete is None and failed is None and not live_launcher
    status["tasks"] = [_task(LAUNCHER, launcher_pods), _task(WORKER, workers)]
    status["aggregate"] = _aggregate(pods, seen.deleting, launcher_coming)
    return status


def phase(status: dict | None) -> str:
    """The phase T9k's conditions say (Unknown is only set by live_status, from pods in phase Unknown)."""
    status = status or {}
    if _true(status, FAILED):
        return "Failed"
    if _true(status, COMPLETED):
        return "Succeeded"
    if _true(status, PAUSED):
        return "Paused"
    if S.get_condition(status, PAUSED) is not None and not _true(status, RUNNING):
        return "Resuming"
    if _true(status, RUNNING):
        return "Running"
    if status.get("phase") == "Unknown":
        return "Unknown"
    return "Pending"


def with_phase(status: dict) -> dict:
    return status if status.get("phase") in PHASES else {**status, "phase": phase(status)}


def finished(status: dict) -> bool:
    return _true(status, COMPLETED) or _true(status, FAILED)


def settled(status: dict) -> bool:
    """Finished for good: not a Failed that only says the spec is invalid (fixing the spec revives the job)."""
    failed = S.get_condition(status, FAILED) or {}
    return _true(status, COMPLETED) or (_true(status, FAILED) and failed.get("reason") != C.REASON_VALIDATION)


def cleaned_status(job: MPIJob, status: dict) -> dict:
    """After cleanUpWorkers: the workers' pods are deleted (or being deleted); the launcher's stay as they were."""
    out = copy.deepcopy(status)
    counts = dict.fromkeys(AGGREGATE_KEYS, 0)
    for task in out.get("tasks") or []:
        for pod in task.get("status") or []:
            key = "deleted" if task.get("type") == WORKER else str(pod.get("phase") or "Pending").lower()
            counts[key if key in counts else "unknown"] += 1
    out["aggregate"] = counts
    return out


def invalid_status(old: dict, message: str, now: str, events: list[S.Event]) -> dict:
    """An object parse refused: Failed, reason ValidationError, the message naming the fields."""
    status = copy.deepcopy(old)
    current = S.get_condition(status, FAILED) or {}
    if (
        current.get("reason") != C.REASON_VALIDATION
        or current.get("message") != message
        or current.get("status") != "True"
    ):
        _set(status, FAILED, "True", C.REASON_VALIDATION, message, now)
        events.append(S.Event("Warning", C.REASON_VALIDATION, message))
    status["phase"] = phase(status)
    return status


def restarting(status: dict, reason: str, message: str, now: str) -> None:
    """T9k's status has no Restarting: Running is False while the world restarts, saying why."""
    _set(status, RUNNING, "False", reason, message, now)
    status["phase"] = phase(status)


def given_up(status: dict, reason: str, message: str, now: str) -> None:
    """Failed for good by the failure policy, as T9k marks a failed job."""
    _set(status, FAILED, "True", reason, message, now)
    _set(status, COMPLETED, "False", "Failed", message, now)
    if S.get_condition(status, RUNNING) is not None:
        _set(status, RUNNING, "False", reason, message, now)
    status["phase"] = phase(status)


def counts(status: dict) -> dict:
    """Pods by role and state, from status.tasks (each pod's phase)."""
    found = {"workers_running": 0, "workers_failed": 0, "launcher_active": 0, "launcher_failed": 0}
    for task in status.get("tasks") or []:
        if not isinstance(task, dict):
            continue
        phases = [str((p or {}).get("phase")) for p in task.get("status") or [] if isinstance(p, dict)]
        if task.get("type") == WORKER:
            found["workers_running"] += phases.count("Running")
            found["workers_failed"] += phases.count("Failed")
        elif task.get("type") == LAUNCHER:
            found["launcher_active"] += phases.count("Running") + phases.count("Pending")
            found["launcher_failed"] += phases.count("Failed")
    return found
