"""MPIJob status from what was observed: conditions, replicaStatuses, startTime, completionTime.

Condition mechanics are Kubeflow's (`setCondition`): a condition is rewritten only when its status or reason
changes, the changed condition moves to the end, Running and Restarting exclude each other, and Succeeded/Failed
turn Running off. `status.phase` (ours, additive) is the one-word state the printer column State shows; it is
computed from the conditions by `job_phase`, which `mpijob_info` uses too. The clock is an argument.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime, timezone

from . import constants as C
from .children import worker_index, worker_selector
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


# Phases in the order they are checked: a finished job is finished whatever else its conditions say; the last
# condition (what Kubeflow's column shows) can be a False one, e.g. Running=False on a suspended job.
PHASES = (C.FAILED, C.SUCCEEDED, C.SUSPENDED, C.RESTARTING, C.RUNNING, C.CREATED)
PENDING = "Pending"  # no condition yet: the operator has not seen the job


def job_phase(status: dict | None) -> str:
    """Pending, Created, Running, Restarting, Suspended, Succeeded or Failed: the first phase whose condition is
    True, in PHASES order."""
    for phase in PHASES:
        if is_true(status or {}, phase):
            return phase
    return PENDING


def with_phase(status: dict) -> dict:
    """`status` with `phase` set from its conditions (the printer column reads it)."""
    phase = job_phase(status)
    if status.get("phase") == phase:
        return status
    return {**status, "phase": phase}


def set_condition(status: dict, ctype: str, value: str, reason: str, message: str, now: str) -> bool:
    """Kubeflow's setCondition; True when the condition changed."""
    current = get_condition(status, ctype)
    if current is not None and current.get("status") == value and current.get("reason") == reason:
        return False
    transition = current.get("lastTransitionTime", now) if current is not None and current.get("status") == value else now
    kept = []
    for cond in status.get("conditions") or []:
        other = cond.get("type")
        if other == ctype or {other, ctype} == {C.RUNNING, C.RESTARTING}:
            continue
        if ctype in (C.SUCCEEDED, C.FAILED) and other in (C.RUNNING, C.FAILED):
            cond = {**cond, "status": "False"}
        kept.append(cond)
    kept.append({
        "type": ctype,
        "status": value,
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
    })
    status["conditions"] = kept
    return True


def transitions(old: dict, new: dict) -> tuple[Transition, ...]:
    """The conditions of `new` that `old` lacks or has with another status, in `new`'s order (a message or reason
    change alone is not a transition: set_condition keeps lastTransitionTime for it)."""
    was = {c.get("type"): c.get("status") for c in old.get("conditions") or []}
    return tuple(Transition(str(c.get("type")), str(c.get("status")), str(c.get("reason") or ""))
                 for c in new.get("conditions") or [] if was.get(c.get("type")) != c.get("status"))


def remove_condition(status: dict, ctype: str, reason: str) -> bool:
    cond = get_condition(status, ctype)
    if cond is None or cond.get("reason") != reason:
        return False
    status["conditions"] = [c for c in status["conditions"] if c is not cond]
    return True


# ---- pods and jobs -------------------------------------------------------------------------------------------------

def phase(pod: dict) -> str:
    return (pod.get("status") or {}).get("phase") or ""


def is_ready(pod: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or []
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
        status["conditions"].append({"type": "Failed", "status": "True", "reason": st.get("reason") or "PodFailed",
                                     "message": st.get("message") or detail})
        status["failed"] = 1
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod.get("metadata") or {}, "status": status}


def _counts(pods: list[dict], **extra: object) -> dict:
    """A replicaStatus with zero counts left out, as Go's omitempty does."""
    counts = {
        "active": sum(1 for p in pods if phase(p) == "Running"),
        "succeeded": sum(1 for p in pods if phase(p) == "Succeeded"),
        "failed": sum(1 for p in pods if phase(p) == "Failed"),
    }
    return {**{k: v for k, v in counts.items() if v}, **extra}


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


def created(status: dict, job_ns: str, job_name: str, now: str, events: list[Event]) -> None:
    if not status.get("conditions"):
        msg = f"MPIJob {job_ns}/{job_name} is created."
        set_condition(status, C.CREATED, "True", C.REASON_CREATED, msg, now)
        events.append(Event("Normal", C.REASON_CREATED, msg))


