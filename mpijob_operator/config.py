"""Command line of `python3 -m mpijob_operator` (the Kubeflow controller's flags, plus the loop's own).

Every flag is spelled `--flag` and, as Go's flag package (so Kubeflow's operator) accepts, `-flag` too, each with
`=value` or the value as the next argument; booleans take `-flag`, `-flag=false` or `--no-flag`."""
from __future__ import annotations

import argparse
import os
import socket
import tempfile
import uuid
from dataclasses import dataclass
from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import in_cluster
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import REGISTRY, by_group

from .leader import Timing

IN_CLUSTER_WORK_DIR = "/var/run/mpi-operator"
LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass
class Config:
    namespace: str
    gang_scheduling: str
    kube_api_qps: float
    kube_api_burst: int
    threadiness: int
    max_batch: int
    monitoring_port: int
    health_port: int
    lock_namespace: str
    leader_elect: bool
    log_level: str
    log_format: str
    cluster_domain: str
    kubeconfig: str | None
    work_dir: str
    runner_timeout: int
    rotate_artifacts: int
    identity: str
    watch_timeout: int
    apis: tuple[str, ...] = ("kubeflow.org",)  # the MPIJob API groups reconciled (the install's mpi_operator_apis)
    kubectl_delivery_image: str = ""  # kubectl exec launchers (launcher_rbac APIs): an image copying kubectl to /opt/kube
    warm_runs: bool = True
    warm_run_timeout: int = 300
    # Leader election, in seconds (leader.Timing): a follower's wait, a leader's renew deadline, how often both try.
    leader_elect_lease_duration: float = Timing.lease_duration
    leader_elect_renew_deadline: float = Timing.renew_deadline
    leader_elect_retry_period: float = Timing.retry_period
    temporary_work_dir: bool = False  # made for this process: removed at exit


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
        self.add_argument(f"-{name}", f"--{name}", dest=dest, nargs="?", const=True, default=default,
                          type=go_bool, metavar="BOOL", help=help)
        self.add_argument(f"-no-{name}", f"--no-{name}", dest=dest, action="store_false", help=argparse.SUPPRESS)


