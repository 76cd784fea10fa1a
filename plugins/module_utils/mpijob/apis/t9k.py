# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""batch.tensorstack.dev/v1beta1 MPIJob, T9k's: its parse into the one model, and its entry in the API registry
(apis/__init__.py's contract). Its status stage, with the condition types, phases and replica types it names, is
t9k_status.py's.

The user writes the worker template and `worker.cmd`; the operator builds the rest (as T9k's documentation says):
- workers: the template with the `mpi-worker` container running `<ssh.sshdPath> -De` (its command and args are
  ignored, as T9k documents);
- the launcher: a copy of the worker template whose `mpi-worker` runs `<mpiHome>/bin/mpirun --hostfile <hostfile>`,
  one `--mca k v` per `mca` entry (sorted by key: the API server does not keep a map's order), `extraMPIArgs`, `cmd`;
  it is created once every worker is Ready (T9k: the launcher starts the processes when the workers are ready);
- `-N n` / `--npernode n` in `extraMPIArgs` is the hostfile's slots per worker (else 1), so that mpirun may start
  n processes on each host;
- `runPolicy.cleanUpWorkers`: the finished job's workers are deleted, the launcher (its logs are the outcome) stays;
- `runMode.debug`: the launcher runs `sleep inf`, the workers `<sshdPath> -D` (the doc's `/usr/bin/sshd -D`, with the
  sshd path this API already asks for), or each `replicaSpecs[].command`; `skipInitContainer` drops initContainers;
- `runMode.pause`: no replica at all (workers and the launcher Job deleted, none created); once a job was paused,
  the replicas made afterwards follow `resumeSpecs` (`command`, `args`, `skipInitContainer` per type);
- `scheduler.t9kScheduler`: there is no T9k Scheduler here. `queue` becomes the PodGroup's queue when the operator
  gang-schedules with Volcano; `priority` has no equivalent. A Warning event says so when the job is initialized.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import constants as C
from .. import status as S
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
from . import t9k_status as T
from .t9k_status import LAUNCHER, PAUSED, WORKER

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
MPI_CONTAINER = "mpi-worker"  # T9k: the worker template must have it; MPI runs in it
DEFAULT_SSHD = "/usr/sbin/sshd"
DEBUG_LAUNCHER_COMMAND = ("sleep", "inf")
NPERNODE_FLAGS = ("-N", "--npernode", "-npernode")


def _abs_path(r: Reader, value: Any, path: str) -> str | None:
    text = r.str(value, path)
    if text is not None and not text.startswith("/"):
        r.fail(path, f"must be an absolute path, got {text!r}")
        return None
    return text or None


def _replica_modes(r: Reader, value: Any, path: str, with_args: bool) -> dict[str, dict]:
    """runMode.debug.replicaSpecs / runMode.pause.resumeSpecs: by type, {skipInitContainer, command[, args]}."""
    if value is None:
        return {}
    if not isinstance(value, list):
        r.fail(path, f"must be a list, got {type(value).__name__}")
        return {}
    modes: dict[str, dict] = {}
    for i, item in enumerate(value):
        ipath = f"{path}[{i}]"
        entry = r.obj(item, ipath, required=True)
        if entry is None:
            continue
        kind = r.str(entry.get("type"), f"{ipath}.type")
        if kind not in (LAUNCHER, WORKER):
            r.fail(f"{ipath}.type", f"unsupported value {kind!r}: supported values: {LAUNCHER}, {WORKER}")
            continue
        if kind in modes:
            r.fail(f"{ipath}.type", f"duplicate value {kind!r}")
            continue
        mode = {
            "skipInitContainer": r.bool(entry.get("skipInitContainer"), f"{ipath}.skipInitContainer") or False,
            "command": r.strings(entry.get("command"), f"{ipath}.command") or None,
        }
        if with_args:
            mode["args"] = r.strings(entry.get("args"), f"{ipath}.args") or None
        modes[kind] = mode
    return modes


def _enabled(r: Reader, run_mode: dict, name: str, list_key: str, with_args: bool) -> tuple[bool, dict[str, dict]]:
    path = f"spec.runMode.{name}"
    mode = r.obj(run_mode.get(name), path) or {}
    enabled = r.bool(mode.get("enabled"), f"{path}.enabled") or False
    return enabled, _replica_modes(r, mode.get(list_key), f"{path}.{list_key}", with_args)


def _mpi_container(pod_spec: dict) -> dict:
    return next(c for c in pod_spec["containers"] if isinstance(c, dict) and c.get("name") == MPI_CONTAINER)


def _template(template: dict, command: list[str], args: list[str] | None, skip_init: bool) -> dict:
    """A copy of the worker template whose mpi-worker container runs `command args`."""
    out = copy.deepcopy(template)
    pod_spec = out["spec"]
    pod_spec.pop("restartPolicy", None)  # the replica's, set by the children
    if skip_init:
        pod_spec.pop("initContainers", None)
    container = _mpi_container(pod_spec)
    container["command"] = list(command)
    container.pop("args", None)
    if args:
        container["args"] = list(args)
    return out


def _slots(extra: list[str]) -> int:
    """`-N n` (or --npernode n) of extraMPIArgs: the processes per host, the hostfile's slots; else 1."""
    for flag, value in zip(extra, extra[1:]):
        if flag in NPERNODE_FLAGS and value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def mpirun_command(mpi_home: str | None, mca: dict[str, str], extra: list[str], cmd: list[str]) -> list[str]:
    mpirun = f"{mpi_home.rstrip('/')}/bin/mpirun" if mpi_home else "mpirun"
    line = [mpirun, "--hostfile", C.HOSTFILE_PATH]
    for key in sorted(mca):
        line += ["--mca", key, mca[key]]
    return line + extra + cmd


def parse(obj: Any) -> MPIJob:
    """The MPIJob model of a batch.tensorstack.dev/v1beta1 object; raises InvalidMPIJob naming T9k's fields."""
    r = Reader()
    top = r.obj(obj, "<object>", required=True) or {}
    if top.get("apiVersion") not in (None, API_VERSION):
        r.fail("apiVersion", f"unsupported value {top.get('apiVersion')!r}: supported values: {API_VERSION}")
    meta, name, namespace, annotations = read_metadata(r, top)
    spec = r.obj(top.get("spec"), "spec", required=True) or {}

    worker = r.obj(spec.get("worker"), "spec.worker", required=True) or {}
    replicas = r.int(worker.get("replicas"), "spec.worker.replicas", minimum=1)
    extra = r.strings(worker.get("extraMPIArgs"), "spec.worker.extraMPIArgs") or []
    cmd = r.strings(worker.get("cmd"), "spec.worker.cmd")
    template = _worker_template(r, worker.get("template"))

    mca = r.obj(spec.get("mca"), "spec.mca") or {}
    for key, value in mca.items():
        r.str(value, f"spec.mca.{key}")
    mpi_home = _abs_path(r, spec.get("mpiHome"), "spec.mpiHome")
    ssh = r.obj(spec.get("ssh"), "spec.ssh") or {}
    sshd = _abs_path(r, ssh.get("sshdPath"), "spec.ssh.sshdPath") or DEFAULT_SSHD
    run_policy = r.obj(spec.get("runPolicy"), "spec.runPolicy") or {}
    clean_up = r.bool(run_policy.get("cleanUpWorkers"), "spec.runPolicy.cleanUpWorkers") or False
    failure_policy = read_failure_policy(r, run_policy.get(C.FAILURE_POLICY), f"spec.runPolicy.{C.FAILURE_POLICY}")
    scheduling, notices = _scheduler(r, spec.get("scheduler"))

    run_mode = r.obj(spec.get("runMode"), "spec.runMode") or {}
    debug, debug_specs = _enabled(r, run_mode, "debug", "replicaSpecs", with_args=False)
    pause, resume_specs = _enabled(r, run_mode, "pause", "resumeSpecs", with_args=True)
    if not cmd and not debug:
        r.fail(
            "spec.worker.cmd", "required: the program mpirun starts on the workers (unless runMode.debug is enabled)"
        )
    if name:
        check_hostnames(r, name, replicas or 1)
    if r.errors:
        raise InvalidMPIJob(r.errors)

    status = mapping(top.get("status"))
    # Once paused, the replicas made afterwards are the resumed ones (T9k: resumeSpecs apply on resume).
    resumed = not pause and S.get_condition(status, PAUSED) is not None
    commands = {
        LAUNCHER: (mpirun_command(mpi_home, mca, extra, cmd or []), None),
        WORKER: ([sshd, "-De"], None),
    }
    skip = dict.fromkeys(commands, False)
    if debug:
        commands = {LAUNCHER: (list(DEBUG_LAUNCHER_COMMAND), None), WORKER: ([sshd, "-D"], None)}
        for kind, mode in debug_specs.items():
            commands[kind] = (mode["command"] or commands[kind][0], None)
            skip[kind] = mode["skipInitContainer"]
    elif resumed:
        for kind, mode in resume_specs.items():
            command, args = commands[kind]
            commands[kind] = (mode["command"] or command, mode["args"] or args)
            skip[kind] = mode["skipInitContainer"]
    restart = (template.get("spec") or {}).get("restartPolicy") or "Never"
    return MPIJob(
        api_version=API_VERSION,
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        annotations=dict(annotations),
        slots_per_worker=_slots(extra),
        run_launcher_as_worker=False,
        ssh_auth_mount_path=C.ROOT_SSH_PATH,
        launcher_creation_policy=C.WAIT_FOR_WORKERS_READY,
        mpi_implementation=C.OPENMPI,
        run_policy=RunPolicy(
            clean_pod_policy=C.CLEAN_WORKERS if clean_up else C.CLEAN_NONE,
            # T9k has no retry field: mpirun's first non-zero exit is the job's end, Failed ("The job exited with an
            # error code."); --enable-recovery/--max-restarts in extraMPIArgs are mpirun's own retries.
            backoff_limit=0,
            scheduling_policy=scheduling,
            suspend=pause,
            failure_policy=failure_policy,
        ),
        # Never: mpirun runs once (backoffLimit 0), and its failed pod stays with the log that says why.
        launcher=ReplicaSpec(1, "Never", _template(template, *commands[LAUNCHER], skip[LAUNCHER])),
        worker=ReplicaSpec(
            1 if replicas is None else replicas, restart, _template(template, *commands[WORKER], skip[WORKER])
        ),
        main_container=MPI_CONTAINER,
        owner_api_version=API_VERSION,
        pause_deletes_launcher=True,
        notices=notices,
    )


def _worker_template(r: Reader, value: Any) -> dict:
    path = "spec.worker.template"
    template = pod_template(r, value, path)
    pod_spec = mapping(template.get("spec"))
    restart = r.str(pod_spec.get("restartPolicy"), f"{path}.spec.restartPolicy")
    if restart is not None and restart not in C.RESTART_POLICIES:
        r.fail(
            f"{path}.spec.restartPolicy",
            f"unsupported value {restart!r}: supported values: {', '.join(C.RESTART_POLICIES)}",
        )
    if pod_spec.get("initContainers") is not None and not isinstance(pod_spec["initContainers"], list):
        r.fail(f"{path}.spec.initContainers", "must be a list")
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return template
    for i, container in enumerate(containers):
        if isinstance(container, dict):
            _resources(r, container.get("resources"), f"{path}.spec.containers[{i}].resources")
    if not any(isinstance(c, dict) and c.get("name") == MPI_CONTAINER for c in containers):
        r.fail(f"{path}.spec.containers", f"must have a container named {MPI_CONTAINER} (MPI runs in it)")
    return template


def _resources(r: Reader, value: Any, path: str) -> None:
    """Requests and limits are quantities: the PodGroup's minResources adds them up."""
    resources = r.obj(value, path) or {}
    for key in ("limits", "requests"):
        for name, quantity in (r.obj(resources.get(key), f"{path}.{key}") or {}).items():
            try:
                parse_quantity(quantity)
            except ValueError as exc:
                r.fail(f"{path}.{key}.{name}", str(exc))


def _scheduler(r: Reader, value: Any) -> tuple[SchedulingPolicy | None, tuple[str, ...]]:
    scheduler = r.obj(value, "spec.scheduler") or {}
    t9k = r.obj(scheduler.get("t9kScheduler"), "spec.scheduler.t9kScheduler")
    if t9k is None:
        return None, ()
    queue = r.str(t9k.get("queue"), "spec.scheduler.t9kScheduler.queue") or ""
    priority = r.int(t9k.get("priority"), "spec.scheduler.t9kScheduler.priority")
    notice = (
        "spec.scheduler.t9kScheduler: there is no T9k Scheduler here: the pods use the operator's scheduler; "
        f"queue {queue!r} is the PodGroup's queue when the operator gang-schedules with Volcano"
        + (f"; priority {priority} has no equivalent and is not applied" if priority is not None else "")
    )
    return SchedulingPolicy(queue=queue), (notice,)


API = Api(
    name="t9k",
    group=GROUP,
    versions=(VERSION,),
    kind=C.KIND,
    original="the T9k MPI operator",
    phases=T.PHASES,
    suspended_phases=(PAUSED,),
    condition_types=T.CONDITION_TYPES,
    columns=(("Phase", ".status.phase"), ("Workers", ".spec.worker.replicas"), ("Restarts", ".status.restartCount")),
    categories=("all", "t9k"),
    parse=parse,
    live_status=T.live_status,
    cleaned_status=T.cleaned_status,
    invalid_status=T.invalid_status,
    finished=T.finished,
    settled=T.settled,
    phase=T.phase,
    with_phase=T.with_phase,
    workers_path=("spec", "worker", "replicas"),
    template_paths=("spec.worker.template", "spec.worker.template"),  # the launcher is a copy of the worker
    suspend_path=("spec", "runMode", "pause", "enabled"),
    counts=T.counts,
    restarting=T.restarting,
    given_up=T.given_up,
)
