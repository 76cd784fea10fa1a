"""The result of reconciling one MPIJob: what mpi.operator.mpijob_reconcile reports per job and the operator loop reads.

One type on both sides of ansible-runner: the module emits `as_dict()` (plain JSON), the loop rebuilds it with
`from_dict()`. It carries what the core decided, so the loop acts on facts: whether the job is finished, which
conditions changed status (with their reasons), how the reconcile ended (outcome.Outcome), when to come back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .key import Key, job_key
from .outcome import Outcome
from .plan import Plan
from .status import Transition


@dataclass
class JobResult:
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

    def decided(self, plan: Plan) -> None:
        """Takes what the core decided; the transitions are taken by whoever writes the plan's status."""
        self.status, self.finished, self.requeue_after = plan.status, plan.finished, plan.requeue_after
        self.error, self.outcome, self.cleanup_pending = plan.error, plan.outcome, plan.cleanup_pending

    def as_dict(self) -> dict[str, Any]:
        out = {
            "namespace": self.namespace, "name": self.name, "uid": self.uid, "actions": self.actions,
            "status": self.status, "finished": self.finished,
            "transitions": [{"type": t.type, "status": t.status, "reason": t.reason} for t in self.transitions],
            "error": self.error, "retry": self.retry, "requeue_after": self.requeue_after, "deleted": self.deleted,
            "cleanup_pending": self.cleanup_pending, "outcome": self.outcome.value,
        }
        if self.api_version:
            out["api_version"] = self.api_version
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
            transitions=[Transition(str(t.get("type", "")), str(t.get("status", "")), str(t.get("reason", "")))
                         for t in entry.get("transitions") or [] if isinstance(t, dict)],
            error=entry.get("error"),
            outcome=Outcome.parse(entry.get("outcome", Outcome.OK.value)),
            requeue_after=float(after) if after is not None else None,
            api_version=entry.get("api_version") or None,
            cleanup_pending=bool(entry.get("cleanup_pending")),
        )
