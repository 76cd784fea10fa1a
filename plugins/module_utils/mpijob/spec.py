# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The one immutable model every MPIJob API is parsed into (MPIJob, its replica and run policies), and what every
API's parse reads untrusted JSON with: Reader (one FieldError per bad field, named by its path in the user's API),
metadata, the hostname rule and the pod template check. Each API's parse is in its module under apis/.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field
from typing import Any

from . import constants as C

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


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
class ExitCodes:
    """A rule's onExitCodes: the exit codes of the pod's containers (or of the one named) In or NotIn `values`."""

    operator: str
    values: tuple[int, ...]
    container_name: str | None = None


@dataclass(frozen=True)
class FailureRule:
    """One rule of a failure policy, as a Job's podFailurePolicy rule: its action (C.RULE_ACTIONS) when a failed pod
    matches onExitCodes, or has one of onPodConditions ((type, status) pairs)."""

    action: str
    on_exit_codes: ExitCodes | None = None
    on_pod_conditions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class FailurePolicy:
    """The opt-in failure policy (failure_policy.py parses it, restart.py applies it): the operator restarts the whole
    world, up to max_restarts times for program failures and max_disruption_restarts times for disruptions."""

    max_restarts: int = 0
    max_disruption_restarts: int = C.DEFAULT_MAX_DISRUPTION_RESTARTS
    node_lost_seconds: int = C.DEFAULT_NODE_LOST_SECONDS
    rules: tuple[FailureRule, ...] = ()
    worker_failure: str | None = None  # C.WORKER_FAILURE_SCOPES; None: by the job (elastic jobs replace the worker)


@dataclass(frozen=True)
class RunPolicy:
    clean_pod_policy: str = C.CLEAN_NONE
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool = False
    managed_by: str | None = None
    failure_policy: FailurePolicy | None = None


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
    roll_workers: bool = False  # a changed worker template replaces the workers one by one (apis/bdap.py)
    launcher_pod: bool = False  # the launcher is a bare Pod <job>-launcher, not a Job (apis/bdap.py)
    launch_agent: str = C.LAUNCH_SSH  # C.LAUNCH_KUBEXEC: daemons started by `kubectl exec` (apis/bdap.py)
    attempt: int = 0  # with a failure policy: the world's attempt (status.restartCount), set by the planner

    @property
    def worker_replicas(self) -> int:
        return self.worker.replicas if self.worker else 0

    @property
    def suspended(self) -> bool:
        return self.run_policy.suspend

    @property
    def managed_elsewhere(self) -> bool:
        return self.run_policy.managed_by not in (None, C.MANAGED_BY_US)

    @property
    def directives(self) -> Directives:
        """What the job asks of this operator through its annotations (valid: read_metadata checked them)."""
        return read_directives(Reader(), self.annotations)


@dataclass(frozen=True)
class Directives:
    """What a job asks of this operator beyond its API's fields, through annotations: the same on every API."""

    launch_gate: bool = True  # the launcher waits until every worker of the hostfile answers (gate.py)
    launch_gate_timeout: int = C.LAUNCH_GATE_TIMEOUT_S
    ssh_port: int | None = None  # the workers' sshd port, when the gate cannot tell it from the worker template
    slots_from_accelerators: bool = False  # slotsPerWorker is the workers' accelerator count (accelerators.py)
    hostfile_topology: tuple[str, ...] = ()  # node label keys the hostfile orders the workers by (children.hostfile)


def mapping(value: object) -> dict:
    """`value` when it is a JSON object, else an empty one: how a reader steps into a field it has not validated."""
    return value if isinstance(value, dict) else {}


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

    def strings(self, value: Any, path: builtins.str) -> list[builtins.str] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            self.fail(path, f"must be a list of strings, got {type(value).__name__}")
            return None
        bad = [i for i, item in enumerate(value) if not isinstance(item, str)]
        for i in bad:
            self.fail(f"{path}[{i}]", f"must be a string, got {value[i]!r}")
        return None if bad else list(value)

    def choice(
        self, value: Any, path: builtins.str, choices: tuple[builtins.str, ...], default: builtins.str
    ) -> builtins.str:
        text = self.str(value, path)
        if text is None or text == "":
            return default
        if text not in choices:
            self.fail(path, f"unsupported value {text!r}: supported values: {', '.join(choices)}")
            return default
        return text


def read_metadata(r: Reader, top: dict) -> tuple[dict, str, str, dict]:
    """(metadata, name, namespace, annotations) of any API's object."""
    meta = r.obj(top.get("metadata"), "metadata", required=True) or {}
    name = r.str(meta.get("name"), "metadata.name") or ""
    if not name:
        r.fail("metadata.name", "required")
    namespace = r.str(meta.get("namespace"), "metadata.namespace") or "default"
    annotations = r.obj(meta.get("annotations"), "metadata.annotations") or {}
    read_directives(r, annotations)
    return meta, name, namespace, annotations


def read_directives(r: Reader, annotations: dict) -> Directives:
    """The job's Directives from its annotations; a bad value fails naming the annotation."""

    def flag(key: str, default: bool) -> bool:
        value = annotations.get(key)
        if value is None:
            return default
        if value not in ("true", "false"):
            r.fail(f"metadata.annotations[{key}]", f'must be "true" or "false", got {value!r}')
            return default
        return value == "true"

    def number(key: str, low: int, high: int) -> int | None:
        value = annotations.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.isdigit() or not low <= int(value) <= high:
            r.fail(f"metadata.annotations[{key}]", f"must be an integer from {low} to {high}, got {value!r}")
            return None
        return int(value)

    def label_keys(key: str) -> tuple[str, ...]:
        value = annotations.get(key)
        if value is None:
            return ()
        keys = tuple(k.strip() for k in value.split(",")) if isinstance(value, str) else ()
        bad = [k for k in keys if not label_key(k)]
        if not keys or bad or len(keys) > C.HOSTFILE_TOPOLOGY_LEVELS:
            r.fail(
                f"metadata.annotations[{key}]",
                f"must be 1 to {C.HOSTFILE_TOPOLOGY_LEVELS} node label keys separated by commas, got {value!r}",
            )
            return ()
        return keys

    timeout = number(C.LAUNCH_GATE_TIMEOUT_ANNOTATION, 1, 86400)
    return Directives(
        launch_gate=flag(C.LAUNCH_GATE_ANNOTATION, True),
        launch_gate_timeout=C.LAUNCH_GATE_TIMEOUT_S if timeout is None else timeout,
        ssh_port=number(C.SSH_PORT_ANNOTATION, 1, 65535),
        slots_from_accelerators=flag(C.SLOTS_FROM_ACCELERATORS_ANNOTATION, False),
        hostfile_topology=label_keys(C.HOSTFILE_TOPOLOGY_ANNOTATION),
    )


_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def label_key(key: str) -> bool:
    """A Kubernetes label (or annotation) key: an optional DNS-1123 subdomain prefix and "/", then a name of at most 63
    characters (the annotation hostfile-topology's keys; objects.invalid_metadata, the modules' labels options)."""
    prefix, _sep, name = key.rpartition("/")
    if _sep and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return bool(_LABEL_NAME.match(name))


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
