# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""batch.test.bdap.com/v1 MPIJob (the kubebuilder MPI operator's): `numWorkers`, `launcherTemplate`,
`workerTemplate`, served through the shared children and planner (apis/__init__.py's contract).

parse: the object is read as the kubeflow.org/v2beta1 job it means (one launcher, `numWorkers` workers, the launcher
created once every worker is Ready, OpenMPI, one slot per worker, pods kept when the job ends) and validated by
kubeflow.parse, so no rule is written twice; every error is reported under this API's field names.

Status: the original operator writes none (its README lists "Add MPIJob Status" as to do). Ours is additive and small
(docs/apis.md): `phase` (Pending, Running, Succeeded, Failed), `readyWorkers`, `launcher` (the launcher pod's name,
for `kubectl logs`), `selector` (the workers' label selector, the scale subresource's), `conditions` (Created,
Running, Succeeded, Failed, Kubeflow's reasons), `startTime`, `completionTime`; it is computed by the kubeflow.org
stage and projected onto these fields.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from .. import constants as C
from .. import spec as _spec
from .. import status as S
from ..children import worker_selector
from ..errors import InvalidMPIJob
from . import Api, kubeflow

GROUP = "batch.test.bdap.com"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

NUM_WORKERS = "spec.numWorkers"
LAUNCHER_TEMPLATE = "spec.launcherTemplate"
WORKER_TEMPLATE = "spec.workerTemplate"
FAILURE_POLICY = f"spec.{C.FAILURE_POLICY}"  # ours (kubeflow.org's runPolicy.failurePolicy, at this API's top)
# Where kubeflow.parse names a field of the translated job -> the field the user wrote (longest prefix first).
_PATHS = (
    (f"spec.mpiReplicaSpecs.{C.LAUNCHER}.restartPolicy", f"{LAUNCHER_TEMPLATE}.spec.restartPolicy"),
    (f"spec.mpiReplicaSpecs.{C.WORKER}.restartPolicy", f"{WORKER_TEMPLATE}.spec.restartPolicy"),
    (f"spec.mpiReplicaSpecs.{C.LAUNCHER}.template", LAUNCHER_TEMPLATE),
    (f"spec.mpiReplicaSpecs.{C.WORKER}.template", WORKER_TEMPLATE),
    (f"spec.mpiReplicaSpecs.{C.WORKER}.replicas", NUM_WORKERS),
    (f"spec.runPolicy.{C.FAILURE_POLICY}", FAILURE_POLICY),
)
# The conditions this API's status keeps (the job cannot be suspended, so no Suspended; Restarting is Running=False).
CONDITIONS = (C.CREATED, C.RUNNING, C.SUCCEEDED, C.FAILED)
PHASES = (C.PENDING, C.RUNNING, C.SUCCEEDED, C.FAILED)


def _restart_policy(template: dict, default: str) -> str:
    """The template's restartPolicy when a job's pod may have it (Never, OnFailure); else `default`.

    The original created bare pods from the templates, so an unset policy meant Always: a launcher that ran forever.
    """
    pod_spec = template.get("spec")
    policy = pod_spec.get("restartPolicy") if isinstance(pod_spec, dict) else None
    return policy if policy in C.RESTART_POLICIES else default


def _replica(template: Any, default_restart: str, replicas: Any) -> dict:
    if not isinstance(template, dict):
        return {"replicas": replicas, "template": template}
    restart = _restart_policy(template, default_restart)
    body = copy.deepcopy(template)
    if isinstance(body.get("spec"), dict):
        body["spec"].pop("restartPolicy", None)  # carried as the replica's policy: no "overridden" warning
    return {"replicas": replicas, "restartPolicy": restart, "template": body}


def as_kubeflow(obj: dict) -> dict:
    """The kubeflow.org/v2beta1 MPIJob that `obj` means (docs/apis.md lists each field's mapping)."""
    spec = obj.get("spec")
    spec = _spec.mapping(spec)
    launcher = _replica(spec.get("launcherTemplate"), "OnFailure", 1)
    worker = _replica(spec.get("workerTemplate"), "OnFailure", spec.get("numWorkers"))
    run_policy: dict = {"cleanPodPolicy": C.CLEAN_NONE}  # the original never deleted pods: the user deletes the job
    if spec.get(C.FAILURE_POLICY) is not None:
        run_policy[C.FAILURE_POLICY] = spec[C.FAILURE_POLICY]
    return {
        "apiVersion": C.API_VERSION,
        "kind": C.KIND,
        "metadata": obj.get("metadata"),
        "spec": {
            "slotsPerWorker": 1,
            "launcherCreationPolicy": C.WAIT_FOR_WORKERS_READY,
            "mpiImplementation": C.OPENMPI,
            "runPolicy": run_policy,
            "mpiReplicaSpecs": {C.LAUNCHER: launcher, C.WORKER: worker},
        },
    }


def _user_path(path: str) -> str:
    for ours, theirs in _PATHS:
        if path == ours or path.startswith(ours + "."):
            return theirs + path[len(ours) :]
    return path


def parse(obj: Any) -> _spec.MPIJob:
    """The model of a batch.test.bdap.com/v1 MPIJob; raises InvalidMPIJob naming this API's fields."""
    top = _spec.mapping(obj)
    errors: list[_spec.FieldError] = []
    if top.get("apiVersion") != API_VERSION:
        errors.append(
            _spec.FieldError(
                "apiVersion", f"unsupported value {top.get('apiVersion')!r}: supported values: {API_VERSION}"
            )
        )
    spec = top.get("spec")
    if not isinstance(spec, dict):
        errors.append(_spec.FieldError("spec", "required"))
        raise InvalidMPIJob(errors)
    for path, key in (
        (NUM_WORKERS, "numWorkers"),
        (LAUNCHER_TEMPLATE, "launcherTemplate"),
        (WORKER_TEMPLATE, "workerTemplate"),
    ):
        if spec.get(key) is None:
            errors.append(_spec.FieldError(path, "required"))
    try:
        job = kubeflow.parse(as_kubeflow(top))
    except InvalidMPIJob as exc:
        reported = {e.path for e in errors}
        errors += [
            _spec.FieldError(_user_path(e.path), e.message) for e in exc.errors if _user_path(e.path) not in reported
        ]
    if errors:
        raise InvalidMPIJob(errors)
    # The children's controller reference names this API: deleting the job deletes them (garbage collector). The
    # launcher starts MPI on the workers with `kubectl exec`, as the original did: its workers need no sshd.
    return dataclasses.replace(
        job,
        api_version=API_VERSION,
        owner_api_version=API_VERSION,
        roll_workers=True,
        launcher_pod=True,
        launch_agent=C.LAUNCH_KUBEXEC,
    )


def job_phase(status: dict | None) -> str:
    """Failed, Succeeded, Running or Pending, from the conditions."""
    for ctype in (C.FAILED, C.SUCCEEDED, C.RUNNING):
        if S.is_true(status or {}, ctype):
            return ctype
    return C.PENDING


def with_phase(status: dict) -> dict:
    phase = job_phase(status)
    return status if status.get("phase") == phase else {**status, "phase": phase}


def _project(full: dict, launcher: str | None = None, ready: int | None = None, selector: str | None = None) -> dict:
    """This API's status out of the kubeflow.org stage's."""
    out: dict = {}
    conditions = [c for c in full.get("conditions") or [] if c.get("type") in CONDITIONS]
    if conditions:
        out["conditions"] = conditions
    for key in ("startTime", "completionTime", "launcher", "readyWorkers", "selector", "restartCount", "restarts"):
        if full.get(key) is not None:
            out[key] = full[key]
    if launcher is not None:
        out["launcher"] = launcher
    if ready is not None:
        out["readyWorkers"] = ready
    if selector is not None:
        out["selector"] = selector
    return with_phase(out)


def _launcher_pod(seen: S.Observed) -> str | None:
    """The newest launcher pod's name: what `kubectl logs` takes."""
    if not seen.launcher_pods:
        return None
    newest = max(
        seen.launcher_pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"])
    )
    return newest["metadata"]["name"]


def live_status(job: _spec.MPIJob, old: dict, seen: S.Observed, now: str, events: list[S.Event]) -> dict:
    full = kubeflow.live_status(job, old, seen, now, events)
    return _project(full, _launcher_pod(seen), S.ready_workers(seen.workers), worker_selector(job))


def cleaned_status(job: _spec.MPIJob, status: dict) -> dict:
    return {**status, "readyWorkers": 0} if status.get("readyWorkers") else status


def invalid_status(old: dict, message: str, now: str, events: list[S.Event]) -> dict:
    return _project(kubeflow.invalid_status(old, message, now, events))


def restarting(status: dict, reason: str, message: str, now: str) -> None:
    """This API has no Restarting condition: Running is False while the world restarts, saying why."""
    if not S.set_condition(status, C.RUNNING, "False", reason, message, now):
        S.update_message(status, C.RUNNING, message, now)  # another restart before it ran again
    status["phase"] = job_phase(status)


def given_up(status: dict, reason: str, message: str, now: str) -> None:
    S.set_condition(status, C.FAILED, "True", reason, message, now)
    status.setdefault("completionTime", now)
    status["phase"] = job_phase(status)


def counts(status: dict) -> dict:
    """Ready workers, and the launcher pod while the job runs (this API's status has no per-role counts)."""
    phase = status.get("phase")
    return {
        "workers_running": int(status.get("readyWorkers") or 0),
        "workers_failed": 0,
        "launcher_active": 1 if phase == "Running" else 0,
        "launcher_failed": 1 if phase == "Failed" else 0,
    }


API = Api(
    name="bdap",
    group=GROUP,
    versions=(VERSION,),
    kind=C.KIND,
    original=f"the kubebuilder MPI operator of {GROUP}",
    phases=PHASES,
    suspended_phases=(),
    condition_types=CONDITIONS,
    columns=(
        ("Workers", ".spec.numWorkers"),
        ("Ready", ".status.readyWorkers"),
        ("Phase", ".status.phase"),
        ("Restarts", ".status.restartCount"),
    ),
    parse=parse,
    live_status=live_status,
    cleaned_status=cleaned_status,
    invalid_status=invalid_status,
    finished=kubeflow.API.finished,  # the same conditions decide
    settled=kubeflow.API.settled,
    phase=job_phase,
    with_phase=with_phase,
    workers_path=("spec", "numWorkers"),
    template_paths=(LAUNCHER_TEMPLATE, WORKER_TEMPLATE),
    suspend_path=None,  # the original has no way to suspend a job
    counts=counts,
    restarting=restarting,
    given_up=given_up,
    failure_policy_path=("spec", C.FAILURE_POLICY),
    launcher_rbac=True,
)
