# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What the mpijob, mpijob_info and mpijob_wait tasks decide, without I/O: the short form as a v2beta1 manifest, the
definition to apply (with `workers`/`suspend` laid over it), the patch for an existing job, the summary of a
job's status (phase, workers running), and the messages users read (progress line, failure with log tail).
"""

from __future__ import annotations

import copy
import shlex
from datetime import datetime
from typing import Any

from . import constants as C
from .apis import api_for, suspended_phases
from .errors import InvalidMPIJob, SubmitError
from .restart import restart_count, restarts
from .status import get_condition, parse_time, truncate

PENDING = C.PENDING

FINISHED = (C.SUCCEEDED, C.FAILED)
# What waiting for each target accepts: waiting for Succeeded is over when the job finished either way.
# Waiting for Suspended is over at any API's word for it (T9k's is Paused).
SUSPENDED = suspended_phases()
WAIT_TARGETS = {C.SUCCEEDED: FINISHED, C.RUNNING: (C.RUNNING, *FINISHED), C.SUSPENDED: SUSPENDED}
SHORT_FORM_KEYS = (
    "image",
    "command",
    "slots_per_worker",
    "resources",
    "launcher_resources",
    "mpi_implementation",
    "labels",
    "env",
    "clean_pod_policy",
)
# Options that are labels of the job, with a manifest as with the short form.
LABEL_OPTIONS = (("queue_name", C.KUEUE_QUEUE_LABEL), ("priority_class", C.KUEUE_PRIORITY_LABEL))
LAUNCHER_CONTAINER = "mpi-launcher"
WORKER_CONTAINER = "mpi-worker"
# Fields the server owns: they never count as a difference between what is and what would be.
_VOLATILE_META = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid", "selfLink")


# ---- which job, from which input -------------------------------------------------------------------------------------


def short_form_manifest(params: dict) -> dict:
    """The kubeflow.org/v2beta1 MPIJob of the short form (`name`, `image`, `command`, `workers`, ...)."""
    missing = [key for key in ("name", "image", "command") if not params.get(key)]
    if missing:
        raise SubmitError(f"the short form needs {', '.join(missing)} (or give definition or src)")
    # args, not command: an image's entrypoint (e.g. one that waits for the workers' names) still runs
    launcher = {"name": LAUNCHER_CONTAINER, "image": params["image"], "args": _command(params["command"])}
    worker = {"name": WORKER_CONTAINER, "image": params["image"]}  # no command: the operator starts sshd
    env = _env(params.get("env"))
    if env:
        launcher["env"] = env
        worker["env"] = copy.deepcopy(env)
    if params.get("launcher_resources"):
        launcher["resources"] = _resources(params["launcher_resources"], "launcher_resources")
    if params.get("resources"):
        worker["resources"] = _resources(params["resources"], "resources")
    spec: dict[str, Any] = {
        "slotsPerWorker": 1 if params.get("slots_per_worker") is None else params["slots_per_worker"],
        "mpiImplementation": params.get("mpi_implementation") or C.OPENMPI,
        "runPolicy": {"cleanPodPolicy": params.get("clean_pod_policy") or C.CLEAN_RUNNING},
        "mpiReplicaSpecs": {
            C.LAUNCHER: {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
            C.WORKER: {
                "replicas": 1 if params.get("workers") is None else params["workers"],
                "template": {"spec": {"containers": [worker]}},
            },
        },
    }
    if params.get("suspend") is not None:
        spec["runPolicy"]["suspend"] = params["suspend"]
    metadata: dict[str, Any] = {"name": params["name"], "namespace": params.get("namespace") or "default"}
    if params.get("labels"):
        metadata["labels"] = dict(params["labels"])
    return {"apiVersion": C.API_VERSION, "kind": C.KIND, "metadata": metadata, "spec": spec}


def _label_options(params: dict, meta: dict) -> None:
    """queue_name and priority_class as the job's Kueue labels (over the manifest's)."""
    for option, label in LABEL_OPTIONS:
        if params.get(option):
            meta["labels"] = {**(meta.get("labels") or {}), label: params[option]}


def _command(value: Any) -> list[str]:
    """A list is the exec form; a string is split like a shell would (no shell features)."""
    if isinstance(value, str):
        return shlex.split(value)
    return [str(part) for part in value]


def _env(value: dict | None) -> list[dict]:
    return [{"name": str(k), "value": str(v)} for k, v in (value or {}).items()]


def _resources(value: dict, option: str) -> dict:
    """`{cpu: 1, memory: 1Gi}` means requests = limits; `{requests: ..., limits: ...}` is taken as written."""
    if not isinstance(value, dict):
        raise SubmitError(f"{option}: must be a dict, got {type(value).__name__}")
    if set(value) <= {"requests", "limits"}:
        return {key: {k: str(v) for k, v in (value[key] or {}).items()} for key in value}
    if "requests" in value or "limits" in value:
        raise SubmitError(f"{option}: give either requests/limits or plain quantities (cpu, memory), not both")
    quantities = {k: str(v) for k, v in value.items()}
    return {"requests": quantities, "limits": dict(quantities)}


def one_mpijob(docs: list, where: str) -> dict:
    """The one MPIJob among the YAML documents of `where` (a file, or a definition given as a YAML string), a `kind:
    List`'s items included (a file that brings what its job needs along)."""
    items = [
        i for d in docs if isinstance(d, dict) for i in ((d.get("items") or []) if d.get("kind") == "List" else [d])
    ]
    jobs = [d for d in items if isinstance(d, dict) and d.get("kind") == C.KIND]
    if len(jobs) != 1:
        raise SubmitError(f"{where} must hold exactly one MPIJob, found {len(jobs)}")
    return jobs[0]


