# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The API half of the mpijob, mpijob_info and mpijob_wait tasks, on Rest: server-side apply, scale/suspend
patches, deletion, the bounded wait, the launcher's log tail, the job's events. The decisions (what to apply,
changed or not, phase) are the core's (module_utils/mpijob/submit.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import datetime, timezone

from ..mpijob import constants as C
from ..mpijob import record as R
from ..mpijob import submit as S
from ..mpijob.errors import ApiError, Conflict, JobError, Unreachable
from ..mpijob.plan import controlled_by
from .paths import collection, item, mpijob_path
from .record import LOG_TIMEOUT, event_time, read_text
from .rest import Rest

FIELD_MANAGER = "mpi.operator"
# workers/suspend patches: a manifest applied later that sets those fields otherwise conflicts with FIELD_MANAGER.
PATCH_FIELD_MANAGER = "mpi.operator-patch"
_UNDECLARED = re.compile(r"\.(spec\S*?): field not declared in schema")
# How every wait for an MPIJob is asked for (the mpijob, mpijob_sync and mpijob_wait tasks; Jobs.wait_for waits): what
# to wait for, for how long, how often to look. The doc fragment mpi.operator.wait documents it; a module that differs
# (a type, a default, fewer targets) changes its own copy and says so in its DOCUMENTATION.
WAIT_ARG_SPEC = {
    "wait_for": {"type": "str", "choices": list(S.WAIT_TARGETS)},
    "wait_timeout": {"type": "int", "default": 600},
    "wait_sleep": {"type": "int", "default": 2},
}


def _explain(exc: ApiError, what: str) -> str:
    if exc.status == 409 and "conflict" in exc.message.lower():
        hint = (
            f" ({PATCH_FIELD_MANAGER} is the workers/suspend option of mpi.operator.mpijob)"
            if PATCH_FIELD_MANAGER in exc.message
            else ""
        )
        return (
            f"{what}: {exc.message}. Another field manager changed these fields since{hint}: put the live value "
            f"in the manifest, leave the field out, or set force_conflicts: true to take it back"
        )
    unknown = _UNDECLARED.findall(exc.message)
    if unknown:  # server-side apply's answer to a field the schema lacks, typically a typo
        return f"{what}: the API server rejected the MPIJob: unknown field {', '.join(unknown)}"
    if exc.status in (400, 422):
        return f"{what}: the API server rejected the MPIJob: {exc.message}"
    return f"{what}: {exc}"


def _not_served(api_version: str) -> str:
    return (
        f"the API server does not serve {api_version} MPIJobs: install the CRD (playbook mpi.operator.install, "
        f"role mpi.operator.crds)"
    )


