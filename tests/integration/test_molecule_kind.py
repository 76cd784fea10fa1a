"""`molecule test -s kind`: the default scenario's converge and verify on a throw-away kind cluster. With a Docker
engine as a user has it; without one, on podman with kind, its base and node images and the job's image all made on
this machine (hack/worlds/kind/up.sh). It needs no shared cluster, only a container engine, and is skipped without
one."""

from __future__ import annotations

import fcntl
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from tests.support.ansible import ansible_env, tool
from tests.support.paths import CACHE, ROOT

pytestmark = [pytest.mark.slow]


def why_no_kind() -> str | None:
    """Why this machine cannot run the scenario, or None when it can."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode == 0:
        return None if shutil.which("kind") else "a Docker engine but no `kind` on PATH"
    if os.geteuid() != 0:
        return "no Docker engine, and the podman way (hack/worlds/kind/up.sh) needs root"
    if not shutil.which("podman") and not shutil.which("apt-get"):
        return "no Docker engine, no podman, and no apt-get to install podman"
    if not shutil.which("go") and not (CACHE / "bin/kind").exists():
        return "no Docker engine, and no Go to build kind"
    if not (CACHE / "bin/coredns").exists():
        return "no CoreDNS binary for the node image: run `make cluster-up` first"
    return None


def test_molecule_kind_scenario(tmp_path: pathlib.Path) -> None:
    reason = why_no_kind()
    if reason:
        pytest.skip(f"molecule/kind: {reason}")
    # No kubeconfig: the scenario makes its own kind cluster and reaches it through molecule's.
    env = ansible_env(NO_COLOR="1", MOLECULE_NO_LOG="false", MOLECULE_EPHEMERAL_DIRECTORY=str(tmp_path))
    (CACHE / "kind").mkdir(parents=True, exist_ok=True)
    # One run per machine: the scenario's cluster has a fixed name.
    with open(CACHE / "kind/molecule.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            [tool("molecule"), "test", "-s", "kind"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
            check=False,
        )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-10000:]
    for step in ("create", "converge", "idempotence", "verify", "destroy"):
        assert f"[kind > {step}] Executed: Successful" in output, step
    # verify saw the job reconciled to the end.
    assert re.search(r'"msg": "mpi-operator-molecule-jobs/pi(-kind)?: Succeeded, ', output), output[-10000:]
    if shutil.which("podman"):  # the podman way: its kind cluster is gone
        clusters = subprocess.run(
            [str(CACHE / "bin/kind") if (CACHE / "bin/kind").exists() else "kind", "get", "clusters"],
            env={**env, "KIND_EXPERIMENTAL_PROVIDER": "podman"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert "mpi-operator-molecule" not in clusters
