"""How one reconcile of a job ended, and what an API error answering one of its actions means for it.

One value, decided by the core (plan.py: an invalid spec, a foreign child, an expired TTL) and by the shell
(kube/apply.py, through api_error_outcome), carried by value through the module's JSON (result.py), read by the
operator loop (controller.decide) and named in its metrics (mpi_operator_reconciles_total's `result` label)."""
from __future__ import annotations

from enum import Enum


class Outcome(str, Enum):
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


def api_error_outcome(action: str, status: int) -> Outcome:
    """What an API error of HTTP `status` answering a plan's `action` (create, patch, delete, status, event,
    delete-mpijob) means for the job. The answers that are what the action wanted (a deletion's 404) and a create's 409
    (whose object is looked at first) never come here.

    - the status write's 404: the MPIJob itself is gone (DELETED);
    - any other 404 or 409: an object vanished or changed under us; the next reconcile sees the new state (RETRY);
    - a create's 400 or 422: the API rejects what the template asks for; a retry would ask for it again (ERROR);
    - anything else (5xx, 429, 401/403, a patch's 400/422): RETRY.
    """
    if status == 404 and action == "status":
        return Outcome.DELETED
    if status in (400, 422) and action == "create":
        return Outcome.ERROR
    return Outcome.RETRY
