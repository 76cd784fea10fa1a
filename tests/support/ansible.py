"""Running ansible against the checkout, as users do: the environment (hack/lib/ansible.py's ansible_env, the
one the tools use too), a playbook through ansible-playbook (its output and PLAY RECAP: `run_playbook`) or through
ansible-runner (every task's result from its events: `run_playbook_events`, for the tests that look at what one
task returned), and one module ad hoc (`run_module`: its result)."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any

from hack.lib.ansible import ansible_env
from tests.support.paths import ROOT

__all__ = [
    "PlaybookRun",
    "SubmitRun",
    "ansible_env",
    "run_module",
    "run_playbook",
    "run_playbook_events",
    "task_started",
    "tool",
]

_RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+(?P<counts>(?:\w+=\d+\s*)+)$", re.MULTILINE)


def tool(name: str) -> str:
    """The venv's `name` (ansible, ansible-playbook, ansible-pull, molecule ...)."""
    return os.path.join(os.path.dirname(sys.executable), name)


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


def run_playbook(
    playbook: pathlib.Path,
    env: dict[str, str],
    *args: str,
    variables: dict[str, Any] | None = None,
    vars_file: pathlib.Path | None = None,
    cwd: pathlib.Path = ROOT,
    timeout: float = 900,
) -> PlaybookRun:
    """One `ansible-playbook PLAYBOOK [-e @VARS_FILE] ARGS` run; `variables` are written to `vars_file`."""
    cmd = [tool("ansible-playbook"), str(playbook)]
    if variables is not None:
        assert vars_file is not None, "variables go in through a vars_file"
        vars_file.write_text(json.dumps(variables))
        cmd += ["-e", f"@{vars_file}"]
    cmd += list(args)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return PlaybookRun(cmd, proc.returncode, proc.stdout + proc.stderr)


def run_module(
    module: str, args: dict[str, Any], env: dict[str, str], *options: str, timeout: float = 300
) -> dict[str, Any]:
    """One `ansible localhost -m MODULE -a ARGS` run on this Python; the module's result, its "failed" set when
    ansible printed FAILED."""
    cmd = [
        tool("ansible"),
        "localhost",
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-m",
        module,
        "-a",
        json.dumps(args),
        *options,
    ]
    env = dict(env, ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)
    try:  # ad hoc output: "localhost | CHANGED => {...}" or "localhost | FAILED! => {...}"
        head, body = proc.stdout.split(" => ", 1)
        result = json.loads(body)
    except (ValueError, IndexError):
        raise AssertionError(f"ansible failed (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}") from None
    result.setdefault("failed", "FAILED" in head)
    return result


@dataclasses.dataclass
class SubmitRun:
    """One ansible-runner run: its exit code, its output, and every task's last result by task name."""

    rc: int
    stdout: str
    results: dict[str, dict] = dataclasses.field(default_factory=dict)
    failed: set[str] = dataclasses.field(default_factory=set)
    changed: set[str] = dataclasses.field(default_factory=set)

    def __getitem__(self, task: str) -> dict:
        if task not in self.results:
            raise KeyError(f"task {task!r} did not run; ran: {sorted(self.results)}\n{self.stdout[-4000:]}")
        return self.results[task]


def run_playbook_events(
    playbook: pathlib.Path, kubeconfig: str, work: pathlib.Path, extravars: dict | None = None, cmdline: str = ""
) -> SubmitRun:
    """A playbook through ansible-runner (its private data dir `work`), on this Python, against `kubeconfig`."""
    import ansible_runner

    work.mkdir(parents=True, exist_ok=True)
    r = ansible_runner.run(
        private_data_dir=str(work),
        playbook=str(playbook),
        envvars=ansible_env(kubeconfig),
        extravars={"ansible_python_interpreter": sys.executable, **(extravars or {})},
        cmdline=cmdline or None,
        quiet=True,
    )
    run = SubmitRun(rc=r.rc, stdout=r.stdout.read())
    for ev in r.events:
        if ev.get("event") not in ("runner_on_ok", "runner_on_failed"):
            continue
        data = ev["event_data"]
        name = data.get("task")
        run.results[name] = data.get("res") or {}
        if ev["event"] == "runner_on_failed":  # also under ignore_errors: the tests look at failures
            run.failed.add(name)
        if run.results[name].get("changed"):
            run.changed.add(name)
    return run


def task_started(work: pathlib.Path, task: str) -> bool:
    """True once a playbook run under `work` (ansible_play's, submit_playbook's) has started `task` on its host:
    ansible-runner writes each event to artifacts/*/job_events/ as it happens."""
    for path in work.glob("*/artifacts/*/job_events/*.json"):
        try:
            event = json.loads(path.read_text())
        except (OSError, ValueError):  # being written
            continue
        if event.get("event") == "runner_on_start" and event.get("event_data", {}).get("task") == task:
            return True
    return False
