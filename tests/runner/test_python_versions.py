"""The collection on the oldest and newest Python it supports (README, tests/config.yml): the unit tier of the
collection's code runs there, and Ansible runs every module on such a managed host."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest
import yaml

from tests.support.ansible import ansible_env
from tests.support.paths import ROOT

from ._support import VENV_BIN, python_venv, supported_pythons

PYTHONS = supported_pythons()
MODULES = sorted(p.stem for p in (ROOT / "plugins/modules").glob("*.py") if not p.name.startswith("_"))
# Arguments each module accepts, pointed at a port nothing listens on: the module has to get as far as connecting.
ARGS = {
    "k8s_objects": {"definitions": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}]},
    "k8s_read": {"queries": [{"api_version": "v1", "kind": "Namespace", "name": "a"}]},
    "mpijob": {"name": "pi", "workers": 2},
    "mpijob_info": {"name": "pi"},
    "mpijob_reconcile": {"jobs": [{"namespace": "a", "name": "b"}]},
    "mpijob_wait": {"name": "pi"},
    "mpijob_sync": {"source": "git", "src": ["/nonexistent/jobs"]},
    "operator_rollout": {"namespace": "mpi-operator", "timeout": 5},
}


@pytest.mark.parametrize("version", PYTHONS)
def test_unit_tier_passes(version: str) -> None:
    python = python_venv(version)
    proc = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/unit/mpijob",
            "tests/unit/kube",
            "tests/unit/module_utils",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
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
    proc = subprocess.run(
        [
            str(VENV_BIN / "ansible"),
            "localhost",
            "-c",
            "local",
            "-m",
            f"mpi.operator.{module}",
            "-a",
            args,
            "-e",
            f"ansible_python_interpreter={python}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=ansible_env(),
    )
    # "localhost | FAILED! => {...}"
    assert "=> {" in proc.stdout, proc.stdout + proc.stderr
    result = json.loads(proc.stdout[proc.stdout.index("=> {") + 3 :])
    assert proc.returncode != 0 and "| FAILED!" in proc.stdout, proc.stdout
    # Got as far as connecting, on that interpreter: no traceback, our own message.
    assert "Kubernetes API server unreachable" in result["msg"], result
    assert "Traceback" not in json.dumps(result)


OLDEST_ANSIBLE_CORE = ">=2.17,<2.18"  # meta/runtime.yml's requires_ansible


def test_the_oldest_ansible_core_on_its_oldest_python_runs_the_group_the_modules_and_the_action_plugin(
    tmp_path: pathlib.Path,
) -> None:
    """ansible-core 2.17 with controller Python 3.10 (the issue's failing setup): module_defaults through
    group/mpi.operator.k8s, every module, mpijob's action plugin rendering a template and mpijob_sync's resolving its
    paths (ansible-core before 2.19
    templates differently)."""
    runtime = yaml.safe_load((ROOT / "meta/runtime.yml").read_text())
    assert runtime["requires_ansible"] == ">=2.17.0"
    python = python_venv("3.10", OLDEST_ANSIBLE_CORE)
    bin_dir = pathlib.Path(python).parent
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates/job.j2").write_text("kind: {{ kind_of_job }}\nmetadata: {name: x}\n")
    report = tmp_path / "report.json"
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}", "kind_of_job": "NotAnMPIJob"},
            "module_defaults": {
                "group/mpi.operator.k8s": {"host": "https://127.0.0.1:9", "validate_certs": False, "request_timeout": 3}
            },
            "tasks": [
                {"name": "info", "mpi.operator.mpijob_info": {"name": "pi"}, "register": "info", "ignore_errors": True},
                {
                    "name": "scale",
                    "mpi.operator.mpijob": {"name": "pi", "workers": 2},
                    "register": "scale",
                    "ignore_errors": True,
                },
                {
                    "name": "reconcile",
                    "mpi.operator.mpijob_reconcile": {"jobs": [{"namespace": "a", "name": "b"}]},
                    "register": "reconcile",
                    "ignore_errors": True,
                },
                {
                    "name": "template",
                    "mpi.operator.mpijob": {"template": "job.j2"},
                    "register": "template",
                    "ignore_errors": True,
                },
                {"name": "wait", "mpi.operator.mpijob_wait": {"name": "pi"}, "register": "wait", "ignore_errors": True},
                {
                    "name": "sync",
                    "mpi.operator.mpijob_sync": {"source": "git", "src": ["jobs/", "*.yaml"]},
                    "register": "sync",
                    "ignore_errors": True,
                },
                {
                    "name": "report",
                    "ansible.builtin.copy": {
                        "dest": str(report),
                        "content": (
                            "{{ {'version': ansible_version.full, 'info': info.msg, 'scale': scale.msg,"
                            " 'reconcile': reconcile.msg, 'template': template.msg, 'wait': wait.msg, 'sync': sync.msg} | to_json }}"
                        ),
                    },
                },
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    proc = subprocess.run(
        [str(bin_dir / "ansible-playbook"), str(tmp_path / "play.yml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=ansible_env(PATH=f"{bin_dir}:/usr/bin:/bin"),
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    got = json.loads(report.read_text())
    assert got["version"].startswith("2.17."), got
    for task in ("info", "scale", "reconcile", "wait", "sync"):
        assert got[task].startswith("Kubernetes API server unreachable"), got
    # The module parsed the rendered text: the variable was substituted (unrendered, it is not even YAML).
    assert got["template"] == "definition must hold exactly one MPIJob, found 0", got
