"""Shared by the runner tier's tests: the venv's tools and the supported Pythons (the environment of the tools is
tests/support/ansible.py's ansible_env)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import yaml

from tests.support.paths import ROOT

VENV_BIN = pathlib.Path(sys.executable).parent


def supported_pythons() -> tuple[str, str]:
    """(oldest, newest) Python the modules support: the oldest is what tests/config.yml tells ansible-test; the
    newest is the newest the newest ansible-core we test (requirements.txt) supports on managed hosts."""
    requires = yaml.safe_load((ROOT / "tests/config.yml").read_text())["modules"]["python_requires"]
    return requires.removeprefix(">="), "3.13"


def python_venv(version: str, ansible_core: str = "") -> str:
    """The unit tier's small venv on Python `version` (made and cached by hack/build/venv.sh --python), with that
    ansible-core as a controller when given."""
    extra = ["--ansible-core", ansible_core] if ansible_core else []
    proc = subprocess.run(
        ["bash", str(ROOT / "hack/build/venv.sh"), "--python", version, *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert proc.returncode == 0, f"hack/build/venv.sh --python {version} failed:\n{proc.stderr[-3000:]}"
    return proc.stdout.strip().splitlines()[-1]
