# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""kubeflow.org MPIJob (v2beta1, v1): the reference API. Its parse (Kubeflow's `SetDefaults_MPIJob` and
`ValidateMPIJob`: every error names its field, e.g. `spec.mpiReplicaSpecs.Worker.replicas: must be >= 1`) and its
status stage (Kubeflow's `updateMPIJobStatus`, with our fixes): conditions, replicaStatuses, startTime,
completionTime, and `status.phase` (ours, additive: the one word the printer column State shows, from the
conditions). The shared model, the condition mechanics and the children are the core's (spec.py, status.py,
children.py); the kubebuilder operator's API (bdap.py) reuses this parse and status stage on the job it translates to.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import constants as C
from .. import status as S
from ..children import worker_selector
from ..errors import InvalidMPIJob
from ..failure_policy import read_failure_policy
from ..quantity import parse_quantity
from ..spec import (
    MPIJob,
    Reader,
    ReplicaSpec,
    RunPolicy,
    SchedulingPolicy,
    check_hostnames,
    mapping,
    pod_template,
    read_metadata,
)
from . import Api


def parse(obj: Any) -> MPIJob:
    """The MPIJob model of a kubeflow.org/v2beta1 or v1 object, defaulted; raises InvalidMPIJob."""
    r = Reader()
    top = r.obj(obj, "<object>", required=True) or {}
    api_version = top.get("apiVersion") or C.API_VERSION
    if api_version not in C.ACCEPTED_API_VERSIONS:
        r.fail(
            "apiVersion", f"unsupported value {api_version!r}: supported values: {', '.join(C.ACCEPTED_API_VERSIONS)}"
        )
    legacy_v1 = api_version == f"{C.GROUP}/v1"
    meta, name, namespace, annotations = read_metadata(r, top)
    spec = r.obj(top.get("spec"), "spec", required=True) or {}

    slots = r.int(spec.get("slotsPerWorker"), "spec.slotsPerWorker", minimum=0)
    launcher_as_worker = r.bool(spec.get("runLauncherAsWorker"), "spec.runLauncherAsWorker") or False
    ssh_path = r.str(spec.get("sshAuthMountPath"), "spec.sshAuthMountPath")
    if ssh_path is not None and ssh_path == "" and "sshAuthMountPath" in spec:
        ssh_path = None  # empty means unset, as in Kubeflow's defaulting
    creation = r.choice(
        spec.get("launcherCreationPolicy"), "spec.launcherCreationPolicy", C.LAUNCHER_CREATION_POLICIES, C.AT_STARTUP
    )
    impl = r.choice(spec.get("mpiImplementation"), "spec.mpiImplementation", C.MPI_IMPLEMENTATIONS, C.OPENMPI)
    main_container = r.str(spec.get("mainContainer"), "spec.mainContainer") or None

    run_policy = _run_policy(r, spec)
    launcher, worker = _replica_specs(r, spec.get("mpiReplicaSpecs"), legacy_v1)

    if name and launcher is not None:
        check_hostnames(r, name, worker.replicas if worker else 0)
    if r.errors:
        raise InvalidMPIJob(r.errors)
    if launcher is None:
        raise AssertionError("a valid MPIJob has a launcher")
    return MPIJob(
        api_version=api_version,
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        annotations=dict(annotations),
        slots_per_worker=1 if slots is None else slots,
        run_launcher_as_worker=launcher_as_worker,
        ssh_auth_mount_path=ssh_path or C.ROOT_SSH_PATH,
        launcher_creation_policy=creation,
        mpi_implementation=impl,
        run_policy=run_policy,
        launcher=launcher,
        worker=worker,
        main_container=main_container,
    )