def parser() -> GoFlags:
    p = GoFlags(prog="python3 -m mpijob_operator", description="MPIJob operator (kubeflow.org, T9k and bdap MPIJobs)")
    p.flag("namespace", default=os.environ.get("KUBEFLOW_NAMESPACE", ""),
           help='watched namespace; "" = all (default: $KUBEFLOW_NAMESPACE, else all)')
    p.flag("gang-scheduling", default="", help='"volcano" or a scheduler-plugins scheduler name; "" = off')
    p.flag("kube-api-qps", type=float, default=20.0,
           help="client requests per second of this process (lists, watches, the Lease; not the runs)")
    p.flag("kube-api-burst", type=int, default=40, help="client request burst")
    p.flag("threadiness", type=int, default=2, help="concurrent ansible-runner runs")
    p.flag("max-batch", type=int, default=50, help="most MPIJobs reconciled by one ansible-runner run")
    p.flag("monitoring-port", type=int, default=8080,
           help="port of /metrics (and, unless --health-port differs, /healthz and /readyz); 0 = no /metrics")
    p.flag("health-port", type=int, default=None,
           help="port of /healthz and /readyz (default: the monitoring port); 0 = off")
    p.flag("lock-namespace", default="mpi-operator", help="namespace of the leader-election Lease")
    p.switch("leader-elect", True, "elect one active replica through a Lease (default: on; --no-leader-elect)")
    p.flag("leader-elect-lease-duration", type=float, default=Timing.lease_duration,
           help="seconds a follower waits after the last renewal it saw before it takes the Lease")
    p.flag("leader-elect-renew-deadline", type=float, default=Timing.renew_deadline,
           help="seconds the leader may fail to renew before it steps down")
    p.flag("leader-elect-retry-period", type=float, default=Timing.retry_period,
           help="seconds between two tries to acquire or renew")
    p.flag("log-level", default="info", choices=LOG_LEVELS)
    p.flag("log-format", default="text", choices=("text", "json"), help="logfmt text or JSON lines")
    p.flag("cluster-domain", default="", help="DNS suffix of hostfile entries (e.g. cluster.local)")
    p.flag("kubeconfig", default=os.environ.get("KUBECONFIG") or None,
           help="kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)")
    p.flag("work-dir", default=None,
           help=f"ansible-runner private data dirs (default: {IN_CLUSTER_WORK_DIR} in-cluster, else a temp dir)")
    p.flag("runner-timeout", type=int, default=300, help="seconds before a stuck run is killed")
    p.flag("rotate-artifacts", type=int, default=3, help="runner artifact dirs kept per runner slot")
    p.flag("apis", default="kubeflow.org",
           help="comma-separated MPIJob API groups to reconcile, of " + ", ".join(a.group for a in REGISTRY.values())
                + " (default: kubeflow.org)")
    p.switch("warm-runs", True, "keep one ansible-runner run started ahead of need, serving the batches of every "
             "worker (default: on; --no-warm-runs: each batch in a run of its own)")
    p.flag("warm-run-timeout", type=int, default=300,
           help="seconds a warm run serves batches before it is replaced")
    p.flag("kubectl-delivery-image", default="",
           help="image whose entrypoint copies kubectl into the directory it is given, for launchers that start MPI "
                "with kubectl exec (" + ", ".join(a.group for a in REGISTRY.values() if a.launcher_rbac)
                + "); \"\" = kubectl is in the launcher's image")
    p.flag("watch-timeout", type=int, default=300, help="seconds a watch request stays open before it is resumed")
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
        errors.append("--leader-elect-lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period > 0 "
                      f"(got {a.leader_elect_lease_duration:g}, {a.leader_elect_renew_deadline:g}, "
                      f"{a.leader_elect_retry_period:g})")
    apis = tuple(dict.fromkeys(g.strip() for g in a.apis.split(",") if g.strip()))
    unknown = [g for g in apis if by_group(g) is None]
    if not apis or unknown:
        served = ", ".join(sorted(x.group for x in REGISTRY.values()))
        errors.append(f"--apis {a.apis!r}: {'not served: ' + ', '.join(unknown) if unknown else 'empty'} "
                      f"(one or more of {served})")
    if a.kubeconfig and not os.path.exists(a.kubeconfig):
        errors.append(f"--kubeconfig {a.kubeconfig}: no such file")
    if not a.kubeconfig and not in_cluster():
        errors.append("--kubeconfig (or $KUBECONFIG) is required outside a cluster")
    if errors:
        p.error("; ".join(errors))
    work_dir = a.work_dir or (IN_CLUSTER_WORK_DIR if in_cluster() else tempfile.mkdtemp(prefix="mpi-operator-"))
    return Config(
        namespace=a.namespace,
        gang_scheduling=a.gang_scheduling,
        kube_api_qps=a.kube_api_qps,
        kube_api_burst=a.kube_api_burst,
        threadiness=a.threadiness,
        max_batch=a.max_batch,
        monitoring_port=a.monitoring_port,
        health_port=a.monitoring_port if a.health_port is None else a.health_port,
        lock_namespace=a.lock_namespace,
        leader_elect=a.leader_elect,
        log_level=a.log_level,
        log_format=a.log_format,
        cluster_domain=a.cluster_domain,
        kubeconfig=os.path.abspath(a.kubeconfig) if a.kubeconfig else None,
        work_dir=work_dir,
        runner_timeout=a.runner_timeout,
        rotate_artifacts=a.rotate_artifacts,
        identity=identity(),
        watch_timeout=a.watch_timeout,
        apis=apis,
        kubectl_delivery_image=a.kubectl_delivery_image,
        warm_runs=a.warm_runs,
        warm_run_timeout=a.warm_run_timeout,
        leader_elect_lease_duration=a.leader_elect_lease_duration,
        leader_elect_renew_deadline=a.leader_elect_renew_deadline,
        leader_elect_retry_period=a.leader_elect_retry_period,
        temporary_work_dir=not a.work_dir and not in_cluster(),
    )
