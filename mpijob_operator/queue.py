"""A de-duplicating work queue of MPIJob keys with batching, per-job backoff and deadlines.

Semantics (the controller-runtime workqueue, batched):
- a key is queued at most once; adding a queued key does nothing;
- a key that is in a run ("processing") and gets added again is queued once more after its run;
- a key is in at most one run at a time;
- after a failed run the key waits an exponential backoff before it can run again (events do not
  bypass it); a success forgets the failures;
- `add_after` is a deadline (e.g. a TTL), kept in a heap: nothing here polls.
The clock is injected so the decisions are testable without sleeping.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.result import Key  # (namespace, name[, apiVersion])


@dataclass(frozen=True)
class Backoff:
    base: float = 0.5
    cap: float = 300.0

    def delay(self, failures: int) -> float:
        """Delay after the n-th consecutive failure (n >= 1): base, 2*base, 4*base ... capped."""
        if failures <= 0:
            return 0.0
        return min(self.cap, self.base * (2 ** min(failures - 1, 64)))


class WorkQueue:
    def __init__(self, backoff: Backoff | None = None, clock: Callable[[], float] = time.monotonic):
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._cond = threading.Condition()
        self._ready: dict[Key, float] = {}  # insertion-ordered: FIFO; value = time first queued
        self._processing: set[Key] = set()
        self._dirty_while_processing: dict[Key, float] = {}
        self._not_before: dict[Key, float] = {}  # backoff: the key may not run before this time
        self._waiting: dict[Key, float] = {}  # key -> earliest deadline it is waiting for
        self._heap: list[tuple[float, int, Key]] = []
        self._seq = itertools.count()
        self._failures: dict[Key, int] = {}
        self._shutdown = False

    # -- producers ---------------------------------------------------------------------------
    def add(self, key: Key) -> None:
        with self._cond:
            self._add_locked(key, self._clock())

    def add_after(self, key: Key, delay: float) -> None:
        """Queue `key` once `delay` seconds have passed (a deadline such as a TTL, or a backoff)."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            self._schedule_locked(key, self._clock() + delay)

    def _schedule_locked(self, key: Key, at: float) -> None:
        if key in self._waiting and self._waiting[key] <= at:
            return
        self._waiting[key] = at
        heapq.heappush(self._heap, (at, next(self._seq), key))
        self._cond.notify()

    def _add_locked(self, key: Key, since: float) -> None:
        if self._shutdown:
            return
        if key in self._processing:
            self._dirty_while_processing.setdefault(key, since)
            return
        not_before = self._not_before.get(key)
        if not_before is not None and not_before > self._clock():
            self._schedule_locked(key, not_before)
            return
        if key not in self._ready:
            self._ready[key] = since
            self._cond.notify()

    # -- consumers ---------------------------------------------------------------------------
    def _promote_due_locked(self, now: float) -> None:
        while self._heap and self._heap[0][0] <= now:
            at, _seq, key = heapq.heappop(self._heap)
            if self._waiting.get(key) != at:
                continue  # superseded by an earlier deadline
            del self._waiting[key]
            if self._not_before.get(key, 0.0) <= now:
                self._not_before.pop(key, None)
            self._add_locked(key, at)

    def take_ready(self, max_batch: int) -> list[tuple[Key, float]]:
        """Non-blocking: up to `max_batch` due keys (with the time each was first queued), now processing."""
        with self._cond:
            return self._take_locked(max_batch)

    def _take_locked(self, max_batch: int) -> list[tuple[Key, float]]:
        self._promote_due_locked(self._clock())
        batch: list[tuple[Key, float]] = []
        for key in list(self._ready):
            if len(batch) >= max_batch:
                break
            batch.append((key, self._ready.pop(key)))
            self._processing.add(key)
        return batch

    def get_batch(self, max_batch: int, timeout: float | None = None) -> list[tuple[Key, float]]:
        """Blocks until at least one key is due (or shutdown / timeout), then returns up to `max_batch`."""
        end = None if timeout is None else self._clock() + timeout
        with self._cond:
            while not self._shutdown:
                batch = self._take_locked(max_batch)
                if batch:
                    return batch
                now = self._clock()
                wait = None if end is None else end - now
                if self._heap:
                    until_due = self._heap[0][0] - now
                    wait = until_due if wait is None else min(wait, until_due)
                if wait is not None and wait <= 0:
                    if end is not None and now >= end:
                        return []
                    continue
                self._cond.wait(wait)
            return []

    def done(self, key: Key, *, failed: bool = False) -> float | None:
        """Ends the run of `key`. A failure starts (or extends) its backoff; returns that delay."""
        with self._cond:
            self._processing.discard(key)
            delay = None
            if failed:
                n = self._failures.get(key, 0) + 1
                self._failures[key] = n
                delay = self._backoff.delay(n)
                self._not_before[key] = self._clock() + delay
                self._dirty_while_processing.pop(key, None)
                self._schedule_locked(key, self._not_before[key])
            else:
                self._failures.pop(key, None)
                self._not_before.pop(key, None)
                since = self._dirty_while_processing.pop(key, None)
                if since is not None:
                    self._add_locked(key, since)
            return delay

    def forget(self, key: Key) -> None:
        """Drops every trace of `key` (its MPIJob is gone) except a run in progress."""
        with self._cond:
            self._failures.pop(key, None)
            self._not_before.pop(key, None)
            self._waiting.pop(key, None)  # its heap entries are skipped when they come due
            self._ready.pop(key, None)
            self._dirty_while_processing.pop(key, None)

    def failures(self, key: Key) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def depth(self) -> int:
        """Keys due now, waiting for a free runner."""
        with self._cond:
            return len(self._ready)

    def waiting(self) -> int:
        """Keys waiting for a deadline or the end of their backoff."""
        with self._cond:
            return len(self._waiting)

    def processing(self) -> int:
        with self._cond:
            return len(self._processing)

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    @property
    def is_shutdown(self) -> bool:
        return self._shutdown
