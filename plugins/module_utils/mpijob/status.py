# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What every API's status stage works with: what was observed (Observed: the launcher, its pods, the workers),
the events and transitions a reconcile reports, pod and launcher-Job readings, and the condition mechanics.

Condition mechanics are Kubeflow's (`setCondition`): a condition is rewritten only when its status or reason
changes, the changed condition moves to the end, Running and Restarting exclude each other, and Succeeded/Failed
turn Running off (T9k keeps its own order: apis/t9k_status.py). Each API's own status stage is in its modules under apis/.
The clock is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from . import constants as C
from .children import worker_index
from .spec import MPIJob


@dataclass(frozen=True)
class Event:
    type: str  # Normal or Warning
    reason: str
    message: str


@dataclass(frozen=True)
class Transition:
    """A condition whose status this reconcile changed (or that it added): its lastTransitionTime moved."""

    type: str
    status: str  # True or False
    reason: str


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def truncate(message: str) -> str:
    limit = C.EVENT_MESSAGE_LIMIT
    return message if len(message) <= limit else message[: limit - 3] + "..."


# ---- conditions ------------------------------------------------------------------------------------------------------


def get_condition(status: dict, ctype: str) -> dict | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def is_true(status: dict, ctype: str) -> bool:
    cond = get_condition(status, ctype)
    return cond is not None and cond.get("status") == "True"


def is_finished(status: dict) -> bool:
    return is_true(status, C.SUCCEEDED) or is_true(status, C.FAILED)


def set_condition(status: dict, ctype: str, value: str, reason: str, message: str, now: str) -> bool:
    """Kubeflow's setCondition; True when the condition changed."""
    current = get_condition(status, ctype)
    if current is not None and current.get("status") == value and current.get("reason") == reason:
        return False
    transition = (
        current.get("lastTransitionTime", now) if current is not None and current.get("status") == value else now
    )
    kept = []
    for cond in status.get("conditions") or []:
        other = cond.get("type")
        if other == ctype or {other, ctype} == {C.RUNNING, C.RESTARTING}:
            continue
        if ctype in (C.SUCCEEDED, C.FAILED) and other in (C.RUNNING, C.FAILED):
            cond = {**cond, "status": "False"}
        kept.append(cond)
    kept.append(
        {
            "type": ctype,
            "status": value,
            "reason": reason,
            "message": message,
            "lastUpdateTime": now,
            "lastTransitionTime": transition,
        }
    )
    status["conditions"] = kept
    return True


def transitions(old: dict, new: dict) -> tuple[Transition, ...]:
    """The conditions of `new` that `old` lacks or has with another status, in `new`'s order (a message or reason
    change alone is not a transition: set_condition keeps lastTransitionTime for it)."""
    was = {c.get("type"): c.get("status") for c in old.get("conditions") or []}
    return tuple(
        Transition(str(c.get("type")), str(c.get("status")), str(c.get("reason") or ""))
        for c in new.get("conditions") or []
        if was.get(c.get("type")) != c.get("status")
    )


def remove_condition(status: dict, ctype: str, reason: str) -> bool:
    cond = get_condition(status, ctype)
    if cond is None or cond.get("reason") != reason:
        return False
    status["conditions"] = [c for c in status["conditions"] if c is not cond]
    return True


# ---- pods and jobs -------------------------------------------------------------------------------------------------


def pod_phase(pod: dict) -> str:
    return (pod.get("status") or {}).get("phase") or ""


def is_ready(pod: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def job_condition(job: dict | None, ctype: str) -> dict | None:
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype and cond.get("status") == "True":
            return cond
    return None


def launcher_finished(launcher: dict | None) -> bool:
    return job_condition(launcher, "Complete") is not None or job_condition(launcher, "Failed") is not None


def launcher_pod_as_job(pod: dict) -> dict:
    """A bare launcher Pod (MPIJob.launcher_pod) seen as the launcher Job the status stages read: Complete when it
    succeeded, Failed (with how it ended) when it failed."""
    st = pod.get("status") or {}
    ended = _terminated(st)
    status: dict = {"conditions": []}
    if st.get("phase") == "Succeeded":
        status["conditions"].append({"type": "Complete", "status": "True"})
        if ended.get("finishedAt"):
            status["completionTime"] = ended["finishedAt"]
    elif st.get("phase") == "Failed":
        detail = f"launcher container exited with code {ended.get('exitCode')}" if ended else "launcher pod failed"
        status["conditions"].append(
            {
                "type": "Failed",
                "status": "True",
                "reason": st.get("reason") or "PodFailed",
                "message": st.get("message") or detail,
            }
        )
        status["failed"] = 1
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod.get("metadata") or {}, "status": status}


def failure_detail(pod: dict) -> str:
    st = pod.get("status") or {}
    detail = st.get("reason") or ""
    for cs in st.get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or {}
        if term:
            detail = f"{term.get('reason') or detail or 'Error'}, exit code {term.get('exitCode')}"
            break
    return f"{pod['metadata']['name']} ({detail or 'Failed'})"


# ---- the status of a live job ----------------------------------------------------------------------------------------


@dataclass
class Observed:
    """What the status is computed from, after this reconcile's actions."""

    launcher: dict | None
    launcher_pods: list[dict]
    workers: list[dict]  # the job's worker pods with index < replicas
    deleting: list[dict] = field(default_factory=list)  # pods a suspension (pause) is deleting: gone for the above


def update_message(status: dict, ctype: str, message: str, now: str) -> bool:
    cond = get_condition(status, ctype)
    if cond is None:
        raise AssertionError(f"no {ctype} condition to update")
    cond.update(message=message, lastUpdateTime=now)
    return True


def launcher_failure(ref: str, cond: dict, launcher_pods: list[dict]) -> tuple[str, str]:
    reason = cond.get("reason") or C.REASON_FAILED
    msg = cond.get("message") or f"MPIJob {ref} has failed"
    if reason == "BackoffLimitExceeded":
        failed = [p for p in launcher_pods if pod_phase(p) == "Failed"]
        if failed:
            last = max(failed, key=lambda p: p["metadata"].get("creationTimestamp") or "")
            st = last.get("status") or {}
            # Kubeflow appends the pod's reason, which a plain non-zero exit leaves empty ("BackoffLimitExceeded/"):
            # fall back to how the launcher container ended.
            ended = _terminated(st)
            pod_reason = st.get("reason") or ended.get("reason") or ""
            detail = st.get("message") or ""
            if not detail and ended:
                detail = f"launcher container exited with code {ended.get('exitCode')}"
            if pod_reason:
                reason += "/" + pod_reason
            if detail:
                msg = truncate(msg + ": " + detail)
    return reason, msg


def terminated_containers(pod: dict, container: str | None = None) -> list[tuple[str, dict]]:
    """(container name, terminated state) of the pod's containers (the one named, when given) that ended: the
    current state's, else the last one's."""
    out = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if container is not None and cs.get("name") != container:
            continue
        term = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if term:
            out.append((str(cs.get("name") or ""), term))
    return out


def _terminated(pod_status: dict) -> dict:
    """The terminated state of the pod's first container that has one, or {}."""
    found = terminated_containers({"status": pod_status})
    return found[0][1] if found else {}


def ready_workers(workers: list[dict]) -> int:
    return sum(1 for p in workers if is_ready(p))


def indexed_workers(job: MPIJob, pods: list[dict]) -> dict[int, dict]:
    """The job's worker pods by index (pods of other names are ignored)."""
    result = {}
    for pod in pods:
        index = worker_index(job, pod["metadata"]["name"])
        if index is not None:
            result[index] = pod
    return result
