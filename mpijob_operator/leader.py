# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

The decision is pure (`decide`): it works on the lease record and on *local* observation times, so
clock skew between replicas does not matter — a follower takes over only after it has seen the
same record unchanged for a whole lease duration.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.kube.paths import collection, item

log = logging.getLogger("mpijob_operator.leader")
LEASE_API_VERSION = "coordination.k8s.io/v1"


@dataclass(frozen=True)
class Timing:
    lease_duration: float = 15.0  # a follower waits this long after the last change it saw
    renew_deadline: float = 5.0  # a leader that could not renew for this long steps down
    retry_period: float = 2.0  # how often everyone tries


@dataclass(frozen=True)
class Record:
    holder: str | None
    lease_duration: int
    transitions: int
    acquire_time: str | None = None
    renew_time: str | None = None


@dataclass
class Observed:
    """What this replica saw last, and when (its own monotonic clock)."""

    record: Record | None = None
    at: float = 0.0


def decide(identity: str, current: Record | None, seen: Observed, now: float, timing: Timing) -> str:
    """'acquire' (create or take the lease), 'renew' (we hold it), or 'wait' (someone else holds it)."""
    if current is None or not current.holder:
        return "acquire"
    if current.holder == identity:
        return "renew"
    if seen.record != current:
        return "wait"  # it changed since we last looked: the holder is alive
    duration = current.lease_duration or timing.lease_duration
    return "acquire" if now - seen.at >= duration else "wait"


def observe(seen: Observed, current: Record | None, now: float) -> Observed:
    """Restart the expiry clock whenever the record changes."""
    if seen.record != current:
        return Observed(record=current, at=now)
    return seen


def micro_time(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseLock:
    """Reads and writes the Lease with optimistic concurrency (resourceVersion), through the shell's Rest."""

    def __init__(self, rest: Any, namespace: str, name: str):
        self.rest = rest
        self.namespace = namespace
        self.name = name
        self._rv: str | None = None

    def _path(self, name: str = "") -> str:
        if name:
            return item(LEASE_API_VERSION, "Lease", self.namespace, name)
        return collection(LEASE_API_VERSION, "Lease", self.namespace)

    def get(self) -> Record | None:
        lease = self.rest.get(self._path(self.name))
        if lease is None:
            self._rv = None
            return None
        self._rv = (lease.get("metadata") or {}).get("resourceVersion")
        spec = lease.get("spec") or {}
        return Record(
            holder=spec.get("holderIdentity"),
            lease_duration=spec.get("leaseDurationSeconds") or 0,
            transitions=spec.get("leaseTransitions") or 0,
            acquire_time=spec.get("acquireTime"),  # MicroTime as the server writes it, as micro_time() does
            renew_time=spec.get("renewTime"),
        )

    def write(self, record: Record) -> None:
        """Creates the Lease, or replaces the version we read (a 409 means someone else won)."""
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": record.holder,
                "leaseDurationSeconds": record.lease_duration,
                "leaseTransitions": record.transitions,
                "acquireTime": record.acquire_time,
                "renewTime": record.renew_time,
            },
        }
        if self._rv is None:
            written = self.rest.request("POST", self._path(), body)
        else:
            body["metadata"]["resourceVersion"] = self._rv
            written = self.rest.request("PUT", self._path(self.name), body)
        self._rv = written["metadata"]["resourceVersion"]


class LeaderElector:
    """Runs in its own thread: acquires, then renews every retry period; calls on_started once leading,
    and on_stopped when leadership is lost (renewal failed past the renew deadline)."""

    def __init__(
        self,
        lock: LeaseLock,
        identity: str,
        timing: Timing,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.lock = lock
        self.identity = identity
        self.timing = timing
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.clock = clock
        self.is_leader = False
        self.last_renew = 0.0
        self._seen = Observed()
        self._stop = threading.Event()

    def try_once(self) -> bool:
        """One attempt to acquire or renew; True if we hold the lease afterwards."""
        now = self.clock()
        current = self.lock.get()
        self._seen = observe(self._seen, current, now)
        verdict = decide(self.identity, current, self._seen, now, self.timing)
        if verdict == "wait":
            return False
        stamp = micro_time()
        duration = int(self.timing.lease_duration)
        if verdict == "renew" and current is not None:
            record = Record(self.identity, duration, current.transitions, current.acquire_time, stamp)
        else:
            transitions = (
                (current.transitions + 1)
                if current is not None and current.holder
                else (current.transitions if current else 0)
            )
            record = Record(self.identity, duration, transitions, stamp, stamp)
        self.lock.write(record)
        self._seen = Observed(record=record, at=now)
        return True

    def _attempt(self) -> bool:
        try:
            return self.try_once()
        except Exception as exc:
            log.debug("lease attempt failed: %s", exc)
            return False

    def run(self) -> None:
        while not self._stop.is_set() and not self.is_leader:
            if self._attempt():
                self.is_leader = True
                self.last_renew = self.clock()
                log.info("became leader", extra={"identity": self.identity})
                self.on_started()
                break
            self._stop.wait(self.timing.retry_period)
        while not self._stop.is_set() and self.is_leader:
            self._stop.wait(self.timing.retry_period)
            if self._stop.is_set():
                break
            if self._attempt():
                self.last_renew = self.clock()
            elif self.clock() - self.last_renew > self.timing.renew_deadline:
                log.error(
                    "lost the lease: could not renew within the renew deadline", extra={"identity": self.identity}
                )
                self.is_leader = False
                self.on_stopped()

    def stop(self, release: bool = True) -> None:
        """Stops trying; the leader hands the lease back so a follower need not wait for expiry."""
        self._stop.set()
        if release and self.is_leader:
            try:
                current = self.lock.get()
                if current is not None and current.holder == self.identity:
                    self.lock.write(Record(None, 1, current.transitions, current.acquire_time, micro_time()))
            except Exception as exc:
                log.warning("could not release the lease: %s", exc)
            self.is_leader = False
