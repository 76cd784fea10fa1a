"""The collection on the oldest and newest Python it supports (README, tests/config.yml): the unit tier of the
collection's code runs there, and Ansible runs every module on such a managed host."""
from __future__ import annotations

import json
import subprocess

import pytest

from ._support import ROOT, VENV_BIN, python_venv, supported_pythons, tool_env

PYTHONS = supported_pythons()
MODULES = sorted(p.stem for p in (ROOT / "plugins/modules").glob("*.py") if not p.name.startswith("_"))
# Arguments each module accepts, pointed at a port nothing listens on: the module has to get as far as connecting.
ARGS = {"mpijob": {"name": "pi", "workers": 2}, "mpijob_info": {"name": "pi"}, "mpijob_reconcile": {"jobs": [{"namespace": "a",
                                                                                                 "name": "b"}]}}


@pytest.mark.parametrize("version", PYTHONS)
def test_unit_tier_passes(version: str) -> None:
    python = python_venv(version)
    proc = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/mpijob",
                           "tests/unit/shell", "tests/unit/submit"], cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1]


def test_every_module_has_arguments_here() -> None:
    assert sorted(ARGS) == MODULES


@pytest.mark.parametrize("version", PYTHONS)
@pytest.mark.parametrize("module", MODULES)
def test_module_runs_on_a_managed_host_with(version: str, module: str) -> None:
    """ansible-core sends the module to a host whose Python is `version`; an import error there (datetime.UTC was
    one) fails every task of that module."""
    python = python_venv(version)
    args = json.dumps({**ARGS[module], "host": "https://127.0.0.1:9", "validate_certs": False, "request_timeout": 3})
    proc = subprocess.run([str(VENV_BIN / "ansible"), "localhost", "-c", "local", "-m", f"mpi.operator.{module}",
                           "-a", args, "-e", f"ansible_python_interpreter={python}"],
                          cwd=ROOT, capture_output=True, text=True, check=False, timeout=120, env=tool_env())
    # "localhost | FAILED! => {...}"
    assert "=> {" in proc.stdout, proc.stdout + proc.stderr
    result = json.loads(proc.stdout[proc.stdout.index("=> {") + 3:])
    assert proc.returncode != 0 and "| FAILED!" in proc.stdout, proc.stdout
    # Got as far as connecting, on that interpreter: no traceback, our own message.
    assert "Kubernetes API server unreachable" in result["msg"], result
    assert "Traceback" not in json.dumps(result)
