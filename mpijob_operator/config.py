"""Command line of `python3 -m mpijob_operator` (the Kubeflow controller's flags, plus the loop's own)."""
from __future__ import annotations

import argparse
import os
import socket
import tempfile
import uuid
from dataclasses import dataclass

IN_CLUSTER_WORK_DIR = "/var/run/mpi-operator"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
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
    temporary_work_dir: bool = False  # made for this process: removed at exit


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m mpijob_operator", description="MPIJob operator (kubeflow.org MPIJob)")
    p.add_argument("--namespace", default=os.environ.get("KUBEFLOW_NAMESPACE", ""),
                   help='watched namespace; "" = all (default: $KUBEFLOW_NAMESPACE, else all)')
    p.add_argument("--gang-scheduling", default="",
                   help='"volcano" or a scheduler-plugins scheduler name; "" = off')
    p.add_argument("--kube-api-qps", type=float, default=20.0,
                   help="client requests per second of this process (lists, watches, the Lease; not the runs)")
    p.add_argument("--kube-api-burst", type=int, default=40, help="client request burst")
    p.add_argument("--threadiness", type=int, default=2, help="concurrent ansible-runner runs")
    p.add_argument("--max-batch", type=int, default=50, help="most MPIJobs reconciled by one ansible-runner run")
    p.add_argument("--monitoring-port", type=int, default=8080,
                   help="port of /metrics, /healthz and /readyz; 0 = off")
    p.add_argument("--lock-namespace", default="mpi-operator", help="namespace of the leader-election Lease")
    p.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                   help="elect one active replica through a Lease (default: on)")
    p.add_argument("--log-level", default="info", choices=LOG_LEVELS)
    p.add_argument("--log-format", default="text", choices=("text", "json"), help="logfmt text or JSON lines")
    p.add_argument("--cluster-domain", default="", help="DNS suffix of hostfile entries (e.g. cluster.local)")
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None,
                   help="kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)")
    p.add_argument("--work-dir", default=None,
                   help=f"ansible-runner private data dirs (default: {IN_CLUSTER_WORK_DIR} in-cluster, else a temp dir)")
    p.add_argument("--runner-timeout", type=int, default=300, help="seconds before a stuck run is killed")
    p.add_argument("--rotate-artifacts", type=int, default=3, help="runner artifact dirs kept per runner slot")
    p.add_argument("--watch-timeout", type=int, default=300,
                   help="seconds a watch request stays open before it is resumed")
    return p


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(SERVICE_ACCOUNT_DIR)


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
    if a.rotate_artifacts < 1:
        errors.append("--rotate-artifacts must be at least 1")
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
        temporary_work_dir=not a.work_dir and not in_cluster(),
    )
