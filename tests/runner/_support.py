"""Shared by the collection-level tests: where things are, the supported Pythons, and running the tools."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(sys.executable).parent


def supported_pythons() -> tuple[str, str]:
    """(oldest, newest) Python the modules support: the oldest is what tests/config.yml tells ansible-test; the
    newest is the newest the newest ansible-core we test (requirements.txt) supports on managed hosts."""
    requires = yaml.safe_load((ROOT / "tests/config.yml").read_text())["modules"]["python_requires"]
    return requires.removeprefix(">="), "3.13"


def python_venv(version: str, ansible_core: str = "") -> str:
    """The unit tier's small venv on Python `version` (made and cached by hack/venv.sh --python), with that
    ansible-core as a controller when given."""
    extra = ["--ansible-core", ansible_core] if ansible_core else []
    proc = subprocess.run(["bash", str(ROOT / "hack/venv.sh"), "--python", version, *extra], capture_output=True,
                          text=True, check=False, timeout=900)
    assert proc.returncode == 0, f"hack/venv.sh --python {version} failed:\n{proc.stderr[-3000:]}"
    return proc.stdout.strip().splitlines()[-1]


def tool_env(**extra: str) -> dict[str, str]:
    """The environment of the venv's tools (ansible, ansible-galaxy, ansible-test), without the caller's cluster
    credentials unless passed in `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG"}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    env.update(extra)
    return env
