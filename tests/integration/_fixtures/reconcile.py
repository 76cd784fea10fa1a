"""Fixtures of the mpijob_reconcile module tests: the module run as a user (or the operator) runs it, through
`ansible` ad hoc, against the test cluster with the collection's CRD installed; `loop` runs it until a job gets
somewhere; the manifests of tests/integration/manifests placed on kwok nodes (or nowhere)."""

from __future__ import annotations

import copy
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from hack.lib.kubeflow import KubeflowProcess, kubeflow_operator_binary
from hack.lib.wait import wait_until
from tests.integration._fixtures.install import MANIFESTS
from tests.support.ansible import ansible_env, run_module
from tests.support.mpijob import get_mpijob


class ModuleRun:
    def __init__(self, result: dict[str, Any], seconds: float):
        self.result, self.seconds = result, seconds

    @property
    def jobs(self) -> list[dict[str, Any]]:
        return self.result["jobs"]

    def job(self, name: str) -> dict[str, Any]:
        return next(j for j in self.jobs if j["name"] == name)


def run_reconcile(kubeconfig: str, jobs: list[dict[str, str]], *, check: bool = False, **params: Any) -> ModuleRun:
    """One `ansible localhost -m mpi.operator.mpijob_reconcile` run against `kubeconfig`; returns the module's
    result."""
    started = time.monotonic()
    result = run_module(
        "mpi.operator.mpijob_reconcile",
        {"jobs": jobs, "kubeconfig": kubeconfig, **params},
        ansible_env(kubeconfig),
        *(["--check"] if check else []),
    )
    return ModuleRun(result, time.monotonic() - started)


@pytest.fixture
def reconcile(kubeconfig: str, operator_crd: None) -> Callable[..., ModuleRun]:
    """Runs the module on the test cluster (CRD from roles/crds/files installed by the operator_crd fixture)."""

    def run(jobs: list[dict[str, str]], **kwargs: Any) -> ModuleRun:
        return run_reconcile(kubeconfig, jobs, **kwargs)

    return run


KWOK = {"nodeSelector": {"type": "kwok"}}  # kwok runs the pods and ends them as their annotations say
NOWHERE = {"nodeSelector": {"type": "no-such-node"}}  # pods stay Pending: a world that holds still


def _core(api_client: Any):
    from kubernetes import client

    return client.CoreV1Api(api_client), client.BatchV1Api(api_client)


def _dict(api_client: Any, obj: Any) -> dict:
    return api_client.sanitize_for_serialization(obj)


def create_as_written(api_client: Any, namespace: str, body: dict) -> dict:
    """Creates an MPIJob through the API version it is written in (v1 manifests through kubeflow.org/v1)."""
    from kubernetes import client

    group, version = body["apiVersion"].split("/")
    return client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        group, version, namespace, "mpijobs", body
    )


def load(name: str) -> dict:
    return yaml.safe_load((MANIFESTS / name).read_text())


def _on_kwok(body: dict, placement: dict = KWOK) -> dict:
    body = copy.deepcopy(body)
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"].update(placement)
    return body


@pytest.fixture
def loop(reconcile, api_client):
    """Runs the module on one job, as the operator would, until pred(job, run) holds; returns the job."""

    def until(namespace: str, name: str, pred, timeout: float = 120) -> dict:
        last: dict = {}

        def step():
            nonlocal last
            last = run_once = reconcile([{"namespace": namespace, "name": name}])
            job = get_mpijob(api_client, namespace, name)
            return (job or {"deleted": True}) if pred(job, run_once) else None

        try:
            return wait_until(step, timeout, interval=0.5, what=f"{namespace}/{name}")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; last run: {getattr(last, 'result', last)}") from None

    return until


def _podgroup_api(api_client: Any, group: str, version: str) -> None:
    """A schema-less PodGroup API of a gang scheduler, unless the cluster serves it already."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    ext = client.ApiextensionsV1Api(api_client)
    name = f"podgroups.{group}"
    try:
        ext.read_custom_resource_definition(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {
                    "kind": "PodGroup",
                    "plural": "podgroups",
                    "singular": "podgroup",
                    "listKind": "PodGroupList",
                },
                "versions": [
                    {
                        "name": version,
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }
                ],
            },
        }
        try:
            ext.create_custom_resource_definition(crd)
        except ApiException as err:
            if err.status != 409:  # 409: another worker created it first
                raise
    custom = client.CustomObjectsApi(api_client)
    deadline = time.monotonic() + 30
    while True:
        try:
            custom.list_cluster_custom_object(group, version, "podgroups", limit=1)
            return
        except ApiException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.fixture(scope="session")
def podgroup_crd(api_client: Any) -> str:
    """scheduler-plugins' PodGroup API; returns the gang_scheduling value that selects it. Nothing schedules these
    pods: the tests look at the objects."""
    _podgroup_api(api_client, "scheduling.x-k8s.io", "v1alpha1")
    return "scheduler-plugins-scheduler"


@pytest.fixture(scope="session")
def volcano_podgroup_crd(api_client: Any) -> str:
    """Volcano's PodGroup API; returns the gang_scheduling value that selects it."""
    _podgroup_api(api_client, "scheduling.volcano.sh", "v1beta1")
    return "volcano"


@pytest.fixture
def kubeflow_operator(kubeconfig: str, operator_crd: None, tmp_path: Any):
    """Starts the real Kubeflow MPI Operator watching one namespace; yields a function taking that namespace."""
    binary = kubeflow_operator_binary()
    if binary is None:
        pytest.skip("no Go toolchain to build the Kubeflow MPI Operator")
    procs: list[KubeflowProcess] = []

    def start(namespace: str, *args: str) -> subprocess.Popen:
        peer = KubeflowProcess(
            binary, kubeconfig, namespace, ["--threadiness", "1", *args], tmp_path / f"kubeflow-{namespace}.log"
        ).start()
        procs.append(peer)
        assert peer.proc is not None
        return peer.proc

    yield start
    for peer in procs:
        peer.stop()
