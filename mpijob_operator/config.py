# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Command line of `python3 -m mpijob_operator` (the Kubeflow controller's flags, plus the loop's own).

Every flag is spelled `--flag` and, as Go's flag package (so Kubeflow's operator) accepts, `-flag` too, each with
`=value` or the value as the next argument; booleans take `-flag`, `-flag=false` or `--no-flag`."""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import types
import uuid
from dataclasses import dataclass, fields
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import in_cluster
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.accelerators import names
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import REGISTRY, by_group
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.record import parse_limits

from .leader import Timing

IN_CLUSTER_WORK_DIR = "/var/run/mpi-operator"
LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True)
class Flag:
    """The flag that sets a field of Config: `--name` and Go's `-name`, the field's name with `-` for `_`. Its value
    has the field's type (a bool is a switch: `-name`, `-name=false`, `--no-name`; a tuple is a comma-separated list);
    `env` names a variable whose value, when set, is the default; a None default is derived by parse()
    (health_port, kubeconfig, work_dir)."""

    help: str | None = None
    choices: tuple[str, ...] | None = None
    env: str = ""


@dataclass
class Config:
    """The operator's settings as parse() returns them, in the order `-help` lists their flags; a field annotated
    with a Flag is set by that flag."""

    namespace: Annotated[
        str, Flag('watched namespace; "" = all (default: $KUBEFLOW_NAMESPACE, else all)', env="KUBEFLOW_NAMESPACE")
    ] = ""
    gang_scheduling: Annotated[str, Flag('"volcano" or a scheduler-plugins scheduler name; "" = off')] = ""
    kube_api_qps: Annotated[
        float, Flag("client requests per second of this process (lists, watches, the Lease; not the runs)")
    ] = 20.0
    kube_api_burst: Annotated[int, Flag("client request burst")] = 40
    threadiness: Annotated[int, Flag("concurrent ansible-runner runs")] = 2
    max_batch: Annotated[int, Flag("most MPIJobs reconciled by one ansible-runner run")] = 50
    monitoring_port: Annotated[
        int, Flag("port of /metrics (and, unless --health-port differs, /healthz and /readyz); 0 = no /metrics")
    ] = 8080
    health_port: Annotated[int | None, Flag("port of /healthz and /readyz (default: the monitoring port); 0 = off")] = (
        None
    )
    lock_namespace: Annotated[str, Flag("namespace of the leader-election Lease")] = "mpi-operator"
    leader_elect: Annotated[bool, Flag("elect one active replica through a Lease (default: on; --no-leader-elect)")] = (
        True
    )
    leader_elect_lease_duration: Annotated[
        float, Flag("seconds a follower waits after the last renewal it saw before it takes the Lease")
    ] = Timing.lease_duration
    leader_elect_renew_deadline: Annotated[float, Flag("seconds the leader may fail to renew before it steps down")] = (
        Timing.renew_deadline
    )
    leader_elect_retry_period: Annotated[float, Flag("seconds between two tries to acquire or renew")] = (
        Timing.retry_period
    )
    log_level: Annotated[str, Flag(choices=LOG_LEVELS)] = "info"
    log_format: Annotated[str, Flag("logfmt text or JSON lines", choices=("text", "json"))] = "text"
    cluster_domain: Annotated[str, Flag("DNS suffix of hostfile entries (e.g. cluster.local)")] = ""
    kubeconfig: Annotated[
        str | None,
        Flag("kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)", env="KUBECONFIG"),
    ] = None
    work_dir: Annotated[
        str | None,
        Flag(f"ansible-runner private data dirs (default: {IN_CLUSTER_WORK_DIR} in-cluster, else a temp dir)"),
    ] = None
    runner_timeout: Annotated[int, Flag("seconds before a stuck run is killed")] = 300
    rotate_artifacts: Annotated[int, Flag("runner artifact dirs kept per runner slot")] = 3
    apis: Annotated[
        tuple[str, ...],
        Flag(
            "comma-separated MPIJob API groups to reconcile, of "
            + ", ".join(a.group for a in REGISTRY.values())
            + " (default: kubeflow.org)"
        ),
    ] = ("kubeflow.org",)
    warm_runs: Annotated[
        bool,
        Flag(
            "keep one ansible-runner run started ahead of need, serving the batches of every "
            "worker (default: on; --no-warm-runs: each batch in a run of its own)"
        ),
    ] = True
    warm_run_timeout: Annotated[int, Flag("seconds a warm run serves batches before it is replaced")] = 300
    plan_from_watch: Annotated[
        bool,
        Flag(
            "hand each warm run's batch its jobs' objects as the watches saw them, instead of the module reading "
            "them again (default: on; --no-plan-from-watch: every batch reads its jobs from the API server)"
        ),
    ] = True
    kubectl_delivery_image: Annotated[
        str,
        Flag(
            "image whose entrypoint copies kubectl into the directory it is given, for launchers that start MPI with "
            "kubectl exec ("
            + ", ".join(a.group for a in REGISTRY.values() if a.launcher_rbac)
            + '); "" = kubectl is in the launcher\'s image'
        ),
    ] = ""
    watch_timeout: Annotated[int, Flag("seconds a watch request stays open before it is resumed")] = 300
    launch_gate_image: Annotated[
        str,
        Flag(
            "the operator's own image, run by the init container that holds each launcher until its workers "
            'answer (python3 -m mpijob_operator.gate); "" = no launch gate'
        ),
    ] = ""
    record_lines: Annotated[
        int, Flag("lines of each pod's log the record of a job keeps (its ConfigMap <job>-record)")
    ] = C.RECORD_LINES
    record_pod_bytes: Annotated[str, Flag("bytes of each pod's log the record keeps at most (a quantity: 8Ki)")] = "8Ki"
    record_total_bytes: Annotated[
        str, Flag("bytes of a job's whole record at most (a quantity, 16Ki plus --record-pod-bytes to 900Ki)")
    ] = "64Ki"
    accelerators: Annotated[
        tuple[str, ...],
        Flag(
            "comma-separated extended resources (<domain>/<name>) besides nvidia.com/gpu whose count per worker the "
            "slots are checked against"
        ),
    ] = ()
    progress_every: Annotated[
        float,
        Flag(
            "seconds a warm run may hold back a status write that only counts pods coming up (and the workers' "
            "discover_hosts.sh with it), so that workers coming up one by one cost one write; 0 = at once"
        ),
    ] = 1.0
    identity: str = ""
    temporary_work_dir: bool = False  # made for this process: removed at exit


def reconcile_args(cfg: Config) -> dict[str, Any]:
    """The reconcile module's options that the flags set beyond those BatchRunner takes by name."""
    return {
        "launch_gate_image": cfg.launch_gate_image,
        "record_lines": cfg.record_lines,
        "record_pod_bytes": cfg.record_pod_bytes,
        "record_total_bytes": cfg.record_total_bytes,
        "accelerators": list(cfg.accelerators),
        "progress_every": cfg.progress_every,
    }


