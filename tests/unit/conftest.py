"""The unit tier starts no process: a test that needs one (ansible-runner, ansible-playbook, a hack/ script) belongs
in tests/runner, where its cost is expected. Enforced here so the tier stays seconds."""

from __future__ import annotations

import os
import subprocess

import pytest


def _no_process(*_args, **_kwargs):
    raise AssertionError("the unit tier (tests/unit) starts no process: move this test to tests/runner")


@pytest.fixture(autouse=True)
def _pure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _no_process)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _no_process)
