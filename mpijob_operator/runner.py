# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""ansible-runner runs of mpi.operator.mpijob_reconcile for batches of MPIJobs: a warm run that serves every batch
(WarmRuns), or a run of its own for one batch (BatchRunner.run when no warm run takes it).

A run's fixed cost (the `ansible` process, plugin loading, the module's own Python start) is paid once per warm run's
life (--warm-run-timeout), not once per batch; runs use subprocess mode, which does not forkpty() from a threaded
process (docs/operator.md, "Measurements behind the code", has the numbers).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ansible_runner.config.runner import RunnerConfig
from ansible_runner.runner import Runner
from ansible_runner.utils import dump_artifacts

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult, Key, Outcome, job_entry
from ansible_collections.mpi.operator.plugins.module_utils.warm import Handoff

from . import CHECKOUT_COLLECTIONS
from .store import Store

MODULE = "mpi.operator.mpijob_reconcile"
RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_unreachable")

log = logging.getLogger("mpijob_operator.runner")


@dataclass
class BatchResult:
    status: str  # ansible-runner status: successful / failed / timeout / canceled; error when it could not run
    rc: int | None
    duration: float
    jobs: dict[Key, JobResult]


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
            results[key] = JobResult(
                namespace=key.namespace, name=key.name, api_version=key.api_version, error=why, outcome=Outcome.RETRY
            )
    return results


class BatchRunner:
    """Runs the reconcile module through ansible-runner, one private data dir per runner slot."""

    def __init__(
        self,
        work_dir: str,
        *,
        slot: int | str,
        gang_scheduling: str = "",
        cluster_domain: str = "",
        kubectl_delivery_image: str = "",
        kubeconfig: str | None = None,
        extra_env: dict[str, str] | None = None,
        timeout: int = 300,
        rotate_artifacts: int = 3,
        module: str = MODULE,
        module_args: dict[str, Any] | None = None,
        warm: WarmRuns | None = None,
        on_start: Callable[[str], None] = lambda _kind: None,
        store: Store | None = None,
    ):
        self.private_data_dir = os.path.join(work_dir, f"runner-{slot}")
        os.makedirs(self.private_data_dir, exist_ok=True)
        self.module = module
        self.base_args: dict[str, Any] = dict(module_args or {})
        if module == MODULE:
            # cleanup_later: a finished job's clean-up is a pass of its own, which the queue runs after due statuses
            self.base_args.update(
                {"gang_scheduling": gang_scheduling, "cluster_domain": cluster_domain, "cleanup_later": True}
            )
            if kubectl_delivery_image:
                self.base_args["kubectl_delivery_image"] = kubectl_delivery_image
        self.timeout = timeout
        self.rotate_artifacts = rotate_artifacts
        self.envvars = runner_env(kubeconfig, extra_env)
        if "ANSIBLE_CONFIG" not in os.environ and "ANSIBLE_CONFIG" not in self.envvars:
            self.envvars["ANSIBLE_CONFIG"] = ansible_cfg(work_dir)
        self.warm = warm  # shared by every slot's runner
        self.on_start = on_start  # told of each ansible-runner run it starts: warm or cold
        self.store = store  # what the watches saw: a warm run's batch takes each job's world from it (store.py)

    def run(self, keys: list[Key]) -> BatchResult:
        """Reconciles `keys`: handed to the warm run when there is one that takes it, else in a run of its own."""
        jobs = [job_entry(k) for k in keys]
        if self.warm is not None and self.module == MODULE:
            entries = [self.store.entry(k) for k in keys] if self.store is not None else jobs
            served = self.warm.run(keys, entries)
            if served is not None:
                return served
        args = dict(self.base_args)
        if self.module == MODULE:
            args["jobs"] = jobs
        started = time.monotonic()
        status, rc, res, why = self.execute(args)
        return BatchResult(
            status=status, rc=rc, duration=time.monotonic() - started, jobs=parse_module_result(keys, res, why)
        )

    def execute(self, args: dict[str, Any], timeout: float | None = None) -> tuple[str, int | None, dict | None, str]:
        """One ansible-runner run of the module with `args`: (status, rc, the module's result, why it has none)."""
        results: list[dict[str, Any]] = []

        def on_event(event: dict[str, Any]) -> bool:
            if event.get("event") in RESULT_EVENTS:
                results.append(event.get("event_data", {}).get("res") or {})
                return event.get("event") != "runner_on_ok"  # keep only failures on disk
            return False

        timeout = timeout or self.timeout
        self.on_start("warm" if "batch_from" in args else "cold")
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
            "timeout": timeout,
        }
        try:
            dump_artifacts(kwargs)
            config = RunnerConfig(**kwargs)
            config.prepare()
            # subprocess mode: no pty, no forkpty() from a threaded process, and a bit faster
            config.runner_mode = "subprocess"
            config.subprocess_timeout = timeout
            runner = Runner(config, event_handler=on_event)
            runner.run()
            status, rc = runner.status, runner.rc
        except Exception as exc:  # a broken runner must not kill the worker thread
            log.exception("ansible-runner failed to run")
            # The metric label stays one bounded value ("error"); the exception's text goes to the log and the jobs.
            return "error", None, None, f"error: {exc}"
        return status, rc, (results[-1] if results else None), status


