# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Carrying one job's plan out: the Applier creates, merge patches, deletes with a uid precondition, writes the status
subresource and events, in the plan's order, and turns API errors into the job's JobResult (kube/reconcile.py hands
it each plan)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from ..mpijob import constants as C
from ..mpijob import status as S
from ..mpijob.errors import ApiError
from ..mpijob.plan import Action, Plan, World, api_error_outcome, controlled_by
from ..mpijob.planner import rejected
from ..mpijob.protocol import JobResult, Outcome
from .paths import collection, item, mpijob_path
from .record import write_record
from .rest import Rest


class Applier:
    """Carries out one job's plan, in order; turns API errors into the job's result."""

    def __init__(self, rest: Rest, obj: dict, result: JobResult, versions: dict[tuple[str, str], str] | None = None):
        self.rest, self.obj, self.result = rest, obj, result
        # (kind, name) -> the resourceVersion of each child the plan was made from: a patch carries it, so a child
        # that changed since (the world was stale) is refused with a 409 and the job retried, never overwritten.
        self.versions = dict(versions or {})
        self.namespace = obj["metadata"]["namespace"]
        self.name = obj["metadata"]["name"]
        self.uid = obj["metadata"].get("uid", "")
        self.path = mpijob_path(result.key.api_version, self.namespace, self.name)  # where it was read
        # The Event reasons of the transitions this pass writes -> since when an Event of that name is this
        # transition's (its condition's lastTransitionTime as read; "" when it had none): see event().
        self.since: dict[str, str] = {}
        self.refused: tuple[Action, ApiError] | None = None  # a create the API server refused (400, 422)

    def apply(self, plan: Plan, actions: list[Action] | None = None) -> bool:
        """Carries out `actions` (the plan's, by default) in order; False when one stopped the plan."""
        old = {c.get("type"): c for c in (self.obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
        self.since = {t.reason: str((old.get(t.type) or {}).get("lastTransitionTime") or "") for t in plan.transitions}
        for action in plan.actions if actions is None else actions:
            try:
                if not self.do(action):
                    return False
            except ApiError as exc:
                if not self.failed(action, exc):
                    return False
            self.result.actions.append(action.summary())
            if action.action == "status":
                self.result.transitions = list(plan.transitions)  # written: the core's transitions happened
                self.result.restart = plan.restart  # and the restart it records
        return True

    def do(self, a: Action) -> bool:
        """False stops the plan (the error is already in the result)."""
        ns = self.namespace
        if a.action == "create":
            try:
                self.rest.send("POST", collection(a.api_version, a.kind, ns), a.body)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                return self.exists(a)
        elif a.action == "patch":
            path = item(a.api_version, a.kind, ns, a.name) + (f"/{a.subresource}" if a.subresource else "")
            body, version = a.body or {}, self.versions.get((a.kind, a.name))
            if version:
                body = dict(body, metadata=dict(body.get("metadata") or {}, resourceVersion=version))
            patched = self.rest.request("PATCH", path, body, content_type="application/merge-patch+json")
            if version and isinstance(patched, dict):  # a second patch of it in this plan goes from this one
                self.versions[(a.kind, a.name)] = (patched.get("metadata") or {}).get("resourceVersion") or version
        elif a.action == "delete":
            # Background: what the object owns goes with it. Without a policy the API server orphans a batch/v1
            # Job's pods (its legacy default), so a deleted launcher Job would leave its pod running.
            body: dict = {"propagationPolicy": "Background"}
            if a.force:
                body["gracePeriodSeconds"] = 0
            if a.uid:
                body["preconditions"] = {"uid": a.uid}
            try:
                self.rest.send("DELETE", item(a.api_version, a.kind, ns, a.name), body)
            except ApiError as exc:
                if exc.status != 404:  # already gone is what we wanted
                    raise
        elif a.action == "status":
            body = dict(self.obj, status=a.body)
            written = self.rest.request("PUT", self.path + "/status", body)
            self.result.status = written.get("status")
            self.result.resource_version = (written.get("metadata") or {}).get("resourceVersion")
        elif a.action == "event":
            self.event(a.body or {})
        elif a.action == "record":
            # before the deletions it precedes; a ConfigMap of that name that is not the job's is left alone
            write_record(self.rest, a, S.rfc3339(datetime.now(timezone.utc)))
        elif a.action == "delete-mpijob":
            try:
                self.rest.request(
                    "DELETE", self.path, {"preconditions": {"uid": a.uid}, "propagationPolicy": "Background"}
                )
            except ApiError as exc:
                if exc.status != 404:
                    raise
            self.result.outcome, self.result.status = Outcome.DELETED, None
        return True

    def exists(self, a: Action) -> bool:
        """A create met an object of that name: ours (a stale read, retry later) or someone else's (no takeover)."""
        current = self.rest.get(item(a.api_version, a.kind, self.namespace, a.name))
        if current is not None and not controlled_by(current, self.uid):
            msg = C.MESSAGE_RESOURCE_EXISTS.format(name=a.name, kind=a.kind)
            self.event({"type": "Warning", "reason": C.REASON_RESOURCE_EXISTS, "message": msg})
            self.result.actions.append(
                {
                    "action": "event",
                    "kind": "Event",
                    "name": C.REASON_RESOURCE_EXISTS,
                    "reason": C.REASON_RESOURCE_EXISTS,
                }
            )
            self.result.error, self.result.outcome = msg, Outcome.RETRY
            return False
        self.result.outcome = Outcome.RETRY
        return True

    def failed(self, a: Action, exc: ApiError) -> bool:
        """True to go on with the next action. The outcome is api_error_outcome's."""
        self.result.outcome = api_error_outcome(a.action, exc.status)
        if self.result.outcome is Outcome.DELETED:
            self.result.status = None
            return False
        if exc.status in (404, 409) and a.action in ("patch", "event"):
            return True  # vanished or changed under us: the rest of the plan goes on, the next reconcile sees it
        self.result.error = f"{a.action} {a.kind} {a.name}: {exc}"
        if self.result.outcome is Outcome.ERROR:
            # The API refuses what the template asks for: the job fails naming the field (refused below).
            self.refused = (a, exc)
        return False

    def refuse(self, a: Action, exc: ApiError, now: datetime) -> None:
        """After the create `a` was refused (400, 422): the core's plan for it (the job Failed, ValidationError,
        naming its template's field), carried out. The refusal stays the result's error."""
        error = self.result.error
        plan = rejected(self.obj, a.kind, a.name, exc.message, now)
        plan.fill(self.result)
        head, tail = split_after_status(plan)
        if self.apply(plan, head):  # an API error is the result's (failed), as in any plan
            self.apply(plan, tail)
        self.result.error, self.result.outcome = error, Outcome.ERROR

    def event(self, ev: dict) -> None:
        """A core/v1 Event on the MPIJob; repeats of the same event bump its count instead of piling up.

        The Event of a transition is written before the status that records it (split_after_status): when a pass
        stops in between (the operator killed), the next pass makes the same transition and the same Event, which
        then exists already. That one is not counted again: an Event of that name last seen at or after the time its
        condition last changed (as read) is this transition's. A transition made again later (Running, then a worker
        failed, then Running again) finds an older Event and counts it."""
        now = S.rfc3339(datetime.now(timezone.utc))
        digest = hashlib.sha256(f"{self.uid}/{ev['type']}/{ev['reason']}/{ev['message']}".encode()).hexdigest()[:16]
        name = f"{self.name}.{digest}"
        body = {
            "metadata": {"name": name, "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": self.obj.get("apiVersion", C.API_VERSION),
                "kind": C.KIND,
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
            },
            "type": ev["type"],
            "reason": ev["reason"],
            "message": ev["message"],
            "source": {"component": C.EVENT_COMPONENT},
            "reportingComponent": C.EVENT_COMPONENT,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        path = collection("v1", "Event", self.namespace)
        try:
            self.rest.send("POST", path, body)
        except ApiError as exc:
            if exc.status != 409:
                raise
            current = self.rest.get(f"{path}/{name}") or {}
            since = self.since.get(ev["reason"])
            if since is not None and str(current.get("lastTimestamp") or "") >= since:
                return
            self.rest.request(
                "PATCH",
                f"{path}/{name}",
                {"count": int(current.get("count") or 1) + 1, "lastTimestamp": now},
                content_type="application/merge-patch+json",
            )


def versions(world: World) -> dict[tuple[str, str], str]:
    """(kind, name) -> resourceVersion of each child of the world (Applier's preconditions)."""
    out: dict[tuple[str, str], str] = {}
    named = [
        ("Service", world.service),
        ("ConfigMap", world.config_map),
        ("ConfigMap", world.record),
        ("Secret", world.secret),
        ("Job", world.launcher),
        ("PodGroup", world.pod_group),
        *(("Pod", p) for p in world.pods),
        *world.launcher_rbac.items(),
    ]
    for kind, obj in named:
        meta = (obj or {}).get("metadata") or {}
        if meta.get("name") and meta.get("resourceVersion"):
            out[(kind, meta["name"])] = meta["resourceVersion"]
    return out


def split_after_status(plan: Plan) -> tuple[list[Action], list[Action]]:
    """(the actions up to the status write, the Events of the transitions it writes, the status write; the other
    Events and what comes after it: a finished job's clean-up); all of them first when there is no status write.

    A transition's Event goes before the status: written after it, a pass stopped in between would lose it for good
    (the next pass sees no transition). Written before, the next pass writes it again, and event() knows it."""
    actions = plan.actions
    at = next((i for i, a in enumerate(actions) if a.action == "status"), None)
    if at is None:
        return list(actions), []
    reasons = {t.reason for t in plan.transitions}
    after = list(enumerate(actions))[at + 1 :]
    first = [i for i, a in after if a.action == "event" and a.reason in reasons]
    return ([*actions[:at], *(actions[i] for i in first), actions[at]], [a for i, a in after if i not in first])
