# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The protocol between the operator loop and the reconcile module: the values both ends share, written once here.

Who sends what:

- The loop (mpijob_operator/runner.py) names each job of a batch by its Key and sends the batch as the `jobs`
  argument of mpi.operator.mpijob_reconcile, one entry per job: `job_entry(key)`, `{namespace, name}` for a
  kubeflow.org job, `{namespace, name, api_version}` for a job of another API.
- The module (module_utils/kube/reconcile.py) reads each entry back with `job_key`, reconciles the batch and returns
  one JobResult per entry, in the batch's order, as its `jobs` return value: `JobResult.as_dict()`, plain JSON.
- The loop reads each entry back with `JobResult.from_dict()` and does what its Outcome asks
  (mpijob_operator/controller.py decide); a job the module did not report is retried.

The JSON of one job's result (mpijob_reconcile's RETURN documents each field): `{namespace, name, uid, actions:
[{action, kind, name, reason?}], status, finished, transitions: [{type, status, reason}], error, retry,
requeue_after, deleted, cleanup_pending, outcome, api_version?, restart?, read_version?, resource_version?}`; `retry`
and `deleted` say two of the outcomes again, for playbooks that read them; the two versions (the MPIJob's as planned
from and after the status write, when one was written) let the loop's store keep its copy current.

A warm run receives its batches over a unix socket instead of the `jobs` argument: the same entries in (`{"jobs":
[...]}`), the same return value out (`{"changed", "jobs", "api_calls"}`, or `{"failed", "msg", "api_calls"}`). The
transport, both of its ends, is module_utils/warm.py.

Both ends import this module: the module as module_utils, the loop from the collection its runs use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from . import constants as C
from .apis import by_group, group_of, storage_api_version
from .status import Transition


class Key(NamedTuple):
    """One MPIJob: its namespace, its name and its API's storage apiVersion. Two APIs may each have a job of the same
    name in one namespace: two keys. One API's versions name the same job (kubeflow.org's v1 and v2beta1): one key."""

    namespace: str
    name: str
    api_version: str


def job_key(namespace: str, name: str, api_version: str | None = None) -> Key:
    """The key of a job named with any served apiVersion of its API. None is kubeflow.org: the short form of
    mpijob_reconcile's `jobs` entries and results, which leave kubeflow.org's apiVersion out. An apiVersion of an API
    not served here is kept as it is (nothing reconciles such a job; the module refuses it)."""
    if api_version and by_group(group_of(api_version)) is None:
        return Key(namespace, name, api_version)
    return Key(namespace, name, storage_api_version(api_version))


def job_entry(key: Key) -> dict[str, str]:
    """A key as the module's `jobs` entry: kubeflow.org's in the short form (no apiVersion), as it always was."""
    entry = {"namespace": key.namespace, "name": key.name}
    if key.api_version != C.API_VERSION:
        entry["api_version"] = key.api_version
    return entry


class Outcome(str, Enum):
    """How one reconcile of a job ended. Decided by the core (an invalid spec, a foreign child, an expired TTL) and by
    the shell (an API error answering an action, plan.api_error_outcome), read by the loop and named in its metrics
    (mpi_operator_reconciles_total's `result` label)."""

    OK = "ok"  # reconciled (also when it needs nothing): come back at requeue_after, or on the next event
    RETRY = "retry"  # a transient failure, or another pass the module asks for: back off and reconcile again
    ERROR = "error"  # an error a retry cannot fix (an invalid spec, a child the API refuses): not retried until the
    # job changes
    DELETED = "deleted"  # the MPIJob is gone (or was deleted by its TTL): forget it

    @classmethod
    def parse(cls, value: object) -> Outcome:
        """The outcome a result's JSON names; one it does not name is retried (as a job a run did not report is)."""
        try:
            return cls(value)
        except ValueError:
            return cls.RETRY


@dataclass
class JobResult:
    """What one reconcile of one MPIJob reports: what the core decided, so the loop acts on facts (whether the job is
    finished, which conditions changed status and why, how the reconcile ended, when to come back)."""

    namespace: str
    name: str
    uid: str | None = None
    actions: list[dict] = field(default_factory=list)  # what was done (check mode: what would be), in order
    status: dict | None = None  # the status after this reconcile; None when the job is gone
    finished: bool = False  # Succeeded or Failed
    transitions: list[Transition] = field(default_factory=list)  # the conditions whose change was written
    error: str | None = None  # why it could not be fully reconciled (its text goes to events and logs)
    outcome: Outcome = Outcome.OK  # how this reconcile ended: what the loop does next
    requeue_after: float | None = None  # seconds until a known deadline (TTL, activeDeadlineSeconds)
    api_version: str | None = None  # the job's API as the `jobs` entry named it; None: kubeflow.org (the short form)
    cleanup_pending: bool = False  # it finished in this pass; its clean-up wants a pass of its own (cleanup_later)
    restart: dict[str, str] | None = None  # the restart whose status this reconcile wrote: {cause, scope}
    read_version: str | None = None  # the MPIJob's resourceVersion the reconcile planned from
    resource_version: str | None = None  # its resourceVersion after the status write (None: no status written)

    @property
    def key(self) -> Key:
        return job_key(self.namespace, self.name, self.api_version)

    @property
    def retry(self) -> bool:
        """A transient failure: back off and reconcile again (the module's `retry`)."""
        return self.outcome is Outcome.RETRY

    @property
    def deleted(self) -> bool:
        """The MPIJob is gone, or was deleted by its TTL (the module's `deleted`)."""
        return self.outcome is Outcome.DELETED

    def as_dict(self) -> dict[str, Any]:
        out = {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "actions": self.actions,
            "status": self.status,
            "finished": self.finished,
            "transitions": [{"type": t.type, "status": t.status, "reason": t.reason} for t in self.transitions],
            "error": self.error,
            "retry": self.retry,
            "requeue_after": self.requeue_after,
            "deleted": self.deleted,
            "cleanup_pending": self.cleanup_pending,
            "outcome": self.outcome.value,
        }
        if self.api_version:
            out["api_version"] = self.api_version
        if self.restart:
            out["restart"] = self.restart
        if self.resource_version:
            out["read_version"], out["resource_version"] = self.read_version, self.resource_version
        return out

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> JobResult:
        """The inverse of as_dict, for a result that went through JSON; missing fields take their defaults."""
        after = entry.get("requeue_after")
        return cls(
            namespace=str(entry.get("namespace", "")),
            name=str(entry.get("name", "")),
            uid=entry.get("uid"),
            actions=list(entry.get("actions") or []),
            status=entry.get("status"),
            finished=bool(entry.get("finished")),
            transitions=[
                Transition(str(t.get("type", "")), str(t.get("status", "")), str(t.get("reason", "")))
                for t in entry.get("transitions") or []
                if isinstance(t, dict)
            ],
            error=entry.get("error"),
            outcome=Outcome.parse(entry.get("outcome", Outcome.OK.value)),
            requeue_after=float(after) if after is not None else None,
            api_version=entry.get("api_version") or None,
            cleanup_pending=bool(entry.get("cleanup_pending")),
            restart=_restart(entry.get("restart")),
            read_version=_text(entry.get("read_version")),
            resource_version=_text(entry.get("resource_version")),
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _restart(value: object) -> dict[str, str] | None:
    """A result's `restart` as the loop may count it: {cause, scope} with a known cause; anything else is None."""
    if not isinstance(value, dict) or value.get("cause") not in C.CAUSES:
        return None
    return {"cause": str(value["cause"]), "scope": str(value.get("scope") or "world")}
