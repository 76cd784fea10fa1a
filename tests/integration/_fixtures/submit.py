"""Fixtures of the submission modules and playbook: run a playbook the way users do (ansible-playbook, through
ansible-runner for its per-task events) against the test cluster, and read each task's result."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.support.ansible import SubmitRun, run_playbook_events
from tests.support.paths import ROOT

SUBMIT_EXAMPLES = ROOT / "examples"


@pytest.fixture
def ansible_play(kubeconfig: str, tmp_path: pathlib.Path) -> Callable[..., SubmitRun]:
    """Runs tasks as a playbook on localhost: `ansible_play([{"name": "x", "mpi.operator.mpijob": {...}}], check=True)`."""
    count = 0

    def run(tasks: list[dict[str, Any]], check: bool = False, diff: bool = False, **extravars: Any) -> SubmitRun:
        nonlocal count
        count += 1
        path = tmp_path / f"play-{count}.yml"
        path.write_text(
            yaml.safe_dump(
                [{"name": "case", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}],
                sort_keys=False,
            )
        )
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
        return run_playbook_events(
            ROOT / "playbooks/submit.yml",
            kubeconfig,
            tmp_path / f"submit-{count}",
            extravars,
            "--check" if check else "",
        )

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
    done = {
        "type": "Succeeded",
        "status": "True",
        "reason": "MPIJobSucceeded",
        "message": "done",
        "lastTransitionTime": now,
        "lastUpdateTime": now,
    }
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object_status(
        "kubeflow.org",
        "v2beta1",
        namespace,
        "mpijobs",
        name,
        {"status": {"conditions": [done], "completionTime": now, "phase": "Succeeded"}},
    )
