"""One ansible-runner run of mpi.operator.mpijob_reconcile for a batch of MPIJobs.

The runner's fixed cost (about 0.75 s: the `ansible` process, plugin loading, the module's own
Python start) is paid once per batch. Measured on this project's VM (see docs/operator.md):
subprocess mode is about 10 % cheaper than pexpect and does not forkpty() from a threaded process;
fact gathering, callback plugins and pipelining made no measurable difference for one ad-hoc module.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ansible_runner.config.runner import RunnerConfig
from ansible_runner.runner import Runner
from ansible_runner.utils import dump_artifacts

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.result import JobResult, key_api_version

from . import CHECKOUT_COLLECTIONS
from .queue import Key

MODULE = "mpi.operator.mpijob_reconcile"
RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_unreachable")

log = logging.getLogger("mpijob_operator.runner")


@dataclass
class RunOutcome:
    status: str  # ansible-runner status: successful / failed / timeout / canceled; error when it could not run
    rc: int | None
    duration: float
    jobs: dict[Key, JobResult]


def job_entry(key: Key) -> dict[str, str]:
    """A key as the module's `jobs` entry (the apiVersion only for an API other than kubeflow.org)."""
    entry = {"namespace": key[0], "name": key[1]}
    api_version = key_api_version(key)
    if api_version:
        entry["api_version"] = api_version
    return entry


def parse_module_result(keys: list[Key], res: dict[str, Any] | None, run_status: str) -> dict[Key, JobResult]:
    """Maps the module's `jobs` list back onto the batch; any job it did not report is retried."""
    results: dict[Key, JobResult] = {}
    for entry in (res or {}).get("jobs") or []:
        if not isinstance(entry, dict):
            continue
        result = JobResult.from_dict(entry)
        if result.key in keys:
            results[result.key] = result
    if res is None:
        why = f"ansible-runner run {run_status} without a module result"
    else:
        why = str(res.get("msg") or "the module did not report this job")
    for key in keys:
        if key not in results:
            results[key] = JobResult(namespace=key[0], name=key[1], api_version=key_api_version(key), error=why,
                                     retry=True)
    return results


class BatchRunner:
    """Runs the reconcile module through ansible-runner, one private data dir per runner slot."""

    def __init__(
        self,
        work_dir: str,
        *,
        slot: int,
        gang_scheduling: str = "",
        cluster_domain: str = "",
        kubeconfig: str | None = None,
        extra_env: dict[str, str] | None = None,
        timeout: int = 300,
        rotate_artifacts: int = 3,
        module: str = MODULE,
        module_args: dict[str, Any] | None = None,
    ):
        self.private_data_dir = os.path.join(work_dir, f"runner-{slot}")
        os.makedirs(self.private_data_dir, exist_ok=True)
        self.module = module
        self.base_args: dict[str, Any] = dict(module_args or {})
        if module == MODULE:
            self.base_args.update({"gang_scheduling": gang_scheduling, "cluster_domain": cluster_domain})
        self.timeout = timeout
        self.rotate_artifacts = rotate_artifacts
        self.envvars = runner_env(kubeconfig, extra_env)

    def run(self, keys: list[Key]) -> RunOutcome:
        args = dict(self.base_args)
        if self.module == MODULE:
            args["jobs"] = [job_entry(k) for k in keys]
        results: list[dict[str, Any]] = []

        def on_event(event: dict[str, Any]) -> bool:
            if event.get("event") in RESULT_EVENTS:
                results.append(event.get("event_data", {}).get("res") or {})
                return event.get("event") != "runner_on_ok"  # keep only failures on disk
            return False

        started = time.monotonic()
        kwargs: dict[str, Any] = {
            "private_data_dir": self.private_data_dir,
            "ident": uuid.uuid4().hex,
            "host_pattern": "localhost",
            "module": self.module,
            "module_args": json.dumps(args, separators=(",", ":")) if args else "",
            "inventory": f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
            "envvars": dict(self.envvars),
            "rotate_artifacts": self.rotate_artifacts,
            "quiet": True,
            "suppress_output_file": True,
            "suppress_env_files": True,
            "timeout": self.timeout,
        }
        dump_artifacts(kwargs)
        config = RunnerConfig(**kwargs)
        config.prepare()
        # subprocess mode: no pty, no forkpty() from a threaded process, and a bit faster
        config.runner_mode = "subprocess"
        config.subprocess_timeout = self.timeout
        runner = Runner(config, event_handler=on_event)
        try:
            runner.run()
            status, rc = runner.status, runner.rc
        except Exception as exc:  # a broken runner must not kill the worker thread
            log.exception("ansible-runner failed to run")
            # The metric label stays one bounded value ("error"); the exception's text goes to the log and the jobs.
            status, rc, why = "error", None, f"error: {exc}"
        else:
            why = status
        duration = time.monotonic() - started
        res = results[-1] if results else None
        return RunOutcome(status=status, rc=rc, duration=duration, jobs=parse_module_result(keys, res, why))


def runner_env(kubeconfig: str | None, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of every run: where the collections are, how to reach the API server."""
    env: dict[str, str] = {
        "ANSIBLE_GATHERING": "explicit",
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "0",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
    }
    venv_bin = os.path.dirname(sys.executable)
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        env["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    if not os.environ.get("ANSIBLE_COLLECTIONS_PATH") and os.path.isdir(CHECKOUT_COLLECTIONS):
        env["ANSIBLE_COLLECTIONS_PATH"] = CHECKOUT_COLLECTIONS  # run from a checkout: its collections path
    if kubeconfig:
        env["K8S_AUTH_KUBECONFIG"] = kubeconfig
        env["KUBECONFIG"] = kubeconfig
    env.update(extra_env or {})
    return env