def _run_policy(r: Reader, spec: dict) -> RunPolicy:
    rp = r.obj(spec.get("runPolicy"), "spec.runPolicy") or {}
    # runPolicy.cleanPodPolicy wins over the legacy v1 top-level field.
    if rp.get("cleanPodPolicy") is not None:
        clean = r.choice(rp.get("cleanPodPolicy"), "spec.runPolicy.cleanPodPolicy", C.CLEAN_POD_POLICIES, C.CLEAN_NONE)
    else:
        clean = r.choice(spec.get("cleanPodPolicy"), "spec.cleanPodPolicy", C.CLEAN_POD_POLICIES, C.CLEAN_NONE)
    managed_by = r.str(rp.get("managedBy"), "spec.runPolicy.managedBy")
    if managed_by is not None and managed_by not in C.MANAGED_BY_VALUES:
        r.fail(
            "spec.runPolicy.managedBy",
            f"unsupported value {managed_by!r}: supported values: {', '.join(C.MANAGED_BY_VALUES)}",
        )
    failure_policy = read_failure_policy(r, rp.get(C.FAILURE_POLICY), f"spec.runPolicy.{C.FAILURE_POLICY}")
    if failure_policy is not None and rp.get("backoffLimit") is not None:
        r.fail(
            "spec.runPolicy.backoffLimit",
            f"must not be set with spec.runPolicy.{C.FAILURE_POLICY}: the operator restarts the job, and "
            "failurePolicy.maxRestarts counts the launcher's failures",
        )
    return RunPolicy(
        clean_pod_policy=clean,
        ttl_seconds_after_finished=r.int(
            rp.get("ttlSecondsAfterFinished"), "spec.runPolicy.ttlSecondsAfterFinished", minimum=0
        ),
        active_deadline_seconds=r.int(
            rp.get("activeDeadlineSeconds"), "spec.runPolicy.activeDeadlineSeconds", minimum=0
        ),
        backoff_limit=r.int(rp.get("backoffLimit"), "spec.runPolicy.backoffLimit", minimum=0),
        scheduling_policy=_scheduling_policy(r, rp.get("schedulingPolicy")),
        suspend=r.bool(rp.get("suspend"), "spec.runPolicy.suspend") or False,
        managed_by=managed_by,
        failure_policy=failure_policy,
    )


def _scheduling_policy(r: Reader, value: Any) -> SchedulingPolicy | None:
    path = "spec.runPolicy.schedulingPolicy"
    sp = r.obj(value, path)
    if sp is None:
        return None
    min_resources = r.obj(sp.get("minResources"), f"{path}.minResources")
    if min_resources is not None:
        for key, quantity in min_resources.items():
            try:
                parse_quantity(quantity)
            except ValueError as exc:
                r.fail(f"{path}.minResources.{key}", str(exc))
    return SchedulingPolicy(
        min_available=r.int(sp.get("minAvailable"), f"{path}.minAvailable", minimum=0),
        queue=r.str(sp.get("queue"), f"{path}.queue") or "",
        min_resources=dict(min_resources) if min_resources is not None else None,
        priority_class=r.str(sp.get("priorityClass"), f"{path}.priorityClass") or "",
        schedule_timeout_seconds=r.int(sp.get("scheduleTimeoutSeconds"), f"{path}.scheduleTimeoutSeconds", minimum=0),
    )


def _replica_specs(r: Reader, value: Any, legacy_v1: bool) -> tuple[ReplicaSpec | None, ReplicaSpec | None]:
    path = "spec.mpiReplicaSpecs"
    specs = r.obj(value, path, required=True)
    if specs is None:
        return None, None
    for key in specs:
        if key not in (C.LAUNCHER, C.WORKER):
            r.fail(f"{path}.{key}", f"unsupported replica type: supported values: {C.LAUNCHER}, {C.WORKER}")
    launcher = None
    if specs.get(C.LAUNCHER) is None:
        r.fail(f"{path}.{C.LAUNCHER}", "required")
    else:
        launcher = replica_spec(r, specs[C.LAUNCHER], f"{path}.{C.LAUNCHER}", 1, "OnFailure")
        if launcher is not None and launcher.replicas != 1:
            r.fail(f"{path}.{C.LAUNCHER}.replicas", f"must be 1, got {launcher.replicas}")
    worker = None
    if specs.get(C.WORKER) is not None:
        # v2beta1 defaults Worker replicas to 0, which validation then rejects; v1 defaulted them to 1.
        worker = replica_spec(r, specs[C.WORKER], f"{path}.{C.WORKER}", 1 if legacy_v1 else 0, "Never")
        if worker is not None and worker.replicas < 1:
            r.fail(f"{path}.{C.WORKER}.replicas", "must be >= 1")
    return launcher, worker


