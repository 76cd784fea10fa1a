# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Workers: take a batch of dirty MPIJobs from the queue, run the reconcile module once for all of them,
then requeue, back off or forget each job by what the module reported."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult, Key, Outcome
from ansible_collections.mpi.operator.plugins.module_utils.warm import trim_heap

from .health import Heartbeats
from .log import job_fields
from .metrics import Metrics, counted, has_launcher, waiting
from .queue import WorkQueue
from .runner import BatchResult, BatchRunner
from .store import Store
from .watch import Change

log = logging.getLogger("mpijob_operator.controller")


# Kinds only the operator writes: a MODIFIED event after our patch is our own echo.
OWN_CONTENT_KINDS = ("Service", "ConfigMap", "Secret", "PodGroup")
EXPECTATION_WINDOW = 15.0  # seconds an echo of our own write may take to arrive after its run
# Seconds between two trims of the heap (warm.trim_heap), each after a batch: the watches decode every event and keep a
# fraction of it, and glibc keeps the rest (60 of 180 MiB of the operator's at 1,000 running jobs, docs/operator.md).
TRIM_EVERY = 2.0


def echoes(actions: list[dict], finished: bool = False) -> set[tuple[str, str, str]]:
    """The watch events the run's own writes will cause, which need no new reconcile. Pure.

    A created object's ADDED event, and a patched Service/ConfigMap/Secret's MODIFIED event. The deletions of
    a finished job's cleanup (its pods marked, then gone). Not the deletions of a running job (its hostfile
    depends on which pods are gone) nor pod/Job updates (others write those too)."""
    out: set[tuple[str, str, str]] = set()
    for a in actions:
        kind, name, verb = str(a.get("kind")), str(a.get("name")), a.get("action")
        if verb == "create":
            out.add((kind, name, "ADDED"))
        elif verb in ("patch", "update") and kind in OWN_CONTENT_KINDS:
            out.add((kind, name, "MODIFIED"))
        elif verb == "delete" and finished:
            out.add((kind, name, GOING))  # every update until it is gone (marked, terminated, deleted)
    return out


GOING = "*"  # an echo that explains any number of updates and the deletion of an object being deleted


def _explains(expected: set[tuple[str, str, str]], c: Change) -> bool:
    """Whether an expected echo explains the change; a one-shot echo is used up."""
    mark = (c.kind, c.name, c.event)
    if mark in expected:
        expected.discard(mark)
        return True
    return c.event in ("MODIFIED", "DELETED") and (c.kind, c.name, GOING) in expected


def unexplained(changes: list[Change], expected: set[tuple[str, str, str]]) -> list[Change]:
    """The changes seen during a run that its own writes do not explain (each echo explains one event). Pure."""
    left = set(expected)
    return [c for c in changes if not _explains(left, c)]


@dataclass(frozen=True)
class Decision:
    failed: bool = False  # back off, then run again
    requeue_after: float | None = None  # a known deadline (TTL, activeDeadline ...)
    forget: bool = False  # the MPIJob is gone
    later: bool = False  # a pass that can wait for the jobs whose status is due (a finished job's clean-up)


def decide(result: JobResult) -> Decision:
    """What the queue does with a job after its run, by its outcome. Pure."""
    if result.outcome is Outcome.DELETED:
        return Decision(forget=True)
    if result.outcome is Outcome.RETRY:  # an error worth retrying, or another pass the module asks for
        return Decision(failed=True)
    # OK, or an ERROR that waits for the job to change: its deadlines still hold
    return Decision(
        requeue_after=result.requeue_after if result.requeue_after is not None and result.requeue_after >= 0 else None,
        later=result.cleanup_pending,
    )


