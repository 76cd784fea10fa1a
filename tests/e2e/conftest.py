"""End-to-end fixtures: the real node must be up (`make cluster-up` brings it up where the machine allows);
the operator image is built from the Containerfile and installed in-cluster with playbooks/install.yml,
watching one namespace (so operators other tests run elsewhere are left alone); MPIJobs from manifests/
run there on real pods."""

from __future__ import annotations

import contextlib
import functools
import os
import pathlib
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from hack.lib.images import REAL_NODE_SELECTOR, REAL_NODE_TOLERATION, built_image
from hack.lib.kubeflow import KubeflowProcess, kubeflow_operator_binary
from tests.support.ansible import ansible_env, run_playbook
from tests.support.locks import installs_locked
from tests.support.paths import ROOT, local_kubeconfig

MANIFESTS = pathlib.Path(__file__).parent / "manifests"
NODE_NAME = os.environ.get("MPI_REAL_NODE_NAME", "mpi-real-node")
# Overridable so that two runs on the shared cluster do not install into (and uninstall from) the same namespaces;
# each pytest-xdist worker that runs e2e tests installs its own operator, into namespaces named after the worker.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
OPERATOR_NAMESPACE = os.environ.get(
    "MPI_E2E_OPERATOR_NAMESPACE", "mpi-operator-e2e" + (f"-{_WORKER}" if _WORKER else "")
)
JOBS_NAMESPACE = os.environ.get("MPI_E2E_NAMESPACE", "mpi-e2e" + (f"-{_WORKER}" if _WORKER else ""))
JOB_TIMEOUT_S = float(os.environ.get("MPI_E2E_JOB_TIMEOUT", "240"))
GROUP = "kubeflow.org"
# What pi.c's rank 0 prints for every rank; and the install guide's hello world (v1-helloworld.yaml).
RANK_LINE = re.compile(r"^rank (\d+) of (\d+) on host (\S+)$", re.MULTILINE)
HELLO_LINE = re.compile(r"^Hello world from processor (\S+), rank (\d+) out of (\d+) processors$", re.MULTILINE)


def kubeconfig_path() -> str:
    return os.environ.get("KUBECONFIG") or str(local_kubeconfig())


def real_node_missing(api: client.ApiClient) -> str | None:
    """Why the real node cannot run the e2e suite, or None when it can."""
    try:
        node = client.CoreV1Api(api).read_node(NODE_NAME, _request_timeout=5)
    except ApiException as err:
        if err.status == 404:
            return (
                f"no node {NODE_NAME}: `make cluster-up` brings it up where the machine allows (MPI_CLUSTER_REAL_NODE)"
            )
        return f"cannot read node {NODE_NAME}: {err.reason}"
    except Exception as err:  # any connection failure means: no cluster
        return f"no reachable cluster at {kubeconfig_path()}: {err.__class__.__name__}"
    ready = [c for c in node.status.conditions or [] if c.type == "Ready"]
    if not ready or ready[0].status != "True":
        return f"node {NODE_NAME} is not Ready"
    return None


def unavailable(reason: str) -> None:
    """Skips the e2e tests; fails them under hack/make/e2e.sh (make e2e), which asks for the real node."""
    (pytest.fail if os.environ.get("MPI_E2E_REQUIRE") == "1" else pytest.skip)(f"real node e2e: {reason}")


@pytest.fixture(scope="session")
def api() -> client.ApiClient:
    path = kubeconfig_path()
    if not os.path.exists(path):
        unavailable(f"no kubeconfig at {path} (run `make cluster-up`)")
    api = config.new_client_from_config(config_file=path)
    reason = real_node_missing(api)
    if reason:
        unavailable(reason)
    return api


def _playbook(name: str, install_vars: dict, tmp: pathlib.Path) -> None:
    run_playbook(
        ROOT / "playbooks" / name,
        ansible_env(kubeconfig_path()),
        variables=install_vars,
        vars_file=tmp / f"{name}.json",
    ).expect_ok()