def replica_spec(r: Reader, value: Any, path: str, default_replicas: int, default_restart: str) -> ReplicaSpec | None:
    """A replica spec `{replicas, restartPolicy, template}` at `path`, its pod template checked."""
    rs = r.obj(value, path)
    if rs is None:
        return None
    replicas = r.int(rs.get("replicas"), f"{path}.replicas")
    restart = r.str(rs.get("restartPolicy"), f"{path}.restartPolicy") or default_restart
    if restart not in C.RESTART_POLICIES:
        r.fail(
            f"{path}.restartPolicy", f"unsupported value {restart!r}: supported values: {', '.join(C.RESTART_POLICIES)}"
        )
    template = pod_template(r, rs.get("template"), f"{path}.template")
    return ReplicaSpec(
        replicas=default_replicas if replicas is None else replicas,
        restart_policy=restart,
        template=copy.deepcopy(template),
    )


# Phases in the order they are checked: a finished job is finished whatever else its conditions say; the last
# condition (what Kubeflow's column shows) can be a False one, e.g. Running=False on a suspended job.
PHASES = (C.FAILED, C.SUCCEEDED, C.SUSPENDED, C.RESTARTING, C.RUNNING, C.CREATED)


def phase(status: dict | None) -> str:
    """Pending, Created, Running, Restarting, Suspended, Succeeded or Failed: the first phase whose condition is
    True, in PHASES order."""
    for phase in PHASES:
        if S.is_true(status or {}, phase):
            return phase
    return C.PENDING


def with_phase(status: dict) -> dict:
    """`status` with `phase` set from its conditions (the printer column reads it)."""
    current = phase(status)
    if status.get("phase") == current:
        return status
    return {**status, "phase": current}


def _counts(pods: list[dict], **extra: object) -> dict:
    """A replicaStatus with zero counts left out, as Go's omitempty does."""
    counts = {
        "active": sum(1 for p in pods if S.pod_phase(p) == "Running"),
        "succeeded": sum(1 for p in pods if S.pod_phase(p) == "Succeeded"),
        "failed": sum(1 for p in pods if S.pod_phase(p) == "Failed"),
    }
    return {**{k: v for k, v in counts.items() if v}, **extra}


def created(status: dict, job_ns: str, job_name: str, now: str, events: list[S.Event]) -> None:
    if not status.get("conditions"):
        msg = f"MPIJob {job_ns}/{job_name} is created."
        S.set_condition(status, C.CREATED, "True", C.REASON_CREATED, msg, now)
        events.append(S.Event("Normal", C.REASON_CREATED, msg))


