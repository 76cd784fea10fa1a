"""Parse, default and validate a kubeflow.org MPIJob (v2beta1 or v1) into one immutable model.

Defaults and validation follow the Kubeflow operator (`SetDefaults_MPIJob`, `ValidateMPIJob`); every error carries
the path of the field it is about, e.g. `spec.mpiReplicaSpecs.Worker.replicas: must be >= 1`.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from . import constants as C
from .errors import InvalidMPIJob
from .quantity import parse_quantity

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class ReplicaSpec:
    replicas: int
    restart_policy: str
    # The pod template as the user wrote it; builders deep-copy it, nothing mutates it.
    template: dict = field(repr=False)

    @property
    def template_restart_policy(self) -> str | None:
        return (self.template.get("spec") or {}).get("restartPolicy") or None


@dataclass(frozen=True)
class SchedulingPolicy:
    min_available: int | None = None
    queue: str = ""
    min_resources: dict | None = None
    priority_class: str = ""
    schedule_timeout_seconds: int | None = None


@dataclass(frozen=True)
class RunPolicy:
    clean_pod_policy: str = C.CLEAN_NONE
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool = False
    managed_by: str | None = None


@dataclass(frozen=True)
class MPIJob:
    api_version: str
    namespace: str
    name: str
    uid: str
    annotations: dict
    slots_per_worker: int
    run_launcher_as_worker: bool
    ssh_auth_mount_path: str
    launcher_creation_policy: str
    mpi_implementation: str
    run_policy: RunPolicy
    launcher: ReplicaSpec
    worker: ReplicaSpec | None
    main_container: str | None = None
    # What the other APIs (apis/) need of the shared children and plan; the defaults are kubeflow.org's.
    owner_api_version: str = C.API_VERSION  # the children's controller reference
    pause_deletes_launcher: bool = False  # suspended: no launcher Job at all (T9k pause), not a suspended one
    notices: tuple[str, ...] = ()  # fields accepted but not (fully) applied here: a Warning event each, once
    roll_workers: bool = False  # a changed worker template replaces the workers one by one (batch.test.bdap.com)
    launcher_pod: bool = False  # the launcher is a bare Pod <job>-launcher, not a Job (batch.test.bdap.com)
    launch_agent: str = C.LAUNCH_SSH  # C.LAUNCH_KUBEXEC: daemons started by `kubectl exec` (batch.test.bdap.com)

    @property
    def worker_replicas(self) -> int:
        return self.worker.replicas if self.worker else 0

    @property
    def suspended(self) -> bool:
        return self.run_policy.suspend

    @property
    def managed_elsewhere(self) -> bool:
        return self.run_policy.managed_by not in (None, C.MANAGED_BY_US)


class Reader:
    """Reads typed values out of untrusted JSON, collecting one FieldError per bad field (every API's parse uses it)."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def fail(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path, message))

    def obj(self, value: Any, path: str, required: bool = False) -> dict | None:
        if value is None:
            if required:
                self.fail(path, "required")
            return None
        if not isinstance(value, dict):
            self.fail(path, f"must be an object, got {type(value).__name__}")
            return None
        return value

    def int(self, value: Any, path: str, minimum: int | None = None) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                self.fail(path, f"must be an integer, got {value!r}")
                return None
        if minimum is not None and value < minimum:
            self.fail(path, f"must be >= {minimum}, got {value}")
            return None
        return value

    def bool(self, value: Any, path: str) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            self.fail(path, f"must be a boolean, got {value!r}")
            return None
        return value

    def str(self, value: Any, path: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(path, f"must be a string, got {value!r}")
            return None
        return value

    def strings(self, value: Any, path: str) -> list[str] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            self.fail(path, f"must be a list of strings, got {type(value).__name__}")
            return None
        bad = [i for i, item in enumerate(value) if not isinstance(item, str)]
        for i in bad:
            self.fail(f"{path}[{i}]", f"must be a string, got {value[i]!r}")
        return None if bad else list(value)

    def choice(self, value: Any, path: str, choices: tuple[str, ...], default: str) -> str:
        text = self.str(value, path)
        if text is None or text == "":
            return default
        if text not in choices:
            self.fail(path, f"unsupported value {text!r}: supported values: {', '.join(choices)}")
            return default
        return text


def parse(obj: Any) -> MPIJob:
    """The MPIJob model of a kubeflow.org/v2beta1 or v1 object, defaulted; raises InvalidMPIJob."""
    r = Reader()
    top = r.obj(obj, "<object>", required=True) or {}
    api_version = top.get("apiVersion") or C.API_VERSION
    if api_version not in C.ACCEPTED_API_VERSIONS:
        r.fail("apiVersion", f"unsupported value {api_version!r}: supported values: {', '.join(C.ACCEPTED_API_VERSIONS)}")
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


def read_metadata(r: Reader, top: dict) -> tuple[dict, str, str, dict]:
    """(metadata, name, namespace, annotations) of any API's object."""
    meta = r.obj(top.get("metadata"), "metadata", required=True) or {}
    name = r.str(meta.get("name"), "metadata.name") or ""
    if not name:
        r.fail("metadata.name", "required")
    namespace = r.str(meta.get("namespace"), "metadata.namespace") or "default"
    annotations = r.obj(meta.get("annotations"), "metadata.annotations") or {}
    return meta, name, namespace, annotations


def check_hostnames(r: Reader, name: str, worker_replicas: int) -> None:
    """Kubeflow: the highest worker hostname must be a DNS-1035 label."""
    replicas = worker_replicas if worker_replicas > 0 else 1
    hostname = f"{name}{C.WORKER_SUFFIX}-{replicas - 1}"
    if len(hostname) > 63 or not _DNS1035.match(hostname):
        r.fail(
            "metadata.name",
            f"will not be able to create pod and service with invalid DNS label {hostname!r}: "
            "must start with a letter, contain only lowercase letters, digits and '-', and be at most 63 characters",
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
    return RunPolicy(
        clean_pod_policy=clean,
        ttl_seconds_after_finished=r.int(
            rp.get("ttlSecondsAfterFinished"), "spec.runPolicy.ttlSecondsAfterFinished", minimum=0
        ),
        active_deadline_seconds=r.int(rp.get("activeDeadlineSeconds"), "spec.runPolicy.activeDeadlineSeconds", minimum=0),
        backoff_limit=r.int(rp.get("backoffLimit"), "spec.runPolicy.backoffLimit", minimum=0),
        scheduling_policy=_scheduling_policy(r, rp.get("schedulingPolicy")),
        suspend=r.bool(rp.get("suspend"), "spec.runPolicy.suspend") or False,
        managed_by=managed_by,
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
        r.fail(f"{path}.restartPolicy", f"unsupported value {restart!r}: supported values: {', '.join(C.RESTART_POLICIES)}")
    template = pod_template(r, rs.get("template"), f"{path}.template")
    return ReplicaSpec(
        replicas=default_replicas if replicas is None else replicas,
        restart_policy=restart,
        template=copy.deepcopy(template),
    )


def pod_template(r: Reader, value: Any, path: str) -> dict:
    """The pod template at `path`, checked as far as the children read it ({} when absent or not an object)."""
    template = r.obj(value, path, required=True) or {}
    tmeta = r.obj(template.get("metadata"), f"{path}.metadata") or {}
    r.obj(tmeta.get("labels"), f"{path}.metadata.labels")
    r.obj(tmeta.get("annotations"), f"{path}.metadata.annotations")
    pod_spec = r.obj(template.get("spec"), f"{path}.spec", required=bool(template)) or {}
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        r.fail(f"{path}.spec.containers", "must define at least one container")
    else:
        for i, container in enumerate(containers):
            cpath = f"{path}.spec.containers[{i}]"
            if r.obj(container, cpath, required=True) is None:
                continue
            for key in ("env", "volumeMounts"):
                if container.get(key) is not None and not isinstance(container[key], list):
                    r.fail(f"{cpath}.{key}", "must be a list")
    for key in ("volumes",):
        if pod_spec.get(key) is not None and not isinstance(pod_spec[key], list):
            r.fail(f"{path}.spec.{key}", "must be a list")
    dns = r.obj(pod_spec.get("dnsConfig"), f"{path}.spec.dnsConfig")
    if dns and dns.get("searches") is not None and not isinstance(dns["searches"], list):
        r.fail(f"{path}.spec.dnsConfig.searches", "must be a list")
    return template