def live_status(job: MPIJob, old: dict, seen: Observed, now: str, events: list[Event]) -> dict:
    """Kubeflow's updateMPIJobStatus for a job that is not finished, with our fixes."""
    status = copy.deepcopy(old)
    ref = f"{job.namespace}/{job.name}"
    created(status, job.namespace, job.name, now, events)
    remove_condition(status, C.FAILED, C.REASON_VALIDATION)  # the spec was fixed
    if not status.get("startTime") and not job.suspended:
        status["startTime"] = now
    if job.suspended:
        if set_condition(status, C.SUSPENDED, "True", C.REASON_SUSPENDED, "MPIJob suspended", now):
            events.append(Event("Normal", C.REASON_SUSPENDED, "MPIJob suspended"))
    elif get_condition(status, C.SUSPENDED) is not None and set_condition(
        status, C.SUSPENDED, "False", C.REASON_RESUMED, "MPIJob resumed", now
    ):
        events.append(Event("Normal", C.REASON_RESUMED, "MPIJob resumed"))
        status["startTime"] = now

    replicas = dict(status.get("replicaStatuses") or {})
    running_launchers = 0
    if seen.launcher is not None:
        running_launchers = sum(1 for p in seen.launcher_pods if phase(p) == "Running")
        failed = int((seen.launcher.get("status") or {}).get("failed") or 0)
        launcher_status = {"failed": failed} if failed else {}
        complete = job_condition(seen.launcher, "Complete")
        failed_cond = job_condition(seen.launcher, "Failed")
        if complete is not None:
            launcher_status["succeeded"] = 1
            msg = f"MPIJob {ref} successfully completed."
            if not status.get("completionTime"):
                status["completionTime"] = (seen.launcher.get("status") or {}).get("completionTime") or now
            if set_condition(status, C.SUCCEEDED, "True", C.REASON_SUCCEEDED, msg, now):
                events.append(Event("Normal", C.REASON_SUCCEEDED, msg))
        elif failed_cond is not None:
            reason, msg = launcher_failure(ref, failed_cond, seen.launcher_pods)
            if not status.get("completionTime"):
                status["completionTime"] = now
            if set_condition(status, C.FAILED, "True", reason, msg, now):
                events.append(Event("Warning", reason, msg))
        elif running_launchers:
            launcher_status["active"] = running_launchers
        replicas[C.LAUNCHER] = launcher_status

    workers = seen.workers
    replicas[C.WORKER] = _counts(workers, selector=worker_selector(job))
    status["replicaStatuses"] = replicas
    evicted = [p for p in workers if phase(p) == "Failed" and (p.get("status") or {}).get("reason") == "Evicted"]
    crashed = [p for p in workers if phase(p) == "Failed" and p not in evicted]
    if evicted:
        msg = f"{len(evicted)}/{len(workers)} workers are evicted"
        if set_condition(status, C.FAILED, "True", C.REASON_EVICTED, msg, now):
            events.append(Event("Warning", C.REASON_EVICTED, msg))
        # Kubeflow leaves completionTime unset here, so cleanup never runs (kubeflow/mpi-operator#647).
        status.setdefault("completionTime", now)

    running = sum(1 for p in workers if phase(p) == "Running")
    if job.suspended:
        set_condition(status, C.RUNNING, "False", C.REASON_SUSPENDED, f"MPIJob {ref} is suspended.", now)
    elif is_finished(status):
        if get_condition(status, C.RUNNING) is None:
            stamp = status.get("completionTime") or now
            status.setdefault("conditions", []).append({
                "type": C.RUNNING,
                "status": "False",
                "reason": C.REASON_RUNNING,
                "message": f"MPIJob {ref} is finished but Running condition was never set.",
                "lastUpdateTime": stamp,
                "lastTransitionTime": stamp,
            })
    elif crashed:
        # Kubeflow only counts failed workers; say which and why (kubeflow/mpi-operator#90).
        msg = truncate(f"{len(crashed)}/{len(workers)} workers failed: " + ", ".join(failure_detail(p) for p in crashed))
        cond = get_condition(status, C.RUNNING)
        if cond is not None and cond.get("status") == "False" and cond.get("reason") == C.REASON_WORKER_FAILED:
            changed = cond.get("message") != msg and _update_message(status, C.RUNNING, msg, now)
        else:
            changed = set_condition(status, C.RUNNING, "False", C.REASON_WORKER_FAILED, msg, now)
        if changed:
            events.append(Event("Warning", C.REASON_WORKER_FAILED, msg))
    elif seen.launcher is not None and running_launchers >= 1 and running == len(workers):
        msg = f"MPIJob {ref} is running."
        if set_condition(status, C.RUNNING, "True", C.REASON_RUNNING, msg, now):
            events.append(Event("Normal", C.REASON_RUNNING, f"MPIJob {ref} is running"))
    return status


def _update_message(status: dict, ctype: str, message: str, now: str) -> bool:
    cond = get_condition(status, ctype)
    if cond is None:
        raise AssertionError(f"no {ctype} condition to update")
    cond.update(message=message, lastUpdateTime=now)
    return True


def launcher_failure(ref: str, cond: dict, launcher_pods: list[dict]) -> tuple[str, str]:
    reason = cond.get("reason") or C.REASON_FAILED
    msg = cond.get("message") or f"MPIJob {ref} has failed"
    if reason == "BackoffLimitExceeded":
        failed = [p for p in launcher_pods if phase(p) == "Failed"]
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


def _terminated(pod_status: dict) -> dict:
    """The terminated state of the pod's first container that has one, or {}."""
    for cs in pod_status.get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if term:
            return term
    return {}


def cleaned_status(job: MPIJob, old: dict) -> dict:
    """A finished job after its pods were cleaned up: no active workers any more."""
    status = copy.deepcopy(old)
    replicas = dict(status.get("replicaStatuses") or {})
    worker = dict(replicas.get(C.WORKER) or {})
    worker.pop("active", None)
    worker["selector"] = worker_selector(job)
    replicas[C.WORKER] = worker
    status["replicaStatuses"] = replicas
    return status


def invalid_status(old: dict, message: str, now: str, events: list[Event]) -> dict:
    """A malformed MPIJob: Failed with reason ValidationError, the message naming the fields."""
    status = copy.deepcopy(old)
    cond = get_condition(status, C.FAILED)
    if cond is None or cond.get("reason") != C.REASON_VALIDATION or cond.get("message") != message:
        if not set_condition(status, C.FAILED, "True", C.REASON_VALIDATION, message, now):
            _update_message(status, C.FAILED, message, now)
        events.append(Event("Warning", C.REASON_VALIDATION, message))
    return with_phase(status)


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
