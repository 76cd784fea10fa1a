# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Prometheus metrics: the Kubeflow MPI Operator's names, plus the loop's own (latency, batches, runner)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Outcome
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.status import Transition, parse_time

# The condition types the Kubeflow counters follow (each feeds the counter Metrics.job_counter names).
COUNTED_CONDITIONS = (C.CREATED, C.SUCCEEDED, C.FAILED)
# The label values of the labelled counters, exported at 0 from the start: a rate or increase over a counter that
# appears at 1 misses its first event (what the alerting rules count).
RECONCILE_RESULTS = tuple(o.value for o in Outcome)  # ok, retry, error, deleted
RUN_STATUSES = ("successful", "failed", "timeout", "canceled", "error")
RUNNER_KINDS = ("warm", "cold")
RESTART_SCOPES = ("world", "worker")
# A job that stopped waiting: one of these conditions True.
_NOT_WAITING = (C.RUNNING, C.SUCCEEDED, C.FAILED, C.SUSPENDED)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        if registry is None:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)
        r = self.registry
        self.jobs_created = Counter("mpi_operator_jobs_created", "Counts number of MPI jobs created", registry=r)
        self.jobs_successful = Counter(
            "mpi_operator_jobs_successful", "Counts number of MPI jobs successful", registry=r
        )
        self.jobs_failed = Counter("mpi_operator_jobs_failed", "Counts number of MPI jobs failed", registry=r)
        self.job_info = Gauge(
            "mpi_operator_job_info", "Information about MPIJob", ["launcher", "namespace"], registry=r
        )
        self.is_leader = Gauge(
            "mpi_operator_is_leader", "Is this client the leader of this mpi-operator client set?", registry=r
        )
        self.reconcile_latency = Histogram(
            "mpi_operator_reconcile_latency_seconds",
            "Time from a job becoming dirty (first event) to the end of the run that reconciled it",
            buckets=(0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300),
            registry=r,
        )
        self.batch_size = Histogram(
            "mpi_operator_batch_size",
            "Jobs per batch (a run of its own, or one of a warm run's)",
            buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500),
            registry=r,
        )
        self.runner_duration = Histogram(
            "mpi_operator_runner_duration_seconds",
            "Wall time of one batch, from its hand-off to its result",
            buckets=(0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 60, 300),
            registry=r,
        )
        self.runner_runs = Counter(
            "mpi_operator_runner_runs", "Batches reconciled, by their run's status", ["status"], registry=r
        )
        self.runner_starts = Counter(
            "mpi_operator_runner_starts",
            "ansible-runner runs started: warm (serving batches) or cold (one batch)",
            ["kind"],
            registry=r,
        )
        self.reconciles = Counter("mpi_operator_reconciles", "Job reconciles", ["result"], registry=r)
        self.queue_depth = Gauge("mpi_operator_queue_depth", "Jobs waiting for a runner", registry=r)
        self.queue_waiting = Gauge(
            "mpi_operator_queue_waiting", "Jobs waiting for a deadline or their backoff", registry=r
        )
        self.watch_events = Counter("mpi_operator_watch_events", "Watch events received", ["resource"], registry=r)
        self.requeues = Counter(
            "mpi_operator_requeues",
            "Events that made a job dirty (after the filters), by object kind and event",
            ["kind", "event"],
            registry=r,
        )
        self.watch_restarts = Counter(
            "mpi_operator_watch_restarts", "Watch restarts", ["resource", "reason"], registry=r
        )
        self.job_waiting_since = Gauge(
            "mpi_operator_job_waiting_since_seconds",
            "Unix time since which an MPIJob has been created (or resumed) without running yet",
            ["namespace", "mpijob"],
            registry=r,
        )
        self.job_restarts = Counter(
            "mpi_operator_job_restarts",
            "Restarts of MPIJobs by their failure policy, by cause (program, disruption) and scope (world: the whole "
            "world restarted; worker: one worker of an elastic job replaced)",
            ["cause", "scope"],
            registry=r,
        )
        for result in RECONCILE_RESULTS:
            self.reconciles.labels(result=result)
        for status in RUN_STATUSES:
            self.runner_runs.labels(status=status)
        for kind in RUNNER_KINDS:
            self.runner_starts.labels(kind=kind)
        for cause in C.CAUSES:
            for scope in RESTART_SCOPES:
                self.job_restarts.labels(cause=cause, scope=scope)

    def job_counter(self, condition_type: str) -> Counter:
        """Kubeflow's counter of jobs whose condition `condition_type` (one of COUNTED_CONDITIONS) became True."""
        return {C.CREATED: self.jobs_created, C.SUCCEEDED: self.jobs_successful, C.FAILED: self.jobs_failed}[
            condition_type
        ]


def counted(transitions: Iterable[Transition]) -> list[str]:
    """The condition types Kubeflow's counters follow that became True, from the transitions the module wrote."""
    return [t.type for t in transitions if t.type in COUNTED_CONDITIONS and t.status == "True"]


def has_launcher(actions: Iterable[dict[str, Any]], status: dict[str, Any] | None) -> bool:
    """The job has a launcher Job: it just created one, or its status counts launcher replicas."""
    if any(a.get("action") == "create" and a.get("kind") == "Job" for a in actions):
        return True
    launcher = ((status or {}).get("replicaStatuses") or {}).get(C.LAUNCHER) or {}
    return any(launcher.get(k) for k in ("active", "succeeded", "failed"))


def waiting(status: dict[str, Any] | None, phase_api: bool = False) -> tuple[bool, float | None]:
    """Whether the job waits to run, and since when (Unix seconds; None when its status cannot say).

    kubeflow.org: `Created` True and none of Running, Succeeded, Failed, Suspended True; since the latest of `Created`'s,
    (a resumed job) `Suspended`'s and (a restarted one) `Restarting`'s lastTransitionTime. The APIs whose state is a
    phase (`phase_api`: T9k, bdap): phase `Pending`, since its `Running` condition turned False (a restart), else the
    earliest lastTransitionTime of their conditions, or None when they have none (the caller's first sight)."""
    if not isinstance(status, dict):
        return False, None
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    times = {kind: _time(c.get("lastTransitionTime")) for kind, c in conditions.items()}
    if phase_api:
        if status.get("phase") != "Pending":
            return False, None
        if times.get(C.RUNNING) is not None:  # it ran, and stopped: a failure policy's restart
            return True, times[C.RUNNING].timestamp()
        known = [t.timestamp() for t in times.values() if t is not None]
        return True, (min(known) if known else None)
    created = conditions.get(C.CREATED)
    if not created or created.get("status") != "True" or times.get(C.CREATED) is None:
        return False, None
    if any(conditions.get(kind, {}).get("status") == "True" for kind in _NOT_WAITING):
        return False, None
    since = [times[C.CREATED]] + [times[k] for k in (C.SUSPENDED, C.RESTARTING) if times.get(k)]
    return True, max(since).timestamp()


def _time(text: Any) -> Any:
    try:
        return parse_time(text) if isinstance(text, str) else None
    except ValueError:  # a status someone else wrote: no time rather than no operator
        return None
