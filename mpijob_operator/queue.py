# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""A de-duplicating work queue of MPIJob keys with batching, per-job backoff and deadlines.

Semantics (the controller-runtime workqueue, batched):
- a key is queued at most once; adding a queued key does nothing;
- a key that is in a run ("processing") and gets added again is queued once more after its run;
- a key is in at most one run at a time;
- after a failed run the key waits an exponential backoff before it can run again (events do not
  bypass it); a success forgets the failures;
- `add_after` is a deadline (e.g. a TTL), kept in a heap: nothing here polls;
- `add_later` is work that can wait (a finished job's clean-up), one batch of it at a time (with two runners or
  more, one is always free for a status that comes due): it is taken once no other key was taken for `later_quiet`
  seconds (a burst of jobs finishing is over), or once it has waited `later_within` seconds.
The clock is injected so the decisions are testable without sleeping.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Key


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
    def __init__(
        self,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        later_within: float = 60.0,
        later_quiet: float = 3.0,
    ):
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._later_within, self._later_quiet = later_within, later_quiet
        self._last_ready = -float("inf")  # when keys were last taken from the ready lane
        self._cond = threading.Condition()
        self._ready: dict[Key, float] = {}  # insertion-ordered: FIFO; value = time first queued
        self._later: dict[Key, float] = {}  # work that can wait, FIFO; value = time queued
        self._later_processing: set[Key] = set()  # the one batch of such work in a run
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

    def add_later(self, key: Key) -> None:
        """Queue `key` as work that can wait (see the module's doc). A key that is queued, or in a run (which reads the
        job afresh), needs nothing more."""
        with self._cond:
            self._add_later_locked(key)

    def _add_later_locked(self, key: Key) -> None:
        if self._shutdown or key in self._ready or key in self._processing or key in self._later:
            return
        self._later[key] = self._clock()
        self._cond.notify()

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
        if key not in self._ready and key not in self._later:  # a key whose work can wait: its pass will see this
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
        """A batch of one lane: work that can wait when it may go (no such batch in a run, and the ready lane quiet for
        `later_quiet` or the oldest of it waiting `later_within`), else ready keys. A batch of clean-ups never holds a
        status back, nor takes every runner."""
        now = self._clock()
        self._promote_due_locked(now)
        later = (
            bool(self._later)
            and not self._later_processing
            and (now >= self._later_from() or (not self._ready and now - self._last_ready >= self._later_quiet))
        )
        lane = self._later if later else self._ready
        if lane and not later:
            self._last_ready = now
        batch: list[tuple[Key, float]] = []
        for key in list(lane):
            if len(batch) >= max_batch:
                break
            batch.append((key, lane.pop(key)))
            self._processing.add(key)
            if later:
                self._later_processing.add(key)
        return batch

    def _later_from(self) -> float:
        """When the oldest work that can wait has waited `later_within`."""
        return next(iter(self._later.values())) + self._later_within

    def _next_wake_locked(self, now: float) -> float | None:
        """Seconds until a deadline comes due or work that can wait may go; None: no such time (an event or the end
        of a run wakes the consumers)."""
        times = [self._heap[0][0]] if self._heap else []
        if self._later and not self._later_processing:
            times.append(min(self._later_from(), self._last_ready + self._later_quiet))
        return min(times) - now if times else None

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
                until_due = self._next_wake_locked(now)
                if until_due is not None:
                    wait = until_due if wait is None else min(wait, until_due)
                if wait is not None and wait <= 0:
                    if end is not None and now >= end:
                        return []
                    continue
                self._cond.wait(wait)
            return []

    def done(self, key: Key, *, failed: bool = False, later: bool = False) -> float | None:
        """Ends the run of `key`. A failure starts (or extends) its backoff; returns that delay. `later`: all that is
        left of the job can wait: it is queued as such (add_later), with what the events during its run asked for."""
        with self._cond:
            self._processing.discard(key)
            if key in self._later_processing:
                self._later_processing.discard(key)
                if not self._later_processing and self._later:
                    self._cond.notify()  # the next batch of work that can wait may go
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
                if later:
                    self._add_later_locked(key)
                elif since is not None:
                    self._add_locked(key, since)
            return delay

    def forget(self, key: Key) -> None:
        """Drops every trace of `key` (its MPIJob is gone) except a run in progress."""
        with self._cond:
            self._failures.pop(key, None)
            self._not_before.pop(key, None)
            self._waiting.pop(key, None)  # its heap entries are skipped when they come due
            self._ready.pop(key, None)
            self._later.pop(key, None)
            self._dirty_while_processing.pop(key, None)

    def failures(self, key: Key) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def depth(self) -> int:
        """Keys due now, waiting for a free runner (also those whose work can wait)."""
        with self._cond:
            return len(self._ready) + len(self._later)

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
