"""`molecule test -s default`: the install playbook on the test cluster, its idempotence, and verify."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.integration._fixtures.install import ROOT, ansible_env

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_molecule_default_scenario(kubeconfig: str, operator_crd: None, install_lock: None) -> None:
    molecule = os.path.join(os.path.dirname(sys.executable), "molecule")
    proc = subprocess.run(
        [molecule, "test", "-s", "default"],
        cwd=ROOT,
        env={**ansible_env(kubeconfig), "NO_COLOR": "1", "MOLECULE_NO_LOG": "false"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-10000:]
    # Every step ran (create is skipped when an interrupted earlier run left the scenario created);
    # idempotence (converge again) found nothing to change.
    for step in ("converge", "idempotence", "verify", "destroy"):
        assert f"[default > {step}] Executed: Successful" in output, step