class Controller:
    def __init__(
        self,
        queue: WorkQueue,
        metrics: Metrics,
        runner_factory: Callable[[int], BatchRunner],
        threadiness: int,
        max_batch: int,
        heartbeats: Heartbeats | None = None,
        run_allowance: float = 0,
        store: Store | None = None,
    ):
        self.queue = queue
        self.store = store  # what the watches saw (store.py): told of each run's status write and of its retries
        # A worker in a run promises to be back within run_allowance (the run's timeout plus a margin); waiting for
        # work it promises nothing: /healthz then reports only a run that outlived its own kill.
        self.heartbeats = heartbeats or Heartbeats()
        self.run_allowance = run_allowance or math.inf
        self.metrics = metrics
        self.runner_factory = runner_factory
        self.threadiness = threadiness
        self.max_batch = max_batch
        self.workers: list[threading.Thread] = []
        self._counted: set[tuple[str, str]] = set()  # (uid, condition type) already counted
        self._waiting_seen: dict[tuple[str, str], float] = {}  # jobs in mpi_operator_job_waiting_since_seconds
        self._lock = threading.Lock()
        self._in_flight: set[Key] = set()
        self._trimmed = -math.inf  # when the heap was last trimmed (monotonic)
        self._seen_in_flight: dict[Key, list[Change]] = {}  # child events during the job's run
        self._echoes: dict[Key, tuple[float, set[tuple[str, str, str]]]] = {}  # late echoes still expected
        self.crashed: str | None = None

    def enqueue(self, key: Key, change: Change | None = None) -> None:
        """An event about `key`. Echoes of the job's own run are dropped: each would cost a whole no-op
        reconcile (a run's creates come back as ADDED events, during the run or just after it)."""
        if change is not None and change.kind != "MPIJob":
            with self._lock:
                if key in self._in_flight:
                    self._seen_in_flight.setdefault(key, []).append(change)
                    return
                deadline, expected = self._echoes.get(key, (0.0, set()))
                if time.monotonic() < deadline and _explains(expected, change):
                    return
        if change is not None:
            self.metrics.requeues.labels(kind=change.kind, event=change.event).inc()
            log.debug("dirty", extra={**job_fields(key), "change": f"{change.event} {change.kind}/{change.name}"})
        self.queue.add(key)

    def start(self) -> None:
        for slot in range(self.threadiness):
            t = threading.Thread(target=self._worker, args=(slot,), name=f"runner-{slot}", daemon=True)
            t.start()
            self.workers.append(t)

    def join(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        for t in self.workers:
            t.join(max(0.0, end - time.monotonic()))
        return not any(t.is_alive() for t in self.workers)

    def _worker(self, slot: int) -> None:
        try:
            runner = self.runner_factory(slot)
            name = f"runner-{slot}"
            while True:
                self.heartbeats.beat(name, math.inf)
                batch = self.queue.get_batch(self.max_batch)
                if not batch:
                    if self.queue.is_shutdown:
                        return
                    continue
                self.heartbeats.beat(name, self.run_allowance)
                self.run_batch(runner, batch)
        except Exception as exc:  # a dead worker is reported by /healthz, which gets the pod restarted
            self.crashed = f"runner-{slot}: {exc!r}"
            log.exception("worker crashed", extra={"worker": slot})

    def run_batch(self, runner: BatchRunner, batch: list[tuple[Key, float]]) -> BatchResult:
        keys = [k for k, _due in batch]
        with self._lock:
            self._in_flight.update(keys)
        self.metrics.batch_size.observe(len(keys))
        ran = runner.run(keys)
        self.metrics.runner_duration.observe(ran.duration)
        self.metrics.runner_runs.labels(status=ran.status).inc()
        log.info("batch reconciled", extra={"jobs": len(keys), "status": ran.status, "seconds": round(ran.duration, 3)})
        done_at = time.monotonic()
        for key, first_queued in batch:
            result = ran.jobs[key]
            self._keep(key, result)
            again = self._settle_echoes(key, result)
            self.metrics.reconcile_latency.observe(max(0.0, done_at - first_queued))
            self.record(result)
            decision = decide(result)
            if decision.failed:
                delay = self.queue.done(key, failed=True)
                self.metrics.reconciles.labels(result=result.outcome.value).inc()
                log.warning(
                    "reconcile failed, retrying in %.1fs: %s", delay or 0.0, result.error, extra=job_fields(key)
                )
                continue
            # A finished job's clean-up can wait, and so can what the events of its last moments ask for.
            self.queue.done(key, later=decision.later)
            if again:
                for c in again:
                    self.metrics.requeues.labels(kind=c.kind, event=c.event).inc()
                    log.debug(
                        "dirty during its run", extra={**job_fields(key), "change": f"{c.event} {c.kind}/{c.name}"}
                    )
                if not decision.later:
                    self.queue.add(key)
            self.metrics.reconciles.labels(result=result.outcome.value).inc()
            if decision.forget:
                self.queue.forget(key)
                continue
            if result.outcome is Outcome.ERROR:
                log.error(
                    "reconcile error (not retried until the job changes): %s", result.error, extra=job_fields(key)
                )
            if decision.requeue_after is not None:
                self.queue.add_after(key, decision.requeue_after)
            if result.actions:
                log.info("reconciled", extra={**job_fields(key), "actions": _summary(result.actions)})
        with self._lock:
            now = time.monotonic()
            self._echoes = {k: v for k, v in self._echoes.items() if v[0] > now}
            trim = now - self._trimmed >= TRIM_EVERY
            if trim:
                self._trimmed = now
        if trim:
            trim_heap()
        self.metrics.queue_depth.set(self.queue.depth())
        self.metrics.queue_waiting.set(self.queue.waiting())
        return ran

    def _keep(self, key: Key, result: JobResult) -> None:
        """The store takes the job's status write; a job retried, or gone, is read from the API server next time."""
        if self.store is None:
            return
        if result.outcome is Outcome.DELETED:
            self.store.forget(key)
        elif result.outcome is Outcome.RETRY:
            self.store.distrust(key)
        if result.resource_version and result.read_version:
            self.store.wrote_status(
                key, result.read_version, {"resourceVersion": result.resource_version, "status": result.status}
            )

    def _settle_echoes(self, key: Key, result: JobResult) -> list[Change]:
        """Ends the job's run for event bookkeeping; the events during it that need another reconcile."""
        expected = echoes(result.actions, result.finished)
        with self._lock:
            self._in_flight.discard(key)
            changes = self._seen_in_flight.pop(key, [])
            late = set(expected)
            left = [c for c in changes if not _explains(late, c)]  # what is left of `late` may still arrive
            if late and result.outcome is not Outcome.DELETED:
                self._echoes[key] = (time.monotonic() + EXPECTATION_WINDOW, late)
            else:
                self._echoes.pop(key, None)
        return left

    def record(self, result: JobResult) -> None:
        """Kubeflow's metrics from what the module reported: the condition transitions it wrote."""
        if result.outcome is Outcome.DELETED:
            self.metrics.job_info.remove(f"{result.name}-launcher", result.namespace)
            self._set_waiting(result.namespace, result.name, None, False)
            with self._lock:
                self._counted = {c for c in self._counted if c[0] != result.uid}
            return
        if result.status is None:
            return
        self._set_waiting(result.namespace, result.name, result.status, result.key.api_version != C.API_VERSION)
        if has_launcher(result.actions, result.status):
            self.metrics.job_info.labels(launcher=f"{result.name}-launcher", namespace=result.namespace).set(1)
        for ctype in counted(result.transitions):
            mark = (result.uid or f"{result.namespace}/{result.name}", ctype)
            with self._lock:
                if mark in self._counted:
                    continue
                self._counted.add(mark)
            self.metrics.job_counter(ctype).inc()
        if result.restart is not None:
            self.metrics.job_restarts.labels(**result.restart).inc()

    def _set_waiting(self, namespace: str, name: str, status: dict | None, phase_api: bool) -> None:
        """mpi_operator_job_waiting_since_seconds of one job: set while it waits to run, removed otherwise. A job
        whose status tells no time (a phase without conditions) counts from when this replica first saw it wait.
        `phase_api`: the job is not kubeflow.org's (T9k, bdap: their state is the status' phase)."""
        key = (namespace, name)
        is_waiting, since = waiting(status, phase_api)
        with self._lock:
            if not is_waiting:
                if self._waiting_seen.pop(key, None) is not None:
                    self.metrics.job_waiting_since.remove(namespace, name)
                return
            since = since or self._waiting_seen.get(key) or time.time()
            self._waiting_seen[key] = since
        self.metrics.job_waiting_since.labels(namespace=namespace, mpijob=name).set(since)


def _summary(actions: list[dict]) -> str:
    return ",".join(f"{a.get('action')}:{a.get('kind')}/{a.get('name')}" for a in actions[:20]) + (
        "..." if len(actions) > 20 else ""
    )
