# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What a plan is: the ordered actions that turn one MPIJob's observed children into the desired ones (Action), what
was observed (World), and the plan with the status that results (Plan). The planner (planner.py) decides a plan; the
shell reads a World (kube/read.py) and carries a plan out (kube/apply.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import status as S
from .protocol import JobResult, Outcome


@dataclass(frozen=True)
class Action:
    action: str  # create | patch | delete | status | event | delete-mpijob | record (record.py)
    kind: str
    name: str
    reason: str = ""
    body: dict | None = field(default=None, repr=False)  # object, JSON merge patch, status, or event
    subresource: str = ""  # "status" for a patch of the launcher Job's status
    api_version: str = ""
    uid: str = ""  # delete precondition
    force: bool = False  # delete at once (grace period 0): a pod whose node is lost never confirms a graceful one

    def summary(self) -> dict:
        out = {"action": self.action, "kind": self.kind, "name": self.name}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class World:
    """The observed cluster state of one MPIJob (None: the object does not exist)."""

    mpijob: dict
    service: dict | None = None
    config_map: dict | None = None
    secret: dict | None = None
    launcher: dict | None = None
    pod_group: dict | None = None
    # ServiceAccount, Role, RoleBinding <job>-launcher by kind (the jobs whose launcher uses `kubectl exec`)
    launcher_rbac: dict[str, dict] = field(default_factory=dict)
    pods: list[dict] = field(default_factory=list)  # pods labelled with the job's name (workers and launcher)
    priorities: dict[str, int] = field(default_factory=dict)  # PriorityClass values, for PodGroup minResources
    # The nodes of the pods of a job with a failure policy or a hostfile topology, by name (None: the node is gone;
    # not here: not read).
    nodes: dict[str, dict | None] = field(default_factory=dict)
    record: dict | None = None  # ConfigMap <job>-record: what was kept of the job's pods (record.py)
    # Launcher pods that failed and were deleted before a pass saw them, each as the watch's DELETED event last showed
    # it (the Job controller deletes the pod about a second after it spends the backoffLimit): only the record reads
    # them. The operator's store keeps them (mpijob_operator/store.py); a world read from the API server has none.
    gone_pods: list[dict] = field(default_factory=list)


# What a World holds of a pod's spec: all the planner reads of it (the node it runs on; its containers' names, which
# the record names). The rest is what the operator wrote there (volumes, env, tolerations...: half of a pod's JSON):
# neither the loop's store keeps it nor a batch sends it, and a world read from the API server is cut the same way,
# so both ways plan from the same view.
POD_SPEC_SEEN = ("nodeName",)


def pod_as_seen(pod: dict) -> dict:
    """The pod as a World holds it (POD_SPEC_SEEN and its containers' names of its spec; the rest whole)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    seen = {k: spec[k] for k in POD_SPEC_SEEN if k in spec}
    containers = spec.get("containers")
    if isinstance(containers, list):
        seen["containers"] = [{"name": c.get("name")} for c in containers if isinstance(c, dict)]
    return {**pod, "spec": seen}


def secret_as_seen(secret: dict) -> dict:
    """The SSH Secret as a World holds it: which keys it has (all the planner checks), not their values, so that no
    private key is kept by the loop or sent in a batch."""
    data = secret.get("data")
    if not isinstance(data, dict):
        return secret
    return {**secret, "data": dict.fromkeys(data, "")}


@dataclass
class Plan:
    actions: list[Action]
    status: dict | None  # the MPIJob status after the actions
    requeue_after: float | None = None
    error: str | None = None
    outcome: Outcome = Outcome.OK  # RETRY: a foreign child; ERROR: an invalid spec; DELETED: the TTL deletes the job
    transitions: tuple[S.Transition, ...] = ()  # the conditions the status this plan writes changes
    done: bool | None = None  # the API's own word on the status (apis.Api.finished); None: kubeflow.org's
    cleanup_pending: bool = False  # the job finished in this pass and its clean-up is left to the next (cleanup_later)
    restart: dict[str, str] | None = None  # the recovery this plan's status records: {cause, scope} (restart.py)
    # a status write that only counts pods coming up, and the discover_hosts.sh patch with it, held back: written
    # after requeue_after, or with the next change (Options.progress_every)
    held: bool = False

    @property
    def finished(self) -> bool:
        """Succeeded or Failed, by the status after the actions."""
        if self.done is not None:
            return self.done
        return S.is_finished(self.status or {})

    def fill(self, result: JobResult) -> None:
        """Puts what this plan decided into the job's result; the transitions are put there by whoever writes the
        plan's status."""
        result.status, result.finished, result.requeue_after = self.status, self.finished, self.requeue_after
        result.error, result.outcome, result.cleanup_pending = self.error, self.outcome, self.cleanup_pending


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


def controlled_by(obj: dict, uid: str) -> bool:
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
    )


def replace_map(old: dict | None, new: dict | None) -> dict | None:
    """A merge patch value that replaces a map (old keys not wanted become null)."""
    if not new and not old:
        return None
    patch: dict = {k: None for k in (old or {}) if k not in (new or {})}
    patch.update(new or {})
    return patch
