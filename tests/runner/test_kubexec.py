"""The batch.test.bdap.com launcher's kubexec.sh, as the pure core writes it, run by /bin/sh: called as MPI calls an
rsh agent and as horovodrun calls ssh, it must run the command through `kubectl exec` on the right pod and container.
The kubectl on PATH here records its arguments (the real one runs in tests/e2e/test_apis.py's batch.test.bdap.com job)."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import api_for
from tests.support.paths import ROOT

pytestmark = pytest.mark.runner

BDAP_EXAMPLE = ROOT / "tests" / "integration" / "manifests" / "bdap-simple-train-cpu.yaml"
HOST = "simple-train-cpu-worker-1.simple-train-cpu.sw-mpi-operator.svc"


@pytest.fixture
def kubexec(tmp_path: pathlib.Path):
    manifest = yaml.safe_load(BDAP_EXAMPLE.read_text())
    manifest["metadata"]["uid"] = "uid"
    job = api_for(manifest).parse(manifest)
    script = tmp_path / "kubexec.sh"
    script.write_text(K.kubexec(job, K.Options()))
    script.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    (bin_dir / "kubectl").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}

    def run(*args: str) -> list[str]:
        proc = subprocess.run([str(script), *args], capture_output=True, text=True, env=env, check=True)
        return proc.stdout.splitlines()

    return run


EXPECTED = ["exec", "simple-train-cpu-worker-1", "--container", "horovod-worker", "--", "/bin/sh", "-c"]


def test_called_as_mpis_rsh_agent(kubexec) -> None:
    # OpenMPI: <agent> <host> <orted command...>
    assert kubexec(HOST, "orted", "-mca", "ess", "env") == [*EXPECTED, "orted -mca ess env"]


@pytest.mark.parametrize(
    "options",
    [
        ["-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no"],  # horovodrun's check and task servers
        ["-p", "2222", "-i", "/root/.ssh/id", "-x", "-T"],
        ["-oBatchMode=yes", "-p2222", "-q", "--"],
    ],
)
def test_called_as_ssh_drops_its_options(kubexec, options: list[str]) -> None:
    assert kubexec(*options, HOST, "cd /tmp && python -m horovod.runner.task_fn") == [
        *EXPECTED,
        "cd /tmp && python -m horovod.runner.task_fn",
    ]
