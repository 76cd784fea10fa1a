"""Fixtures of the submission modules and playbook: run a playbook the way users do (ansible-playbook, through
ansible-runner for its per-task events) against the test cluster, and read each task's result."""
from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

_ROOT = pathlib.Path(__file__).resolve().parents[3]
SUBMIT_EXAMPLES = _ROOT / "examples"


@dataclass
class SubmitRun:
    """One ansible-playbook run: its exit code, its output, and every task's last result by task name."""

    rc: int
    stdout: str
    results: dict[str, dict] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)

    def __getitem__(self, task: str) -> dict:
        if task not in self.results:
            raise KeyError(f"task {task!r} did not run; ran: {sorted(self.results)}\n{self.stdout[-4000:]}")
        return self.results[task]


def run_playbook_events(playbook: pathlib.Path, kubeconfig: str, work: pathlib.Path, extravars: dict | None = None,
                 cmdline: str = "") -> SubmitRun:
    import ansible_runner

    env = {
        "ANSIBLE_CONFIG": str(_ROOT / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(_ROOT / ".collections"),
        "K8S_AUTH_KUBECONFIG": kubeconfig,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        "ANSIBLE_NOCOLOR": "1",
    }
    work.mkdir(parents=True, exist_ok=True)
    r = ansible_runner.run(private_data_dir=str(work), playbook=str(playbook), envvars=env,
                           extravars={"ansible_python_interpreter": sys.executable, **(extravars or {})},
                           cmdline=cmdline or None, quiet=True)
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
    import json

    for path in work.glob("*/artifacts/*/job_events/*.json"):
        try:
            event = json.loads(path.read_text())
        except (OSError, ValueError):  # being written
            continue
        if event.get("event") == "runner_on_start" and event.get("event_data", {}).get("task") == task:
            return True
    return False


@pytest.fixture
def ansible_play(kubeconfig: str, tmp_path: pathlib.Path) -> Callable[..., SubmitRun]:
    """Runs tasks as a playbook on localhost: `ansible_play([{"name": "x", "mpi.operator.mpijob": {...}}], check=True)`."""
    count = 0

    def run(tasks: list[dict[str, Any]], check: bool = False, diff: bool = False, **extravars: Any) -> SubmitRun:
        nonlocal count
        count += 1
        path = tmp_path / f"play-{count}.yml"
        path.write_text(yaml.safe_dump([{"name": "case", "hosts": "localhost", "connection": "local",
                                         "gather_facts": False, "tasks": tasks}], sort_keys=False))
        flags = " ".join(f for f, on in (("--check", check), ("--diff", diff)) if on)
        return run_playbook_events(path, kubeconfig, tmp_path / f"runner-{count}", extravars, flags)

    return run


@pytest.fixture
def submit_playbook(kubeconfig: str, tmp_path: pathlib.Path) -> Callable[..., SubmitRun]:
    """Runs playbooks/submit.yml with the given variables (`--check` with check=True)."""
    count = 0

    def run(check: bool = False, **extravars: Any) -> SubmitRun:
        nonlocal count
        count += 1
        return run_playbook_events(_ROOT / "playbooks/submit.yml", kubeconfig, tmp_path / f"submit-{count}",
                            extravars, "--check" if check else "")

    return run


def example_manifest(path: str, **changes: Any) -> dict[str, Any]:
    """An example manifest as a dict; `changes` are merged into its metadata (e.g. namespace=...)."""
    manifest = yaml.safe_load((SUBMIT_EXAMPLES / path).read_text())
    manifest["metadata"].update(changes)
    return manifest


def mark_succeeded(api_client: Any, namespace: str, name: str) -> None:
    """Writes Succeeded into a job's status, as the controller named in its spec.runPolicy.managedBy would: tests of
    the waits play that controller (no operator touches such a job)."""
    import time

    from kubernetes import client

    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    done = {"type": "Succeeded", "status": "True", "reason": "MPIJobSucceeded", "message": "done",
            "lastTransitionTime": now, "lastUpdateTime": now}
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object_status(
        "kubeflow.org", "v2beta1", namespace, "mpijobs", name,
        {"status": {"conditions": [done], "completionTime": now, "phase": "Succeeded"}})
