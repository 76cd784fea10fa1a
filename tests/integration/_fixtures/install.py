"""Fixtures of the install playbooks and the CRD: run playbooks/install.yml and uninstall.yml as a user would
(`ansible-playbook`, parsing the PLAY RECAP), and kubectl against the test cluster."""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.ansible import PlaybookRun, ansible_env, run_playbook
from tests.support.locks import installs_locked
from tests.support.paths import ROOT, kubectl_path

MANIFESTS = ROOT / "tests/integration/manifests"
# Namespace of the operator the install tests put on the cluster (not the default, so a user's install is left alone).
INSTALL_NAMESPACE = "mpi-operator-it"
# Its cluster-scoped RBAC: "<name>:<operator namespace>" for any install outside the default namespace.
CLUSTER_ROLE = f"mpi-operator:{INSTALL_NAMESPACE}"
PRIORITYCLASSES_ROLE = f"mpi-operator-priorityclasses:{INSTALL_NAMESPACE}"


def local_cluster_vars(kubeconfig: str) -> dict[str, Any]:
    """Install variables for the test cluster: its operator pods run on a simulated (kwok) node, which needs no image."""
    return {
        "mpi_operator_namespace_name": INSTALL_NAMESPACE,
        "mpi_operator_tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        "mpi_operator_node_selector": {"type": "kwok"},
        "mpi_operator_allow_simulated_nodes": True,
        "mpi_operator_wait_timeout": 120,
    }


@pytest.fixture
def kubectl(kubeconfig: str) -> Callable[..., subprocess.CompletedProcess[str]]:
    """kubectl(*args, input=None): runs kubectl against the test cluster; never raises on a non-zero exit."""

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kubectl_path(), "--kubeconfig", kubeconfig, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run


@pytest.fixture
def playbook(kubeconfig: str, tmp_path: pathlib.Path) -> Callable[..., PlaybookRun]:
    """playbook("install.yml", "--check", extra_vars={...}): runs a playbook of playbooks/ with the local cluster's
    install variables (overridden by extra_vars)."""

    def run(name: str, *args: str, extra_vars: dict[str, Any] | None = None) -> PlaybookRun:
        return run_playbook(
            ROOT / "playbooks" / name,
            ansible_env(kubeconfig),
            *args,
            variables={**local_cluster_vars(kubeconfig), **(extra_vars or {})},
            vars_file=tmp_path / f"vars-{len(list(tmp_path.glob('vars-*')))}.json",
        )

    return run


@pytest.fixture
def install_lock() -> Iterator[None]:
    """Serializes the tests that install the operator or relabel the CRD with every other install on this machine's
    cluster (cluster-scoped objects such as the ClusterRole mpi-operator exist once per cluster)."""
    with installs_locked():
        yield


@pytest.fixture
def uninstalled(
    install_lock: None, playbook: Callable[..., PlaybookRun], kubectl: Callable[..., subprocess.CompletedProcess[str]]
) -> Iterator[None]:
    """No operator before the test, none after it (the CRD and MPIJobs stay, as uninstall leaves them)."""

    def installed() -> bool:
        """Anything of this install (other installs on the cluster, e.g. make demo's, are none of its business)."""
        found = kubectl(
            "get",
            "clusterroles,clusterrolebindings",
            "-o",
            "name",
            "-l",
            f"app.kubernetes.io/managed-by=mpi.operator,mpi.operator/operator-namespace={INSTALL_NAMESPACE}",
        )
        ns = kubectl("get", "namespace", INSTALL_NAMESPACE, "-o", "name")
        return found.returncode != 0 or bool(found.stdout.strip()) or ns.returncode == 0

    # The playbook takes many seconds on a loaded machine: run it only when something is there to remove.
    if installed():
        playbook("uninstall.yml").expect_ok()
    yield
    if installed():
        playbook("uninstall.yml").expect_ok()