class Jobs:
    """MPIJob reads and writes of one module run."""

    def __init__(
        self, rest: Rest, check_mode: bool = False, field_manager: str = FIELD_MANAGER, pods_while_running: bool = False
    ):
        self.rest, self.check_mode = rest, check_mode
        self.pods_while_running = pods_while_running  # summaries read a running job's pods too (S.needs_pods)
        self.field_manager = field_manager
        # workers/suspend patches get a manager of their own (see PATCH_FIELD_MANAGER)
        self.patch_field_manager = PATCH_FIELD_MANAGER if field_manager == FIELD_MANAGER else f"{field_manager}-patch"

    def _query(self, **extra: str) -> dict:
        query = dict(extra)
        if self.check_mode:
            query["dryRun"] = "All"
        return query

    def get(self, namespace: str, name: str, api_version: str = C.API_VERSION) -> dict | None:
        try:
            return self.rest.get(mpijob_path(api_version, namespace, name))
        except ApiError as exc:
            raise JobError(_explain(exc, f"reading MPIJob {namespace}/{name}")) from exc

    def apply(self, manifest: dict, force: bool, dry_run: bool) -> dict:
        """Server-side apply as the field manager; unknown fields are errors (fieldValidation=Strict)."""
        meta = manifest["metadata"]
        query = {"fieldManager": self.field_manager, "fieldValidation": "Strict"}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        path = mpijob_path(manifest["apiVersion"], meta["namespace"], meta["name"])
        try:
            return self.rest.request(
                "PATCH", path, json.dumps(manifest), query=query, content_type="application/apply-patch+yaml"
            )
        except ApiError as exc:
            if exc.status == 404:  # apply creates missing objects: a 404 is the kind, not the object
                raise JobError(f"applying MPIJob {S.ref(manifest)}: {_not_served(manifest['apiVersion'])}") from exc
            error = Conflict if exc.status == 409 else JobError
            raise error(_explain(exc, f"applying MPIJob {S.ref(manifest)}")) from exc

    def patch(self, job: dict, patch: dict) -> dict:
        meta = job["metadata"]
        path = mpijob_path(job["apiVersion"], meta["namespace"], meta["name"])
        try:
            return self.rest.request(
                "PATCH",
                path,
                patch,
                content_type="application/merge-patch+json",
                query=self._query(fieldManager=self.patch_field_manager, fieldValidation="Strict"),
            )
        except ApiError as exc:
            raise JobError(_explain(exc, f"patching MPIJob {S.ref(job)}")) from exc

    def delete(self, job: dict) -> None:
        """Deletes the job; its children go with it (ownerReferences, foreground: the job is gone last)."""
        meta = job["metadata"]
        body = {"propagationPolicy": "Foreground", "preconditions": {"uid": meta["uid"]}}
        if self.check_mode:
            body["dryRun"] = ["All"]  # with a body, the API server ignores the query's dryRun
        try:
            self.rest.request("DELETE", mpijob_path(job["apiVersion"], meta["namespace"], meta["name"]), body)
        except ApiError as exc:
            if exc.status != 404:
                raise JobError(_explain(exc, f"deleting MPIJob {S.ref(job)}")) from exc

    def list(self, namespace: str | None, selectors: list[str], api_version: str = C.API_VERSION) -> list[dict]:
        """The jobs of one API (none when the API server does not serve it)."""
        path = mpijob_path(api_version, namespace or "")
        try:
            return self.rest.list(path, ",".join(selectors))
        except ApiError as exc:
            raise JobError(_explain(exc, "listing MPIJobs")) from exc

    def wait(
        self, job: dict, done: Callable[[dict | None], bool], timeout: float, sleep: float, what: str
    ) -> dict | None:
        """Polls the job until `done(job)`; JobError with the last progress line on timeout."""
        meta = job["metadata"]
        deadline = time.monotonic() + timeout
        current: dict | None = job
        while not done(current):
            if time.monotonic() >= deadline:
                last = self.summary(current)["progress"] if current else "gone"
                raise JobError(
                    f"timed out after {timeout:g}s waiting for MPIJob {S.ref(job)} {what}; now: {last}", result=current
                )
            time.sleep(min(sleep, max(0.0, deadline - time.monotonic())))
            try:
                current = self.rest.get(mpijob_path(job["apiVersion"], meta["namespace"], meta["name"]))
            except (ApiError, Unreachable):
                continue  # a blip of the API server is not the end of the wait; the deadline is
        return current

    def pods(self, job: dict) -> list[dict] | None:
        """The job's pods when its summary would say why they wait (S.needs_pods), else None; unreadable: None (a
        progress line is not worth failing a wait for)."""
        if not S.needs_pods(job, self.pods_while_running):
            return None
        meta = job["metadata"]
        try:
            return self.rest.list(collection("v1", "Pod", meta["namespace"]), f"{C.JOB_NAME_LABEL}={meta['name']}")
        except (ApiError, Unreachable):
            return None

    def summary(self, job: dict) -> dict:
        """S.summary of `job` now, with what it needs read: a queued job's Workload, a waiting job's pods."""
        return S.summary(job, datetime.now(timezone.utc), self.workload(job), self.pods(job))

    def workload(self, job: dict) -> dict | None:
        """For a job queued by Kueue, its Workload (found by its job-uid label), {} when there is none yet, no Kueue,
        or it cannot be read (a progress line is not worth failing a wait for); None for any other job."""
        if not S.queued(job):
            return None
        meta = job["metadata"]
        try:
            found = self.rest.list(
                collection(C.KUEUE_API_VERSION, "Workload", meta["namespace"]), f"{C.KUEUE_JOB_UID_LABEL}={meta['uid']}"
            )
        except (ApiError, Unreachable):
            return {}
        return found[0] if found else {}

    def wait_for(
        self, job: dict, target: str, timeout: float, sleep: float, report: Callable[[dict, float], None] | None = None
    ) -> dict:
        """Polls the job until it reached `target` (S.reached), calling `report(job, seconds waited)` after each look;
        JobError on timeout (with the last progress line) or when the job is deleted meanwhile. One loop in one
        process: a wait of days costs one job in memory."""
        started = time.monotonic()

        def over(current: dict | None) -> bool:
            if current is None:
                return True
            if report is not None:
                report(current, time.monotonic() - started)
            if S.reached(current, target):
                return True
            never = S.unreachable(current, target)
            if never:
                raise JobError(never)
            return False

        current = self.wait(job, over, timeout, sleep, f"to be {target}")
        if current is None:
            raise JobError(f"MPIJob {S.ref(job)} was deleted while waiting for it to be {target}")
        return current

    def launcher(self, job: dict, lines: int) -> dict:
        """The newest launcher pod: {pod, exit, log (its last `lines` lines, all when lines <= 0), note (why no log)}.

        `lines` None reads no log."""
        meta = job["metadata"]
        found = {"pod": "", "exit": "", "log": [], "note": ""}
        selector = f"{C.JOB_NAME_LABEL}={meta['name']},{C.JOB_ROLE_LABEL}={C.ROLE_LAUNCHER}"
        try:
            pods = self.rest.list(collection("v1", "Pod", meta["namespace"]), selector)
        except ApiError as exc:
            found["note"] = f"launcher pods unreadable: {exc}"
            return found
        pod = S.newest_launcher_pod(pods)
        if pod is None:
            found["note"] = "no launcher pod (yet, or any more)"
            return found
        name = found["pod"] = pod["metadata"]["name"]
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        main = (job.get("spec") or {}).get("mainContainer") or containers[0].get("name")
        found["exit"] = S.launcher_exit(pod, main)
        if lines is None:
            return found
        query = {"container": main}
        if lines > 0:
            query["tailLines"] = str(lines)
        path = item("v1", "Pod", meta["namespace"], name) + "/log"
        try:
            found["log"] = S.tail(self._text(path, query), lines)
        except (ApiError, Unreachable) as exc:
            found["note"] = f"launcher log unavailable: pod {name}: {exc}"
            return found
        if not found["log"]:
            found["note"] = f"launcher pod {name} has an empty log"
        return found

    def _text(self, path: str, query: dict) -> str:
        """A plain-text GET (Rest parses JSON)."""
        return read_text(self.rest, path, query, LOG_TIMEOUT)

    def record(self, job: dict) -> dict | None:
        """What the operator kept of the job's pods (status.record names the ConfigMap), logs included; None when it
        kept nothing, or the ConfigMap is not the job's or cannot be read."""
        name = ((job.get("status") or {}).get("record") or {}).get("configMap")
        if not isinstance(name, str) or not name:
            return None
        meta = job["metadata"]
        try:
            found = self.rest.get(item("v1", "ConfigMap", meta["namespace"], name))
        except ApiError:
            return None
        if found is None or not controlled_by(found, meta.get("uid", "")):
            return None
        return R.summary_of(found)

    def events(self, job: dict, limit: int = 20) -> list[dict]:
        """The job's most recent events, oldest first."""
        meta = job["metadata"]
        selector = f"involvedObject.kind={C.KIND},involvedObject.name={meta['name']}"
        try:
            found = (
                self.rest.request(
                    "GET", collection("v1", "Event", meta["namespace"]), query={"fieldSelector": selector}
                ).get("items")
                or []
            )
        except ApiError:
            return []
        uid = meta.get("uid")
        found = [e for e in found if not uid or (e.get("involvedObject") or {}).get("uid") in (None, "", uid)]
        events = [
            {
                "type": e.get("type"),
                "reason": e.get("reason"),
                "message": e.get("message"),
                "count": e.get("count") or 1,
                "last_timestamp": event_time(e),
            }
            for e in found
        ]
        events.sort(key=lambda e: e["last_timestamp"] or "")
        return events[-limit:]