def desired_manifest(params: dict, definition: dict | None) -> dict | None:
    """The full MPIJob to apply, or None when the module only patches an existing job (`workers`/`suspend`).

    `definition` comes from the `definition` or `src` option; the short form is used when `image` is set.
    `workers` and `suspend` are laid over either; `name` replaces the manifest's, `namespace` fills in a missing one.
    """
    if definition is not None:
        if any(params.get(key) is not None for key in SHORT_FORM_KEYS):
            raise SubmitError("the short form options (image, command, ...) cannot be combined with definition or src")
        manifest = copy.deepcopy(definition)
        if not isinstance(manifest, dict):
            raise SubmitError(f"definition: must be a dict (one MPIJob), got {type(manifest).__name__}")
        if manifest.get("kind") not in (None, C.KIND):
            raise SubmitError(f"definition: kind must be {C.KIND}, got {manifest.get('kind')!r}")
        manifest.setdefault("apiVersion", C.API_VERSION)
        manifest["kind"] = C.KIND
        meta = manifest.setdefault("metadata", {}) or {}
        manifest["metadata"] = meta
        if params.get("name"):
            meta["name"] = params["name"]  # e.g. one manifest run under several names
        if params.get("namespace") and meta.get("namespace") and params["namespace"] != meta["namespace"]:
            # as kubectl apply -n: a job is not moved to another namespace behind the manifest's back
            raise SubmitError(
                f"namespace: {params['namespace']!r} differs from metadata.namespace "
                f"{meta['namespace']!r} of the definition"
            )
        meta["namespace"] = meta.get("namespace") or params.get("namespace") or "default"
        api = api_for(manifest)
        if params.get("workers") is not None:
            _set(manifest, api.workers_path, params["workers"])
        if params.get("suspend") is not None:
            _set(manifest, _suspend_path(manifest), params["suspend"])
    elif params.get("image") or params.get("command"):
        manifest = short_form_manifest(params)
    else:
        if any(params.get(pair[0]) for pair in LABEL_OPTIONS):
            raise SubmitError(
                "queue_name and priority_class label a job as it is submitted: give definition, src or "
                "the short form with them"
            )
        return None
    _label_options(params, manifest["metadata"])
    validate(manifest)
    return manifest


