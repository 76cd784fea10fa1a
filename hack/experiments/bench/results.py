"""What one operator's run measured (a dataclass per step; `note` instead of numbers for a peer that could not run), and the
statistics over per-job latencies (nearest-rank percentiles; a job that never got there counts as infinite)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))  # nearest rank
    return s[k]


def latencies(
    done: dict[tuple[str, str], float],
    start: dict[tuple[str, str], float],
    keys: list[tuple[str, str]],
    until: float = math.inf,
) -> list[float]:
    """Per job, from `start` to `done`; infinite for a job that did not get there by `until`, when the wait for it
    ended (a percentile that falls on one is printed as "> wall time")."""
    return [done[k] - start[k] if k in done and k in start and done[k] <= until else math.inf for k in keys]


def shares(
    done: dict[tuple[str, str], float],
    start: dict[tuple[str, str], float],
    keys: list[tuple[str, str]],
    until: float = math.inf,
) -> list[float]:
    """The part of a latency after `start` (the cluster's work done: pods up, the launcher Job Complete), for the
    jobs that got both by `until`."""
    return [max(0.0, done[k] - start[k]) for k in keys if k in done and k in start and done[k] <= until]


def reached(values: list[float]) -> int:
    return sum(math.isfinite(v) for v in values)


@dataclass
class Capacity:
    """Whether the cluster can take every pod of the run at once (else the latencies measure the queue)."""

    slots: int
    needed: int


@dataclass
class Single:
    """Phase 2: one job on an idle operator, SINGLE_RUNS times, one after the other: the median and the slowest."""

    to_children: float
    to_running: float
    children_max: float = float("nan")
    running_max: float = float("nan")


@dataclass
class Bulk:
    """Phase 3: JOBS jobs created at once."""

    keys: list[tuple[str, str]]
    created_all: float
    wall: float
    to_children: list[float]
    to_pods_up: list[float]
    to_running: list[float]
    react: list[float]  # the operator's share of "Running": from the pods being up to the condition
    runs: float  # batches
    starts: float  # ansible-runner runs started (warm: serving batches; cold: one batch)
    reconciles: float
    mean_batch: float
    cpu: dict[str, float]
    requests: dict[str, float] = field(default_factory=dict)  # API requests of every client, by verb and resource


@dataclass
class Finish:
    """Phase 4: every launcher told to succeed at once (only when the launchers keep running)."""

    wall: float = float("nan")
    to_succeeded: list[float] = field(default_factory=list)
    to_launcher_done: list[float] = field(default_factory=list)  # the cluster's share: kwok, the Job controller
    react: list[float] = field(default_factory=list)  # the operator's share: from the launcher Job Complete
    to_cleaned: list[float] = field(default_factory=list)  # to the last of the job's workers marked for deletion
    window: float = float("nan")  # first told -> all Succeeded and cleaned up: the CPU and requests window
    settled: float = float("nan")  # seconds the machine took to be quiet before the launchers were told
    runs: float = 0.0
    starts: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)
    requests: dict[str, float] = field(default_factory=dict)


@dataclass
class Result:
    """What one operator measured (`note` instead when it could not run)."""

    name: str
    flags: list[str] = field(default_factory=list)
    single: Single | None = None
    bulk: Bulk | None = None
    finish: Finish | None = None
    peak: int = 0
    rss_peak_tree: int = 0
    status_writers: dict[str, int] = field(default_factory=dict)
    note: str = ""
    jobs: int = 0  # the burst's size: jobs x workers
    workers: int = 0
    rss_at_peak: list[dict[str, object]] = field(default_factory=list)  # BENCH_PROFILE=1: by process, at the peak
    cpu_profile: dict[str, dict] = field(
        default_factory=dict
    )  # BENCH_CPU_PROFILE=1: phase -> cpuprofile.Summary's dict
