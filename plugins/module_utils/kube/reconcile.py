# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The operator's step over a batch (what mpi.operator.mpijob_reconcile runs): read the batch's world (read.py), ask
the core for each job's plan, carry each plan out (apply.py), and return each job's JobResult."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from ..mpijob import children as K
from ..mpijob.errors import ApiError
from ..mpijob.plan import Action, Plan, World
from ..mpijob.planner import plan_job
from ..mpijob.protocol import JobResult, Key, Outcome, job_key
from .apply import Applier, split_after_status, versions
from .read import Namespaced, given, node_names, priority_values, read_namespace, read_nodes, world_of
from .rest import Rest
from .sshkeys import _placeholder_keys, generate_ssh_keys


class Held:
    """Since when each job's progress write is held back (Plan.held, Options.progress_every): a warm run's memory
    across its batches. A job not held has been held 0 s; a new run holds none (its first such write may come
    sooner, never later)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._since: dict[Key, float] = {}
        self._lock = threading.Lock()

    def held_for(self, key: Key) -> float:
        with self._lock:
            since = self._since.get(key)
            return 0.0 if since is None else max(0.0, self._clock() - since)

    def update(self, key: Key, held: bool) -> None:
        with self._lock:
            if held:
                self._since.setdefault(key, self._clock())
            else:
                self._since.pop(key, None)


def reconcile_batch(
    rest: Rest,
    jobs: list[dict],
    opts: K.Options,
    check_mode: bool = False,
    threads: int = 8,
    held: Held | None = None,
) -> list[JobResult]:
    """Reconciles every job of the batch (each `{namespace, name, api_version?}`, the apiVersion only for an API other
    than kubeflow.org; one batch may mix them); one job's failure never stops the others. `held`: what the caller
    keeps of the progress writes held back (a warm run's); without it none is."""
    unique: dict[Key, JobResult] = {}
    handed: dict[Key, dict] = {}  # the worlds the operator handed (what it watched), by job
    for j in jobs:
        result = JobResult(namespace=j["namespace"], name=j["name"], api_version=j.get("api_version") or None)
        unique.setdefault(result.key, result)
        if isinstance(j.get("seen"), dict) and isinstance(j["seen"].get("mpijob"), dict):
            handed[result.key] = j["seen"]
    results = list(unique.values())
    by_ns: dict[str, list[Key]] = {}
    for key in unique:
        if key not in handed:
            by_ns.setdefault(key.namespace, []).append(key)

    def read(ns: str) -> tuple[list[Key], dict[Key, dict], Namespaced | Exception]:
        try:
            found, kids = read_namespace(rest, ns, by_ns[ns], opts)
            return by_ns[ns], found, kids
        except ApiError as exc:
            return by_ns[ns], {}, exc

    pool = ThreadPoolExecutor(max_workers=max(1, threads))
    try:
        # The jobs the operator handed with their world (what it watched) are planned from it; the others are read.
        reads = [given(rest, key, world, opts) for key, world in handed.items()]
        reads += list(pool.map(read, sorted(by_ns)))  # Unreachable propagates: the whole call fails
        worlds: dict[Key, tuple[dict, World] | Exception | None] = {}
        all_jobs = [obj for _keys, found, _kids in reads for obj in found.values()]
        priorities = priority_values(rest, all_jobs, opts)
        wanted = {
            n
            for _keys, found, kids in reads
            if not isinstance(kids, Exception)
            for o in found.values()
            for n in node_names(o, kids)
        }
        nodes = read_nodes(rest, wanted)
        for keys, found, kids in reads:
            for key in keys:
                if isinstance(kids, Exception):
                    worlds[key] = kids
                elif key in found:
                    worlds[key] = (found[key], world_of(found[key], kids, priorities, nodes))
                else:
                    worlds[key] = None
        now = datetime.now(timezone.utc)

        def one(result: JobResult) -> None:
            seen = worlds[result.key]
            if seen is None:
                result.outcome = Outcome.DELETED  # gone: nothing to do, the children go with it
                return
            if isinstance(seen, Exception):
                result.error, result.outcome = f"reading the job's objects: {seen}", Outcome.RETRY
                return
            obj, world = seen
            result.uid = obj["metadata"].get("uid")
            result.read_version = obj["metadata"].get("resourceVersion")
            result.status = obj.get("status")
            keys = _placeholder_keys if check_mode else generate_ssh_keys
            held_for = held.held_for(result.key) if held is not None and not check_mode else None
            try:
                plan = plan_job(obj, world, opts, now, keys, held_for=held_for)
            except Exception as exc:  # a bug must cost one job, not the batch
                result.error, result.outcome = f"internal error planning the job: {exc!r}", Outcome.RETRY
                return
            if held_for is not None and held is not None:
                held.update(result.key, plan.held)
            plan.fill(result)
            if check_mode:
                result.actions = [a.summary() for a in plan.actions]
                result.transitions = list(plan.transitions)
                return
            # Every job's status (after its transitions' Events) first, then what comes after it (a finished job's
            # clean-up, the other events): in a batch of many, the last job's outcome does not wait for the others'
            # deletions.
            applier, head, tail = Applier(rest, obj, result, versions(world)), *split_after_status(plan)
            if applier.apply(plan, head):
                if tail:
                    tails.append((applier, plan, tail))
            elif applier.refused is not None:
                applier.refuse(*applier.refused, now)

        tails: list[tuple[Applier, Plan, list[Action]]] = []
        for future in [pool.submit(one, r) for r in results]:
            future.result()
        for future in [pool.submit(applier.apply, plan, tail) for applier, plan, tail in tails]:
            future.result()
    finally:
        pool.shutdown(wait=True)
    return [unique[job_key(j["namespace"], j["name"], j.get("api_version"))] for j in jobs]