def operator_image() -> tuple[str, str]:
    """Builds (cached) and imports the operator image; returns (repository, tag), the tag naming this build."""
    return built_image("operator")


def local_image(name: str) -> str:
    """Builds (cached) and imports hack/build/images' `name`; its reference by the tag naming this build."""
    return ":".join(built_image(name))


LOCAL_IMAGE = re.compile(r"^localhost/(mpi-[a-z0-9]+):local$")
BUILT_IMAGES: dict[str, str] = {}  # image name -> recipe hash of this checkout's build, once per session


def pin_local_images(job: dict, built: dict[str, str]) -> None:
    """Points the job's `localhost/mpi-<name>:local` images at `localhost/mpi-<name>:<recipe hash>`, the build of this
    checkout's recipe: every checkout on the machine imports its own build under `:local`, so the tag can change under
    a running suite (a Debian 12 MPICH image came back that way in the middle of 20 runs); the hash tag cannot."""

    def visit(node: object) -> None:
        if isinstance(node, dict):
            image = node.get("image")
            match = LOCAL_IMAGE.match(image) if isinstance(image, str) else None
            if match:
                if match[1] not in built:
                    built[match[1]] = built_image(match[1].removeprefix("mpi-"))[1]
                node["image"] = f"localhost/{match[1]}:{built[match[1]]}"
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(job)


def ensure_namespace(api: client.ApiClient, name: str) -> None:
    try:
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    except ApiException as err:
        if err.status != 409:
            raise


