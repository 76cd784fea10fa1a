"""`molecule test -s default`: the install playbook on the test cluster, its idempotence, and verify, in which the
operator (in-cluster on the real node when there is one, else a local process) runs an MPIJob to Succeeded."""

from __future__ import annotations

import os
import pathlib
import re
import signal
import subprocess

import pytest

from tests.support.ansible import ansible_env, tool
from tests.support.paths import ROOT, kubectl_path

# Fixed namespaces and the installs lock: with the other install tests on one worker.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("installs")]


def molecule(kubeconfig: str, ephemeral: pathlib.Path, *args: str, **env: str) -> tuple[int, str]:
    """Runs `molecule ARGS -s default` with its state in `ephemeral` (so no earlier run's state is reused)."""
    proc = subprocess.run(
        [tool("molecule"), *args, "-s", "default"],
        cwd=ROOT,
        env={
            **ansible_env(kubeconfig),
            "NO_COLOR": "1",
            "MOLECULE_NO_LOG": "false",
            "MOLECULE_EPHEMERAL_DIRECTORY": str(ephemeral),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=1100,  # a cold cache builds the operator image first (real node)
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_molecule_default_scenario_and_verify_fails_when_the_operator_stops(
    kubeconfig: str, operator_crd: None, install_lock: None, tmp_path: pathlib.Path
) -> None:
    """`molecule test` as a user runs it (kept for one more check, then destroyed): every step passes. Then the
    operator is stopped, and verify must fail: an installed operator that reconciles nothing never finishes the job."""
    try:
        rc, output = molecule(kubeconfig, tmp_path, "test", "--destroy", "never")
        assert rc == 0, output[-10000:]
        # Every step ran; idempotence (converge again) found nothing to change.
        for step in ("create", "converge", "idempotence", "verify"):
            assert f"[default > {step}] Executed: Successful" in output, step
        # verify saw the job reconciled to the end (the assertion's success message is the job's progress line).
        assert re.search(r'"msg": "mpi-operator-molecule-jobs/pi(-real)?: Succeeded, ', output), output[-10000:]

        pidfile = tmp_path / "operator.pid"
        if pidfile.exists():  # the local operator process: stop it (the Deployment is on a simulated node)
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        else:  # in-cluster on the real node
            subprocess.run(
                [
                    kubectl_path(),
                    "--kubeconfig",
                    kubeconfig,
                    "-n",
                    "mpi-operator-molecule",
                    "scale",
                    "deployment/mpi-operator",
                    "--replicas=0",
                ],
                check=True,
                capture_output=True,
            )
        rc, output = molecule(kubeconfig, tmp_path, "verify", MOLECULE_JOB_TIMEOUT="30")
        assert rc != 0, output[-10000:]
        # verify submits its job again (a new one: the first is deleted at its end); never reconciled, the wait
        # times out with the job still Pending (no condition).
        assert "timed out after 30s waiting for MPIJob mpi-operator-molecule-jobs/pi" in output, output[-10000:]
    finally:
        rc, output = molecule(kubeconfig, tmp_path, "destroy")
        assert rc == 0, output[-10000:]
        assert "[default > destroy] Executed: Successful" in output
