"""Fixtures of the install playbooks and the CRD: run playbooks/install.yml and uninstall.yml as a user would
(`ansible-playbook`, parsing the PLAY RECAP), and kubectl against the test cluster."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support import paths

ROOT = pathlib.Path(__file__).resolve().parents[3]
MANIFESTS = ROOT / "tests/integration/manifests"
_RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+(?P<counts>(?:\w+=\d+\s*)+)$", re.MULTILINE)
# Namespace of the operator the install tests put on the cluster (not the default, so a user's install is left alone).
INSTALL_NAMESPACE = "mpi-operator-it"
# Its cluster-scoped RBAC: "<name>:<operator namespace>" for any install outside the default namespace.
CLUSTER_ROLE = f"mpi-operator:{INSTALL_NAMESPACE}"
PRIORITYCLASSES_ROLE = f"mpi-operator-priorityclasses:{INSTALL_NAMESPACE}"


@dataclasses.dataclass
class PlaybookRun:
    args: list[str]
    returncode: int
    output: str

    @property
    def recap(self) -> dict[str, int]:
        """The PLAY RECAP counters of localhost (summed over plays)."""
        totals: dict[str, int] = {}
        for match in _RECAP.finditer(self.output):
            for pair in match["counts"].split():
                key, value = pair.split("=")
                totals[key] = totals.get(key, 0) + int(value)
        if not totals:
            raise AssertionError(f"no PLAY RECAP in the output of {self.args}:\n{self.output[-5000:]}")
        return totals

    def expect_ok(self) -> PlaybookRun:
        assert self.returncode == 0, f"{' '.join(self.args)} failed ({self.returncode}):\n{self.output[-8000:]}"
        return self

    def expect_unchanged(self) -> PlaybookRun:
        """A successful run that changed nothing; on failure, shows the tasks that reported a change."""
        self.expect_ok()
        changed = [line for line in self.output.splitlines() if line.startswith("changed:")]
        assert self.recap["changed"] == 0, "\n".join(changed) + "\n" + self.output[-8000:]
        return self


def kubectl_path() -> str:
    """The kubectl built for the local cluster, else one on PATH."""
    for candidate in (os.environ.get("KUBECTL"), str(paths.cache() / "bin/kubectl"), shutil.which("kubectl")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("kubectl not found: run `make cluster-up` (it builds $CACHE/bin/kubectl)")


def ansible_env(kubeconfig: str) -> dict[str, str]:
    env = dict(os.environ)
    venv_bin = os.path.dirname(sys.executable)
    env.update(
        KUBECONFIG=kubeconfig,
        K8S_AUTH_KUBECONFIG=kubeconfig,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_NOCOLOR="1",
        PATH=venv_bin + os.pathsep + env.get("PATH", ""),
    )
    return env


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
        )

    return run


@pytest.fixture
def playbook(kubeconfig: str, tmp_path: pathlib.Path) -> Callable[..., PlaybookRun]:
    """playbook("install.yml", "--check", extra_vars={...}): runs a playbook of playbooks/ with the local cluster's
    install variables (overridden by extra_vars)."""

    def run(name: str, *args: str, extra_vars: dict[str, Any] | None = None) -> PlaybookRun:
        vars_file = tmp_path / f"vars-{len(list(tmp_path.glob('vars-*')))}.json"
        vars_file.write_text(json.dumps({**local_cluster_vars(kubeconfig), **(extra_vars or {})}))
        cmd = [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            str(ROOT / "playbooks" / name),
            "-e",
            f"@{vars_file}",
            *args,
        ]
        proc = subprocess.run(cmd, cwd=ROOT, env=ansible_env(kubeconfig), capture_output=True, text=True, timeout=900)
        return PlaybookRun(cmd, proc.returncode, proc.stdout + proc.stderr)

    return run


_installs_lock_depth = 0  # this process holds the lock when > 0 (a second flock on a new file would wait for itself)


@contextlib.contextmanager
def installs_locked() -> Iterator[None]:
    """Holds this machine's lock of installs and uninstalls of the operator (a file lock: across pytest workers and
    test runs sharing the cluster). The users' aggregated roles and the CRDs' owner labels exist once per cluster, and
    the install tests compare them before and after: no other install may land in between. Reentrant in a process."""
    global _installs_lock_depth
    if _installs_lock_depth:
        _installs_lock_depth += 1
        try:
            yield
        finally:
            _installs_lock_depth -= 1
        return
    cache = paths.cache()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "install-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _installs_lock_depth = 1
        try:
            yield
        finally:
            _installs_lock_depth = 0


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
            "get", "clusterroles,clusterrolebindings", "-o", "name",
            "-l", f"app.kubernetes.io/managed-by=mpi.operator,mpi.operator/operator-namespace={INSTALL_NAMESPACE}",
        )
        ns = kubectl("get", "namespace", INSTALL_NAMESPACE, "-o", "name")
        return found.returncode != 0 or bool(found.stdout.strip()) or ns.returncode == 0

    # The playbook takes many seconds on a loaded machine: run it only when something is there to remove.
    if installed():
        playbook("uninstall.yml").expect_ok()
    yield
    if installed():
        playbook("uninstall.yml").expect_ok()