def _set(obj: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = value


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _nested(path: tuple[str, ...], value: Any) -> dict:
    for key in reversed(path):
        value = {key: value}
    return value


def _suspend_path(job: dict) -> tuple[str, ...]:
    api = api_for(job)
    if api.suspend_path is None:
        raise SubmitError(f"suspend: {api.api_version} MPIJobs cannot be suspended (the API has no such field)")
    return api.suspend_path


def validate(manifest: dict) -> None:
    """Raises SubmitError naming every bad field (by the manifest's own API's names), before anything is sent."""
    try:
        api_for(manifest).parse(manifest)
    except InvalidMPIJob as exc:
        raise SubmitError(f"invalid MPIJob: {exc}") from exc


def job_patch(existing: dict, workers: int | None, suspend: bool | None) -> dict | None:
    """The merge patch that sets only `workers`/`suspend` on an existing job (where its API keeps them); None when
    they already match."""
    patch: dict[str, Any] = {}
    if workers is not None and worker_replicas(existing) != workers:
        if worker_replicas(existing) is None:
            raise SubmitError(f"workers: job {ref(existing)} has no Worker replica spec to scale")
        patch = _merge(patch, _nested(api_for(existing).workers_path, workers))
    if suspend is not None and is_suspended(existing) != suspend:
        patch = _merge(patch, _nested(_suspend_path(existing), suspend))
    return patch or None


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def worker_replicas(job: dict) -> int | None:
    """The workers the job asks for; None when it has no worker replica spec at all."""
    path = api_for(job).workers_path
    if not isinstance(_get(job, path[:-1]), dict):
        return None
    value = _get(job, path)
    return int(value) if isinstance(value, int) else 0


def is_suspended(job: dict) -> bool:
    path = api_for(job).suspend_path
    return bool(_get(job, path)) if path else False


def queue_name(job: dict | None) -> str:
    """The Kueue LocalQueue the job was submitted to ("" when none)."""
    return ((job or {}).get("metadata") or {}).get("labels", {}).get(C.KUEUE_QUEUE_LABEL, "")


def queued(job: dict | None) -> bool:
    """Whether the job waits for Kueue: in a queue, suspended (Kueue suspends it until admitted) and not finished."""
    return bool(job and queue_name(job) and is_suspended(job) and job_phase(job) not in FINISHED)


def queue_state(workload: dict | None) -> str:
    """Why a queued job waits, from its Kueue Workload's conditions: None when the caller did not look for it, {} when
    it looked and found none (or could not read it)."""
    if workload is None:
        return "waiting for Kueue to admit it"
    if not workload:
        return "no Kueue Workload for it yet (is Kueue running with the kubeflow.org/mpijob integration?)"
    if (workload.get("spec") or {}).get("active") is False:
        return "its Workload is deactivated (spec.active: false)"
    conditions = {c.get("type"): c for c in (workload.get("status") or {}).get("conditions") or []}
    for ctype in ("Evicted", "QuotaReserved"):
        cond = conditions.get(ctype) or {}
        if cond.get("status") == ("True" if ctype == "Evicted" else "False"):
            return f"{ctype} {cond.get('reason', '')}: {cond.get('message', '')}".rstrip(": ")
    if (conditions.get("Admitted") or {}).get("status") == "True":
        return "admitted, starting"
    if (conditions.get("QuotaReserved") or {}).get("status") == "True":
        return "quota reserved, waiting for its admission checks"
    return "pending"


def ref(job: dict) -> str:
    meta = job.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


# ---- changed or not --------------------------------------------------------------------------------------------------


def comparable(obj: dict | None) -> dict | None:
    """The object without what the server changes on every write (managedFields, resourceVersion, status)."""
    if obj is None:
        return None
    result = copy.deepcopy(obj)
    result.pop("status", None)
    meta = result.get("metadata") or {}
    for key in _VOLATILE_META:
        meta.pop(key, None)
    return result


def differs(before: dict | None, after: dict | None) -> bool:
    return comparable(before) != comparable(after)


# ---- status summary --------------------------------------------------------------------------------------------------


def job_phase(job: dict) -> str:
    """The job's phase as the operator writes it to status.phase (the printer column), by the job's own API."""
    return api_for(job).phase(job.get("status"))


# A container that waits for one of these will not start by itself: the user must act (the image, the command, a
# ConfigMap or Secret it names). ContainerCreating and PodInitializing are the normal way to start.
STUCK_REASONS = (
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
)


def pod_waiting(pod: dict) -> str:
    """Why a pod of a job does not run, when it is a reason to act: not schedulable (the scheduler's message), a
    container stuck (its reason and message), or a worker that failed (how it ended: nothing restarts it); ""
    otherwise."""
    status = pod.get("status") or {}
    name = (pod.get("metadata") or {}).get("name", "")
    role = ((pod.get("metadata") or {}).get("labels") or {}).get(C.JOB_ROLE_LABEL)
    if status.get("phase") == "Failed" and role == C.ROLE_WORKER:
        return f"{name} failed: {launcher_exit(pod, None)}"
    if status.get("phase") not in (None, "Pending", "Running"):
        return ""
    if role == C.ROLE_LAUNCHER:
        # The launch gate gave up on workers that never answered (mpijob_operator/gate.py's last line, kept by the
        # kubelet as its termination message): the launcher runs, but mpirun will not reach them
        for c in status.get("initContainerStatuses") or []:
            ended = (c.get("state") or {}).get("terminated") or {}
            if c.get("name") == C.LAUNCH_GATE_CONTAINER and "did not answer" in (ended.get("message") or ""):
                return f"{name} {ended['message'].strip()}"
    scheduled = get_condition(status, "PodScheduled") or {}
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        return f"{name} unschedulable: {scheduled.get('message') or ''}".rstrip(": ")
    for c in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (c.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_REASONS:
            return f"{name} {waiting['reason']}: {waiting.get('message') or ''}".rstrip(": ")
    return ""


def waiting(pods: list[dict], most: int = 2) -> str:
    """Why the job's pods wait (pod_waiting), `most` of them, each reason once, with how many more there are."""
    found = [w for w in (pod_waiting(p) for p in sorted(pods, key=lambda p: p["metadata"]["name"])) if w]
    if not found:
        return ""
    shown: list[str] = []
    seen: set[str] = set()
    for w in found:
        key = w.split(" ", 1)[1]  # the same reason on every worker is said once
        if key not in seen and len(shown) < most:
            seen.add(key)
            shown.append(w)
    more = len(found) - len(shown)
    return truncate("; ".join(shown) + (f" (and {more} more pod{'s' * (more > 1)})" if more else ""))


def needs_pods(job: dict, while_running: bool = False) -> bool:
    """Whether a summary of `job` would say more with its pods: it has not finished, is not suspended or queued, and
    not every worker runs; with `while_running` (a wait for one job, which reads them every round), also while all
    run (a launch gate that gave up on its workers: pod_waiting)."""
    phase = job_phase(job)
    if phase in FINISHED or is_suspended(job):
        return False
    running = api_for(job).counts(job.get("status") or {})["workers_running"]
    return phase in (C.PENDING, C.CREATED) or running < (worker_replicas(job) or 0) or while_running


def summary(job: dict, now: datetime, workload: dict | None = None, pods: list[dict] | None = None) -> dict:
    """The status of one job as users ask about it: phase, workers running, why, and for how long; for a job queued
    by Kueue, why it waits (from its `workload`); with its `pods`, why they do not run when that needs the user."""
    status = job.get("status") or {}
    phase = job_phase(job)
    cond = get_condition(status, phase) or {}
    meta = job.get("metadata") or {}
    # since submission: startTime is unset while pending and reset by a resume
    start = parse_time(meta.get("creationTimestamp")) or parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime")) if phase in FINISHED else None
    elapsed = int(((end or now) - start).total_seconds()) if start else 0
    result = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "phase": phase,
        "reason": cond.get("reason", ""),
        "message": cond.get("message", ""),
        "workers": worker_replicas(job) or 0,
        **api_for(job).counts(status),
        "suspended": is_suspended(job),
        "start_time": status.get("startTime"),
        "completion_time": status.get("completionTime"),
        "elapsed_seconds": max(elapsed, 0),
        "finished": phase in FINISHED,
        "queue": queue_name(job),
        "queued": queue_state(workload) if queued(job) else "",
        **restart_summary(status, phase in FINISHED),
        "waiting": waiting(pods) if pods and phase not in FINISHED else "",
    }
    result["progress"] = progress_line(result)
    return result


def restart_summary(status: dict, finished: bool) -> dict:
    """A failure policy's restarts: how many (the attempt), by cause, and while the world restarts, why (the
    Restarting condition, or on the APIs without one, Running False with a restart's reason)."""
    why = ""
    if not finished:
        for cond in status.get("conditions") or []:
            restart_reason = cond.get("reason") in (C.REASON_PROGRAM_FAILURE, C.REASON_DISRUPTION)
            if (cond.get("type") == C.RESTARTING and cond.get("status") == "True") or (
                cond.get("type") == C.RUNNING and cond.get("status") == "False" and restart_reason
            ):
                why = str(cond.get("message") or "")
    return {
        "restarts": restart_count(status),
        "restarts_by_cause": restarts(status),
        "restarting": why,
    }


def progress_line(s: dict) -> str:
    line = f"{s['namespace']}/{s['name']}: {s['phase']}, workers {s['workers_running']}/{s['workers']} running"
    if s["workers_failed"]:
        line += f", {s['workers_failed']} failed"
    if s.get("restarts"):
        causes = ", ".join(f"{k} {v}" for k, v in s["restarts_by_cause"].items() if v)
        line += f", restarts {s['restarts']}" + (f" ({causes})" if causes else "")
    line += f", {s['elapsed_seconds']}s elapsed"
    if s.get("restarting"):
        line += f" (restarting: {s['restarting']})"
    elif s["queued"]:
        line += f" (queued by Kueue in LocalQueue {s['queue']}: {s['queued']})"
    elif s["phase"] in (C.FAILED, *SUSPENDED) or (s["phase"] == C.CREATED and s["reason"] != C.REASON_CREATED):
        line += f" ({s['reason']}: {s['message']})"
    elif s.get("waiting"):
        line += f" (waiting: {s['waiting']})"
    return line


def wait_target(wait_for: str | None, job: dict | None) -> str:
    """What a wait waits for: `wait_for`, else Suspended for a suspended job (it would never finish), else Succeeded
    (also for a job in a Kueue queue: Kueue suspends it until it admits it)."""
    if wait_for:
        return wait_for
    return C.SUSPENDED if job is not None and is_suspended(job) and not queue_name(job) else C.SUCCEEDED


def reached(job: dict, wait_for: str) -> bool:
    """THE wait predicate (the mpijob module's wait, the mpijob_wait action, submit.yml): whether a job waited for
    to be `wait_for` (Succeeded: finished either way; Running: running or finished; Suspended) got there."""
    if wait_for not in WAIT_TARGETS:
        raise SubmitError(f"wait_for: must be one of {', '.join(WAIT_TARGETS)}, got {wait_for!r}")
    return job_phase(job) in WAIT_TARGETS[wait_for]


def unreachable(job: dict, wait_for: str) -> str | None:
    """Why a job can never become `wait_for` (a finished job is never suspended), so a wait ends at once; else None."""
    phase = job_phase(job)
    if phase in FINISHED and not reached(job, wait_for):
        return f"MPIJob {ref(job)} has finished ({phase}): it will never be {wait_for}"
    return None


# ---- launcher log ----------------------------------------------------------------------------------------------------


def newest_launcher_pod(pods: list[dict]) -> dict | None:
    """The launcher pod whose log tells how the job went: the newest one (earlier ones were retries)."""
    launchers = [
        p for p in pods if (p.get("metadata") or {}).get("labels", {}).get(C.JOB_ROLE_LABEL) == C.ROLE_LAUNCHER
    ]
    if not launchers:
        return None
    return max(launchers, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))