def live_status(job: MPIJob, old: dict, seen: S.Observed, now: str, events: list[S.Event]) -> dict:
    """Kubeflow's updateMPIJobStatus for a job that is not finished, with our fixes."""
    status = copy.deepcopy(old)
    ref = f"{job.namespace}/{job.name}"
    created(status, job.namespace, job.name, now, events)
    S.remove_condition(status, C.FAILED, C.REASON_VALIDATION)  # the spec was fixed
    if not status.get("startTime") and not job.suspended:
        status["startTime"] = now
    if job.suspended:
        if S.set_condition(status, C.SUSPENDED, "True", C.REASON_SUSPENDED, "MPIJob suspended", now):
            events.append(S.Event("Normal", C.REASON_SUSPENDED, "MPIJob suspended"))
    elif S.get_condition(status, C.SUSPENDED) is not None and S.set_condition(
        status, C.SUSPENDED, "False", C.REASON_RESUMED, "MPIJob resumed", now
    ):
        events.append(S.Event("Normal", C.REASON_RESUMED, "MPIJob resumed"))
        status["startTime"] = now

    replicas = dict(status.get("replicaStatuses") or {})
    running_launchers = 0
    if seen.launcher is not None:
        running_launchers = sum(1 for p in seen.launcher_pods if S.pod_phase(p) == "Running")
        failed = int((seen.launcher.get("status") or {}).get("failed") or 0)
        launcher_status = {"failed": failed} if failed else {}
        complete = S.job_condition(seen.launcher, "Complete")
        failed_cond = S.job_condition(seen.launcher, "Failed")
        if complete is not None:
            launcher_status["succeeded"] = 1
            msg = f"MPIJob {ref} successfully completed."
            if not status.get("completionTime"):
                status["completionTime"] = (seen.launcher.get("status") or {}).get("completionTime") or now
            if S.set_condition(status, C.SUCCEEDED, "True", C.REASON_SUCCEEDED, msg, now):
                events.append(S.Event("Normal", C.REASON_SUCCEEDED, msg))
        elif failed_cond is not None:
            reason, msg = S.launcher_failure(ref, failed_cond, seen.launcher_pods)
            if not status.get("completionTime"):
                status["completionTime"] = now
            if S.set_condition(status, C.FAILED, "True", reason, msg, now):
                events.append(S.Event("Warning", reason, msg))
        elif running_launchers:
            launcher_status["active"] = running_launchers
        replicas[C.LAUNCHER] = launcher_status

    workers = seen.workers
    replicas[C.WORKER] = _counts(workers, selector=worker_selector(job))
    status["replicaStatuses"] = replicas
    evicted = [p for p in workers if S.pod_phase(p) == "Failed" and (p.get("status") or {}).get("reason") == "Evicted"]
    crashed = [p for p in workers if S.pod_phase(p) == "Failed" and p not in evicted]
    if evicted:
        msg = f"{len(evicted)}/{len(workers)} workers are evicted"
        if S.set_condition(status, C.FAILED, "True", C.REASON_EVICTED, msg, now):
            events.append(S.Event("Warning", C.REASON_EVICTED, msg))
        # Kubeflow leaves completionTime unset here, so cleanup never runs (kubeflow/mpi-operator#647).
        status.setdefault("completionTime", now)

    running = sum(1 for p in workers if S.pod_phase(p) == "Running")
    if job.suspended:
        S.set_condition(status, C.RUNNING, "False", C.REASON_SUSPENDED, f"MPIJob {ref} is suspended.", now)
    elif S.is_finished(status):
        if S.get_condition(status, C.RUNNING) is None:
            stamp = status.get("completionTime") or now
            status.setdefault("conditions", []).append(
                {
                    "type": C.RUNNING,
                    "status": "False",
                    "reason": C.REASON_RUNNING,
                    "message": f"MPIJob {ref} is finished but Running condition was never set.",
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                }
            )
    elif crashed:
        # Kubeflow only counts failed workers; say which and why (kubeflow/mpi-operator#90).
        msg = S.truncate(
            f"{len(crashed)}/{len(workers)} workers failed: " + ", ".join(S.failure_detail(p) for p in crashed)
        )
        cond = S.get_condition(status, C.RUNNING)
        if cond is not None and cond.get("status") == "False" and cond.get("reason") == C.REASON_WORKER_FAILED:
            changed = cond.get("message") != msg and S.update_message(status, C.RUNNING, msg, now)
        else:
            changed = S.set_condition(status, C.RUNNING, "False", C.REASON_WORKER_FAILED, msg, now)
        if changed:
            events.append(S.Event("Warning", C.REASON_WORKER_FAILED, msg))
    elif seen.launcher is not None and running_launchers >= 1 and running == len(workers):
        msg = f"MPIJob {ref} is running."
        if S.set_condition(status, C.RUNNING, "True", C.REASON_RUNNING, msg, now):
            events.append(S.Event("Normal", C.REASON_RUNNING, f"MPIJob {ref} is running"))
    return status


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