def _flags() -> list[tuple[str, type, Flag, Any]]:
    """Each flag's name, the type of its value (an optional field's: the type beside None), the Flag and its
    default."""
    hints = get_type_hints(Config, include_extras=True)
    out = []
    for f in fields(Config):
        hint = hints[f.name]
        flag = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Flag)), None)
        if flag is None:
            continue
        kind = get_args(hint)[0]
        if isinstance(kind, types.UnionType):
            kind = next(a for a in get_args(kind) if a is not type(None))
        out.append((f.name.replace("_", "-"), get_origin(kind) or kind, flag, f.default))
    return out


TRUE, FALSE = ("1", "t", "true", "yes", "on"), ("0", "f", "false", "no", "off")


def go_bool(value: str) -> bool:
    """A boolean flag's explicit value, as Go's strconv.ParseBool (plus yes/no) reads it."""
    v = value.strip().lower()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {value!r} (true or false)")


class GoFlags(argparse.ArgumentParser):
    """argparse with Go's spellings: `flag("name", ...)` registers both `-name` and `--name`."""

    def __init__(self, **kwargs: Any):
        # No abbreviations: Go has none, and with one-dash long flags a prefix would be ambiguous.
        super().__init__(add_help=False, allow_abbrev=False, **kwargs)
        self.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")

    def _get_option_tuples(self, option_string: str) -> list:
        # allow_abbrev=False covers only `--` prefixes; a one-dash `-names` would still match -namespace.
        return []

    def flag(self, name: str, **kwargs: Any) -> None:
        self.add_argument(f"-{name}", f"--{name}", **kwargs)

    def switch(self, name: str, default: bool, help: str | None) -> None:
        """A boolean: `-name`, `-name=true|false` (`--` alike) and `--no-name`."""
        dest = name.replace("-", "_")
        self.add_argument(
            f"-{name}",
            f"--{name}",
            dest=dest,
            nargs="?",
            const=True,
            default=default,
            type=go_bool,
            metavar="BOOL",
            help=help,
        )
        self.add_argument(f"-no-{name}", f"--no-{name}", dest=dest, action="store_false", help=argparse.SUPPRESS)