@pytest.fixture(scope="session")
def operator(api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The operator, in-cluster on the real node, installed by playbooks/install.yml and watching JOBS_NAMESPACE.
    MPI_E2E_OPERATOR=external: an operator is already running (e.g. `make run`); nothing is installed."""
    ensure_namespace(api, JOBS_NAMESPACE)
    if os.environ.get("MPI_E2E_OPERATOR") == "external":
        yield
        return
    repository, tag = operator_image()
    install_vars = {
        "mpi_operator_namespace_name": OPERATOR_NAMESPACE,
        "mpi_operator_watch_namespace": JOBS_NAMESPACE,
        "mpi_operator_image_repository": repository,
        "mpi_operator_image_tag": tag,
        "mpi_operator_image_pull_policy": "Never",
        "mpi_operator_node_selector": REAL_NODE_SELECTOR,
        "mpi_operator_tolerations": [REAL_NODE_TOLERATION],
        "mpi_operator_wait_timeout": 180,
        # Every MPIJob API (tests/e2e/test_apis.py runs the T9k and batch.test.bdap.com jobs).
        "mpi_operator_apis": ["kubeflow.org", "batch.tensorstack.dev", "batch.test.bdap.com"],
        # batch.test.bdap.com launchers get kubectl from this local image (hack/build/images/kubectl-delivery).
        "mpi_operator_kubectl_delivery_image": local_image("kubectl-delivery"),
        # Integration test sessions on the same cluster write the CRD with other field managers.
        "mpi_operator_adopt_crd": True,
    }
    tmp = tmp_path_factory.mktemp("install")
    # Not while an install test runs on another worker (it compares the shared roles before and after).
    with installs_locked():
        started = time.monotonic()
        _playbook("install.yml", install_vars, tmp)
    print(f"\noperator {repository}:{tag} installed in-cluster in {time.monotonic() - started:.1f} s")
    yield
    if os.environ.get("MPI_E2E_KEEP_OPERATOR") != "1":
        with installs_locked():
            _playbook("uninstall.yml", install_vars, tmp)


@dataclass
class FinishedJob:
    name: str
    job: dict
    seconds: float  # from create to the finished condition
    launcher_log: str
    launcher_exit_code: int | None
    launcher_running: float | None = None  # from create to the launcher pod seen Running (timed runs only)

    def condition(self, kind: str) -> dict | None:
        found = [c for c in self.job.get("status", {}).get("conditions", []) if c["type"] == kind]
        return found[0] if found and found[0]["status"] == "True" else None

    def worker_hosts(self) -> list[str]:
        replicas = self.job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
        return [f"{self.name}-worker-{i}" for i in range(replicas)]

    def rank_hosts(self) -> list[str]:
        """The host of every rank the launcher reported, in rank order."""
        ranks = {int(m[1]): m[3] for m in RANK_LINE.finditer(self.launcher_log)}
        ranks |= {int(m[2]): m[1] for m in HELLO_LINE.finditer(self.launcher_log)}
        return [ranks[r] for r in sorted(ranks)]


class Jobs:
    """Runs MPIJobs from manifests/ in `namespace` (JOBS_NAMESPACE) under a unique name, and deletes them afterwards."""

    def __init__(self, api: client.ApiClient, namespace: str = JOBS_NAMESPACE) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.created: list[tuple[str, str]] = []

    def run(self, manifest: str, timeout: float = JOB_TIMEOUT_S, timed: bool = False) -> FinishedJob:
        """`timed`: also when the launcher pod is first seen Running (one more read per poll)."""
        job = yaml.safe_load((MANIFESTS / manifest).read_text())
        started = time.monotonic()
        version, name = self.start(job)
        return self.wait(version, name, started, timeout, timed)

    def start(self, job: dict) -> tuple[str, str]:
        """Creates `job` under a unique name in the namespace, local images pinned to this checkout's builds;
        returns its (version, name)."""
        pin_local_images(job, BUILT_IMAGES)
        version = job["apiVersion"].split("/")[1]
        name = f"{job['metadata']['name']}-{uuid.uuid4().hex[:5]}"
        labels = job["metadata"].get("labels")  # a queue's, say (tests/kueue)
        job["metadata"] = {"name": name, "namespace": self.namespace, **({"labels": labels} if labels else {})}
        self.custom.create_namespaced_custom_object(GROUP, version, self.namespace, "mpijobs", job)
        self.created.append((version, name))
        return version, name

    def wait(
        self, version: str, name: str, started: float, timeout: float = JOB_TIMEOUT_S, timed: bool = False
    ) -> FinishedJob:
        """Waits until the job succeeded or failed, at most `timeout` seconds after `started` (monotonic)."""
        launcher_running = None
        while True:
            if timed and launcher_running is None and self.launcher_phase(name) in ("Running", "Succeeded", "Failed"):
                launcher_running = time.monotonic() - started
            current = self.custom.get_namespaced_custom_object(GROUP, version, self.namespace, "mpijobs", name)
            conditions = {c["type"]: c["status"] for c in current.get("status", {}).get("conditions", [])}
            if conditions.get("Succeeded") == "True" or conditions.get("Failed") == "True":
                break
            if time.monotonic() - started > timeout:
                raise AssertionError(
                    f"MPIJob {name} did not finish in {timeout:.0f} s: {current.get('status')}\n{self.describe(name)}"
                )
            time.sleep(0.25)
        seconds = time.monotonic() - started
        log, code = self.launcher(name)
        return FinishedJob(name, current, seconds, log, code, launcher_running)

    def launcher_phase(self, name: str) -> str:
        selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=selector).items
        return pods[0].status.phase or "" if pods else ""

    def launcher_log_so_far(self, name: str) -> str:
        """The log of the job's newest launcher pod while it runs; empty before its container started."""
        selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=selector).items
        if not pods:
            return ""
        pod = max(pods, key=lambda p: p.metadata.creation_timestamp)
        try:
            # The client gives None, not "", for a container that has printed nothing yet.
            return self.core.read_namespaced_pod_log(pod.metadata.name, self.namespace) or ""
        except ApiException as err:
            if err.status == 400:  # ContainerCreating: no log yet
                return ""
            raise

    def launcher(self, name: str) -> tuple[str, int | None]:
        """The log and exit code of the job's last launcher pod."""
        selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=selector).items
        if not pods:
            return "", None
        pod = max(pods, key=lambda p: p.metadata.creation_timestamp)
        # The kubelet may report the container's end a moment after the Job controller saw the pod fail.
        deadline = time.monotonic() + 30
        while True:
            states = [s.state.terminated for s in pod.status.container_statuses or [] if s.state.terminated]
            if states or time.monotonic() > deadline:
                break
            time.sleep(0.5)
            pod = self.core.read_namespaced_pod(pod.metadata.name, self.namespace)
        log = self.core.read_namespaced_pod_log(pod.metadata.name, self.namespace) or ""
        return log, states[0].exit_code if states else None

    def describe(self, name: str) -> str:
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=f"training.kubeflow.org/job-name={name}")
        return "\n".join(f"{p.metadata.name}: {p.status.phase} on {p.spec.node_name}" for p in pods.items)

    def delete_all(self) -> None:
        for version, name in self.created:
            try:
                self.custom.delete_namespaced_custom_object(
                    GROUP, version, self.namespace, "mpijobs", name, propagation_policy="Background"
                )
            except ApiException as err:
                if err.status != 404:
                    raise