def invalid_status(old: dict, message: str, now: str, events: list[S.Event]) -> dict:
    """A malformed MPIJob: Failed with reason ValidationError, the message naming the fields."""
    status = copy.deepcopy(old)
    cond = S.get_condition(status, C.FAILED)
    if cond is None or cond.get("reason") != C.REASON_VALIDATION or cond.get("message") != message:
        if not S.set_condition(status, C.FAILED, "True", C.REASON_VALIDATION, message, now):
            S.update_message(status, C.FAILED, message, now)
        events.append(S.Event("Warning", C.REASON_VALIDATION, message))
    return with_phase(status)


def restarting(status: dict, reason: str, message: str, now: str) -> None:
    """The world restarts: Restarting (which turns Running off), the launcher's counts of the old attempt gone."""
    if not S.set_condition(status, C.RESTARTING, "True", reason, message, now):
        S.update_message(status, C.RESTARTING, message, now)  # another restart before it ran again
    replicas = dict(status.get("replicaStatuses") or {})
    if C.LAUNCHER in replicas:
        replicas[C.LAUNCHER] = {}
        status["replicaStatuses"] = replicas


def given_up(status: dict, reason: str, message: str, now: str) -> None:
    """Failed for good by the failure policy."""
    if S.is_true(status, C.RESTARTING):
        S.set_condition(status, C.RESTARTING, "False", reason, message, now)
    S.set_condition(status, C.FAILED, "True", reason, message, now)
    status.setdefault("completionTime", now)


def counts(status: dict) -> dict:
    """Pods by role and state, from replicaStatuses."""
    replicas = status.get("replicaStatuses") or {}
    worker, launcher = replicas.get(C.WORKER) or {}, replicas.get(C.LAUNCHER) or {}
    return {
        "workers_running": int(worker.get("active") or 0),
        "workers_failed": int(worker.get("failed") or 0),
        "launcher_active": int(launcher.get("active") or 0),
        "launcher_failed": int(launcher.get("failed") or 0),
    }


def progress_only(old: dict, new: dict) -> bool:
    """Only pods coming up changed: a replica's `active` count grew, and nothing else (no condition, no other count,
    no replica type new or gone) of a status written before."""
    if not old.get("conditions") or {k: v for k, v in old.items() if k != "replicaStatuses"} != {
        k: v for k, v in new.items() if k != "replicaStatuses"
    }:
        return False
    before, after = old.get("replicaStatuses") or {}, new.get("replicaStatuses") or {}
    if not isinstance(before, dict) or not isinstance(after, dict) or set(before) != set(after):
        return False
    for role, replica in after.items():
        was, now = dict(mapping(before[role])), dict(mapping(replica))
        counts = (now.pop("active", 0), was.pop("active", 0))
        if (
            not all(isinstance(n, int) and not isinstance(n, bool) for n in counts)
            or counts[0] < counts[1]
            or was != now
        ):
            return False
    return True


API = Api(
    name="kubeflow",
    group=C.GROUP,
    versions=(C.VERSION, C.LEGACY_VERSION),
    kind=C.KIND,
    original="the Kubeflow MPI operator",
    phases=(C.PENDING, *PHASES),
    suspended_phases=(C.SUSPENDED,),
    condition_types=C.CONDITION_TYPES,
    columns=(
        ("State", ".status.phase"),
        ("Workers", ".spec.mpiReplicaSpecs.Worker.replicas"),
        ("Restarts", ".status.restartCount"),
    ),
    short_names=("mpij", "mj"),
    categories=("all", "kubeflow"),
    parse=parse,
    live_status=live_status,
    cleaned_status=cleaned_status,
    invalid_status=invalid_status,
    finished=S.is_finished,
    settled=lambda status: S.is_finished(status) and bool(status.get("completionTime")),
    phase=phase,
    with_phase=with_phase,
    workers_path=("spec", "mpiReplicaSpecs", C.WORKER, "replicas"),
    suspend_path=("spec", "runPolicy", "suspend"),
    counts=counts,
    restarting=restarting,
    given_up=given_up,
    progress_only=progress_only,
)
