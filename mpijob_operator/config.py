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
import uuid
from dataclasses import dataclass, field, make_dataclass
from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import in_cluster
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import REGISTRY, by_group

from .leader import Timing

IN_CLUSTER_WORK_DIR = "/var/run/mpi-operator"
LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True)
class Setting:
    """One setting of the operator: a field of Config and, unless `flag` is False, the flag that sets it (`--name`, and
    Go's `-name`)."""

    name: str  # the flag's name; the Config field's is the same with `_` for `-`
    type: type  # the flag's value: str, int, float, or bool (a switch: `-name`, `-name=false`, `--no-name`)
    default: Any  # without the flag (parse() derives a None: health_port, kubeconfig, work_dir)
    help: str | None = None
    choices: tuple[str, ...] | None = None
    env: str = ""  # an environment variable whose value, when set, is the default
    flag: bool = True  # False: parse() sets it, no flag does
    field_type: Any = None  # Config's type when it is not the flag's (apis: the flag's list, split)

    @property
    def field(self) -> str:
        return self.name.replace("-", "_")


# Every setting, in the order `-help` lists the flags.
SETTINGS = (
    Setting(
        "namespace",
        str,
        "",
        'watched namespace; "" = all (default: $KUBEFLOW_NAMESPACE, else all)',
        env="KUBEFLOW_NAMESPACE",
    ),
    Setting("gang-scheduling", str, "", '"volcano" or a scheduler-plugins scheduler name; "" = off'),
    Setting(
        "kube-api-qps",
        float,
        20.0,
        "client requests per second of this process (lists, watches, the Lease; not the runs)",
    ),
    Setting("kube-api-burst", int, 40, "client request burst"),
    Setting("threadiness", int, 2, "concurrent ansible-runner runs"),
    Setting("max-batch", int, 50, "most MPIJobs reconciled by one ansible-runner run"),
    Setting(
        "monitoring-port",
        int,
        8080,
        "port of /metrics (and, unless --health-port differs, /healthz and /readyz); 0 = no /metrics",
    ),
    Setting("health-port", int, None, "port of /healthz and /readyz (default: the monitoring port); 0 = off"),
    Setting("lock-namespace", str, "mpi-operator", "namespace of the leader-election Lease"),
    Setting("leader-elect", bool, True, "elect one active replica through a Lease (default: on; --no-leader-elect)"),
    Setting(
        "leader-elect-lease-duration",
        float,
        Timing.lease_duration,
        "seconds a follower waits after the last renewal it saw before it takes the Lease",
    ),
    Setting(
        "leader-elect-renew-deadline",
        float,
        Timing.renew_deadline,
        "seconds the leader may fail to renew before it steps down",
    ),
    Setting("leader-elect-retry-period", float, Timing.retry_period, "seconds between two tries to acquire or renew"),
    Setting("log-level", str, "info", choices=LOG_LEVELS),
    Setting("log-format", str, "text", "logfmt text or JSON lines", choices=("text", "json")),
    Setting("cluster-domain", str, "", "DNS suffix of hostfile entries (e.g. cluster.local)"),
    Setting(
        "kubeconfig",
        str,
        None,
        "kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)",
        env="KUBECONFIG",
    ),
    Setting(
        "work-dir",
        str,
        None,
        f"ansible-runner private data dirs (default: {IN_CLUSTER_WORK_DIR} in-cluster, else a temp dir)",
    ),
    Setting("runner-timeout", int, 300, "seconds before a stuck run is killed"),
    Setting("rotate-artifacts", int, 3, "runner artifact dirs kept per runner slot"),
    Setting(
        "apis",
        str,
        "kubeflow.org",
        "comma-separated MPIJob API groups to reconcile, of "
        + ", ".join(a.group for a in REGISTRY.values())
        + " (default: kubeflow.org)",
        field_type=tuple[str, ...],
    ),
    Setting(
        "warm-runs",
        bool,
        True,
        "keep one ansible-runner run started ahead of need, serving the batches of every "
        "worker (default: on; --no-warm-runs: each batch in a run of its own)",
    ),
    Setting("warm-run-timeout", int, 300, "seconds a warm run serves batches before it is replaced"),
    Setting(
        "kubectl-delivery-image",
        str,
        "",
        "image whose entrypoint copies kubectl into the directory it is given, for launchers that start MPI with "
        "kubectl exec ("
        + ", ".join(a.group for a in REGISTRY.values() if a.launcher_rbac)
        + '); "" = kubectl is in the launcher\'s image',
    ),
    Setting("watch-timeout", int, 300, "seconds a watch request stays open before it is resumed"),
    Setting("identity", str, "", flag=False),  # identity(): this process, in the Lease
    Setting("temporary-work-dir", bool, False, flag=False),  # made for this process: removed at exit
)


def _kind(setting: Setting) -> Any:
    return setting.field_type or (setting.type if setting.default is not None else setting.type | None)


def _default(setting: Setting) -> Any:
    return tuple(setting.default.split(",")) if setting.field_type else setting.default


# The operator's settings as parse() returns them: one field per Setting.
Config = make_dataclass("Config", [(s.field, _kind(s), field(default=_default(s))) for s in SETTINGS])


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

    def switch(self, name: str, default: bool, help: str) -> None:
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
    for s in SETTINGS:
        if not s.flag:
            continue
        if s.type is bool:
            p.switch(s.name, s.default, s.help)
            continue
        default = (os.environ.get(s.env) or s.default) if s.env else s.default
        p.flag(s.name, type=None if s.type is str else s.type, default=default, help=s.help, choices=s.choices)
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
    if a.kubeconfig and not os.path.exists(a.kubeconfig):
        errors.append(f"--kubeconfig {a.kubeconfig}: no such file")
    if not a.kubeconfig and not in_cluster():
        errors.append("--kubeconfig (or $KUBECONFIG) is required outside a cluster")
    if errors:
        p.error("; ".join(errors))
    work_dir = a.work_dir or (IN_CLUSTER_WORK_DIR if in_cluster() else tempfile.mkdtemp(prefix="mpi-operator-"))
    given = {s.field: getattr(a, s.field) for s in SETTINGS if s.flag}
    return Config(
        **{
            **given,
            "health_port": a.monitoring_port if a.health_port is None else a.health_port,
            "kubeconfig": os.path.abspath(a.kubeconfig) if a.kubeconfig else None,
            "work_dir": work_dir,
            "apis": apis,
            "identity": identity(),
            "temporary_work_dir": not a.work_dir and not in_cluster(),
        }
    )