def launcher_exit(pod: dict, container: str | None) -> str:
    """How the launcher's MPI container ended ("Error, exit code 3"), or why the pod failed; "" while it runs."""
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        if container and cs.get("name") != container:
            continue
        term = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if term:
            text = f"{term.get('reason') or 'Error'}, exit code {term.get('exitCode')}"
            return f"{text}: {term['message'].strip()}" if term.get("message") else text
        break
    if status.get("phase") == "Failed":
        return ": ".join(part for part in (status.get("reason") or "Failed", status.get("message") or "") if part)
    return ""


def tail(text: str, lines: int) -> list[str]:
    """The last `lines` lines of a log (all of them when lines <= 0)."""
    all_lines = text.splitlines()
    return all_lines if lines <= 0 else all_lines[-lines:]


def failure_message(s: dict, launcher: dict) -> str:
    """The task's message for a failed job: the condition, how the launcher ended, the log tail (or why none)."""
    msg = f"MPIJob {s['namespace']}/{s['name']} failed: {s['reason'] or 'Failed'}: {s['message'] or 'no message'}"
    if launcher.get("exit"):
        msg += f"\nlauncher pod {launcher['pod']}: {launcher['exit']}"
    log, log_note = launcher.get("log") or [], launcher.get("note") or ""
    if log:
        msg += f"\nlauncher log (last {len(log)} lines):\n" + "\n".join(log)
    elif log_note:
        msg += f"\n({log_note})"
    return msg