@pytest.fixture
def jobs(api: client.ApiClient, operator: None) -> Iterator[Jobs]:
    runner = Jobs(api)
    yield runner
    runner.delete_all()


def _scale_operator(api: client.ApiClient, replicas: int, timeout: float = 180) -> None:
    """Scales the installed operator's Deployment and waits until that many of its pods are ready (none left at 0)."""
    apps = client.AppsV1Api(api)
    apps.patch_namespaced_deployment_scale("mpi-operator", OPERATOR_NAMESPACE, {"spec": {"replicas": replicas}})
    end = time.monotonic() + timeout
    while True:
        status = apps.read_namespaced_deployment("mpi-operator", OPERATOR_NAMESPACE).status
        if (status.replicas or 0) == replicas and (status.ready_replicas or 0) == replicas:
            return
        if time.monotonic() > end:
            raise AssertionError(f"the operator did not scale to {replicas} in {timeout:.0f} s: {status}")
        time.sleep(0.5)


@contextlib.contextmanager
def _kubeflow_peer(api: client.ApiClient, binary: str, log_dir: pathlib.Path) -> Iterator[Jobs]:
    """The Kubeflow MPI Operator watching a namespace of its own, and a Jobs there; ours at 0 replicas meanwhile."""
    namespace = f"{JOBS_NAMESPACE}-kubeflow"
    ensure_namespace(api, namespace)
    installed = os.environ.get("MPI_E2E_OPERATOR") != "external"
    if installed:
        _scale_operator(api, 0)
    peer = KubeflowProcess(binary, kubeconfig_path(), namespace, [], log_dir / "kubeflow.log").start()
    runner = Jobs(api, namespace)
    try:
        peer.wait_ready()
        yield runner
    finally:
        runner.delete_all()
        peer.stop()
        if installed:
            _scale_operator(api, 1)


@pytest.fixture
def kubeflow_peer(api: client.ApiClient, operator: None, tmp_path: pathlib.Path) -> Callable[[], Any] | str:
    """The peer of the timing runs: `with kubeflow_peer() as jobs:` runs the Kubeflow MPI Operator (the differential
    tests' binary, out of cluster on this machine) watching a namespace of its own, its pods on the real node as ours
    are; ours is scaled to 0 inside the block (one operator at a time, none taking CPU from the other) and back after.
    A string instead says why the peer cannot run."""
    binary = kubeflow_operator_binary()
    if binary is None:
        return "not run: no Go toolchain to build the Kubeflow MPI Operator"
    return functools.partial(_kubeflow_peer, api, binary, tmp_path)