def parser() -> GoFlags:
    p = GoFlags(prog="python3 -m mpijob_operator", description="MPIJob operator (kubeflow.org, T9k and bdap MPIJobs)")
    for name, kind, flag, field_default in _flags():
        if kind is bool:
            p.switch(name, field_default, flag.help)
            continue
        default = ",".join(field_default) if kind is tuple else field_default
        default = (os.environ.get(flag.env) or default) if flag.env else default
        p.flag(
            name,
            type=kind if kind in (int, float) else None,
            default=default,
            help=flag.help,
            choices=flag.choices,
        )
    return p


def identity() -> str:
    """POD_NAME (the Deployment sets it), else the host name, plus a suffix unique to this process."""
    base = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{base}_{uuid.uuid4()}"


def parse(argv: list[str] | None = None) -> Config:
    p = parser()
    a = p.parse_args(argv)
    errors = []
    if a.threadiness < 1:
        errors.append("--threadiness must be at least 1")
    if a.max_batch < 1:
        errors.append("--max-batch must be at least 1")
    if a.kube_api_qps <= 0:
        errors.append("--kube-api-qps must be positive")
    if a.kube_api_burst < 1:
        errors.append("--kube-api-burst must be at least 1")
    if not 0 <= a.monitoring_port <= 65535:
        errors.append("--monitoring-port must be 0..65535")
    if not 0 <= a.progress_every <= 60:
        errors.append(f"--progress-every {a.progress_every:g}: must be 0..60 seconds")
    if a.health_port is not None and not 0 <= a.health_port <= 65535:
        errors.append("--health-port must be 0..65535")
    if a.warm_run_timeout < 1:
        errors.append("--warm-run-timeout must be at least 1")
    if a.rotate_artifacts < 1:
        errors.append("--rotate-artifacts must be at least 1")
    if not a.leader_elect_lease_duration > a.leader_elect_renew_deadline > a.leader_elect_retry_period > 0:
        errors.append(
            "--leader-elect-lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period > 0 "
            f"(got {a.leader_elect_lease_duration:g}, {a.leader_elect_renew_deadline:g}, "
            f"{a.leader_elect_retry_period:g})"
        )
    apis = tuple(dict.fromkeys(g.strip() for g in a.apis.split(",") if g.strip()))
    unknown = [g for g in apis if by_group(g) is None]
    if not apis or unknown:
        served = ", ".join(sorted(x.group for x in REGISTRY.values()))
        errors.append(
            f"--apis {a.apis!r}: {'not served: ' + ', '.join(unknown) if unknown else 'empty'} "
            f"(one or more of {served})"
        )
    try:
        parse_limits(
            a.record_lines,
            a.record_pod_bytes,
            a.record_total_bytes,
            ("--record-lines", "--record-pod-bytes", "--record-total-bytes"),
        )
    except ValueError as exc:
        errors.append(str(exc))
    accelerators = tuple(g.strip() for g in a.accelerators.split(",") if g.strip())
    try:
        names(accelerators, "--accelerators")
    except ValueError as exc:
        errors.append(str(exc))
    if a.kubeconfig and not os.path.exists(a.kubeconfig):
        errors.append(f"--kubeconfig {a.kubeconfig}: no such file")
    if not a.kubeconfig and not in_cluster():
        errors.append("--kubeconfig (or $KUBECONFIG) is required outside a cluster")
    if errors:
        p.error("; ".join(errors))
    work_dir = a.work_dir or (IN_CLUSTER_WORK_DIR if in_cluster() else tempfile.mkdtemp(prefix="mpi-operator-"))
    given = {name.replace("-", "_"): getattr(a, name.replace("-", "_")) for name, _kind, _flag, _default in _flags()}
    return Config(
        **{
            **given,
            "health_port": a.monitoring_port if a.health_port is None else a.health_port,
            "kubeconfig": os.path.abspath(a.kubeconfig) if a.kubeconfig else None,
            "work_dir": work_dir,
            "apis": apis,
            "accelerators": accelerators,
            "identity": identity(),
            "temporary_work_dir": not a.work_dir and not in_cluster(),
        }
    )