class WarmRun:
    """A run started ahead of need: ansible-runner has started ansible, the module has imported everything and serves
    batches on its socket (module_utils/warm.py), `slots` at a time, for at most `lifetime` seconds."""

    def __init__(
        self,
        runner: BatchRunner,
        path: str,
        lifetime: float,
        slots: int,
        on_end: Callable[[WarmRun], None] = lambda _run: None,
        after: WarmRun | None = None,
        after_within: float = 0.0,
    ):
        self.handoff = Handoff(path, slots)
        self.lifetime = lifetime
        self.started = time.monotonic()
        self.result: tuple[str, int | None, dict | None, str] = ("error", None, None, "error: the run did not end")
        args = dict(runner.base_args, batch_from=path, batch_timeout=lifetime, batch_slots=slots)
        self.result_within = runner.timeout
        self.thread = threading.Thread(
            target=self._run, args=(runner, args, on_end, after, after_within), name="warm-run", daemon=True
        )
        self.thread.start()

    def _run(
        self,
        runner: BatchRunner,
        args: dict[str, Any],
        on_end: Callable[[WarmRun], None],
        after: WarmRun | None,
        after_within: float,
    ) -> None:
        try:
            if after is not None:  # the run it replaces finishes its batches first: one run's processes at a time
                after.thread.join(after_within)
                if self.handoff.closed:  # retired or shut down meanwhile: nothing to start
                    return
            self.result = runner.execute(args, timeout=runner.timeout + self.lifetime + 30)
        finally:
            self.handoff.close()
            on_end(self)

    def alive(self) -> bool:
        return self.thread.is_alive()

    def ready(self) -> bool:
        return self.alive() and self.handoff.ready()

    def give(self, keys: list[Key], jobs: list[dict] | list[bytes], ready_within: float) -> BatchResult | None:
        """The batch's result, or None when the run did not take the batch (then it is the caller's to run)."""
        handed = time.monotonic()
        taken, res = self.handoff.give(jobs, ready_within, self.alive, self.result_within)
        if not taken:
            return None
        if res is None:  # it died, or took longer than a run may: its batches are retried, as a failed run's are
            self.kill()
            status, why = "failed", "the warm run ended without this batch's result"
        else:
            status = "failed" if res.get("failed") else "successful"
            why = status
        return BatchResult(
            status=status, rc=None, duration=time.monotonic() - handed, jobs=parse_module_result(keys, res, why)
        )

    def retire(self) -> None:
        """Takes no more batches: the module finishes the ones it holds and its run ends."""
        self.handoff.close()

    def kill(self) -> None:
        if self.handoff.pid:
            with contextlib.suppress(OSError):
                os.kill(self.handoff.pid, signal.SIGKILL)

    def close(self, wait: float) -> None:
        """Ends the run: the module takes no more batches; it is killed if it has not ended within `wait`."""
        self.handoff.close()
        self.thread.join(wait)
        if self.thread.is_alive():
            self.kill()
            self.thread.join(wait)


class WarmRuns:
    """Keeps one run started ahead of need for all the workers, serving their batches (`slots` at a time, one per
    worker) for `lifetime` seconds: ansible-runner's, ansible's and the module's start is paid once per lifetime, not
    once per batch, and memory is bounded (one run). A run is replaced when its time is up (retired when a batch
    comes in its last RETIRE_S seconds, so no batch is handed to a run about to end) or when it ended early (it died:
    after a backoff, so a broken install does not spin).

    A retired run's successor starts once the retired one has finished the batches it holds and ended (at most
    half of `ready_within` later): two runs at once are twice the memory (docs/operator.md). The batch that retired it
    waits for that and for the successor's start, once per lifetime."""

    RETIRE_S = 5.0

    def __init__(self, runner: BatchRunner, lifetime: float = 300.0, ready_within: float = 10.0, slots: int = 1):
        self.runner, self.lifetime, self.ready_within = runner, lifetime, ready_within
        self.slots = max(1, slots)
        self._not_before = 0.0  # the backoff after a warm run that died
        # a short directory: a unix socket's path has at most 107 bytes; private to this process
        self.dir = tempfile.mkdtemp(prefix="mpi-warm-")
        self._lock = threading.Lock()
        self._current: WarmRun | None = None
        self._retired: set[WarmRun] = set()
        self._closed = False
        self._count = 0
        self._failures = 0

    def start(self) -> None:
        with self._lock:
            if self._current is None:
                self._replace()

    def _replace(self, after: WarmRun | None = None) -> None:
        """A new warm run as the current one, started once `after` (retired) has ended (called with the lock held)."""
        self._current = None
        if self._closed or time.monotonic() < self._not_before:
            return
        self._count += 1
        try:
            self._current = WarmRun(
                self.runner,
                os.path.join(self.dir, f"{self._count}.sock"),
                self.lifetime,
                self.slots,
                on_end=self._ended,
                after=after,
                after_within=self.ready_within / 2,
            )
        except OSError:
            log.exception("cannot start a warm run")

    def _ended(self, run: WarmRun) -> None:
        with self._lock:
            if run in self._retired:
                self._retired.discard(run)
                return  # replaced already
            if self._current is not run:
                return
            self._current = None
            lived = time.monotonic() - run.started
            self._failures = 0 if lived >= self.lifetime else self._failures + 1
        if not self._failures:
            self.start()
            return
        delay = min(60.0, 2.0**self._failures)
        self._not_before = time.monotonic() + delay
        log.warning("warm run ended before its time, replaced in %.0fs: %s", delay, run.result[3])
        timer = threading.Timer(delay + 0.01, self.start)
        timer.daemon = True
        timer.start()

    def ready(self) -> bool:
        """A warm run waits for a batch now."""
        run = self._current
        return run is not None and run.ready()

    def _serving(self) -> WarmRun | None:
        """The run to hand a batch to: the current one, unless it is in its last seconds (then its successor)."""
        with self._lock:
            run = self._current
            if run is not None and time.monotonic() - run.started > self.lifetime - self.RETIRE_S:
                self._retired.add(run)
                run.retire()
                self._replace(after=run)
                run = self._current
            return run

    def run(self, keys: list[Key], jobs: list[dict] | list[bytes]) -> BatchResult | None:
        """The batch's result through the warm run, or None (no warm run, or it did not take the batch). `jobs`: the
        batch's entries, or their JSON (with the worlds the store gave)."""
        run = self._serving()
        served = run.give(keys, jobs, self.ready_within) if run is not None else None
        if served is None and run is not None:
            log.warning("the warm run did not take the batch: running it cold", extra={"jobs": len(keys)})
        return served

    @property
    def batches(self) -> int:
        """Batches handed to the current warm run."""
        run = self._current
        return run.handoff.taken if run is not None else 0

    def stop(self) -> None:
        """No more warm runs, and the current one takes no more batches; the batches it holds finish."""
        with self._lock:
            self._closed = True
            if self._current is not None:
                self._retired.add(self._current)
                self._current.retire()
            self._current = None

    def close(self, wait: float = 10.0) -> None:
        """stop(), then waits up to `wait` seconds for the runs to end (killed if they do not): nothing is left."""
        self.stop()
        with self._lock:
            runs = list(self._retired)
        for run in runs:
            run.close(wait)
        shutil.rmtree(self.dir, ignore_errors=True)


# ansible's main process polls for its worker's result every internal_poll_interval (default 1 ms), for as long as a
# module runs (an idle warm run: hours a day); 20 ms costs a run at most 20 ms. It is an ini option only (no
# environment variable), hence a config file of the runs' own (unless ANSIBLE_CONFIG names one).
ANSIBLE_CFG = "[defaults]\ninternal_poll_interval = 0.02\n"


def ansible_cfg(work_dir: str) -> str:
    path = os.path.join(work_dir, "ansible.cfg")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(ANSIBLE_CFG)
    return path


# glibc gives each thread that allocates an arena of its own (up to 8 per core), and freed memory stays in them: the
# warm run's module reads with 8 threads and serves 2 slots. Unless the operator's environment sets its own.
MALLOC_ARENAS = "2"


FORK_FREEZE = os.environ.get("MPI_OPERATOR_FORK_FREEZE", "1") != "0"  # an experiment's switch (docs/dev/benchmarks.md)


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
    if FORK_FREEZE:
        # the run's `ansible` process freezes its objects before it forks its worker (plugins/callback/fork_freeze.py)
        env.update({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_CALLBACKS_ENABLED": "mpi.operator.fork_freeze"})
    venv_bin = os.path.dirname(sys.executable)
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        env["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    if not os.environ.get("ANSIBLE_COLLECTIONS_PATH") and os.path.isdir(CHECKOUT_COLLECTIONS):
        env["ANSIBLE_COLLECTIONS_PATH"] = CHECKOUT_COLLECTIONS  # run from a checkout: its collections path
    if kubeconfig:
        env["K8S_AUTH_KUBECONFIG"] = kubeconfig
        env["KUBECONFIG"] = kubeconfig
    if "MALLOC_ARENA_MAX" not in os.environ:
        env["MALLOC_ARENA_MAX"] = MALLOC_ARENAS
    env.update(extra_env or {})
    return env
