# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Resumable watches of MPIJobs and their children, each event mapped to the MPIJob it concerns.

One thread per resource: list (paged) -> watch from the list's resourceVersion with bookmarks ->
resume from the last resourceVersion seen when the watch ends -> relist on 410 Gone. Objects are
handled as plain JSON dicts: the client's model deserialisation is the slow part of a Python watch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.kube.paths import collection
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import by_group, group_of
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.constants import GROUP, PLURAL
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Key, job_key

from .store import Store, kept

log = logging.getLogger("mpijob_operator.watch")

OPERATOR_LABEL = f"{C.OPERATOR_NAME_LABEL}={C.OPERATOR_NAME}"  # every pod the reconcile module creates has it


def _deleting(obj: dict[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _digest(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def mpijob_fingerprint(obj: dict[str, Any]) -> Any:
    """The spec (generation) and deletion: a status-only write (ours) is not a reason to reconcile."""
    return ((obj.get("metadata") or {}).get("generation"), _deleting(obj))


def pod_fingerprint(obj: dict[str, Any]) -> Any:
    """What the job's status, its hostfile and its failure policy depend on: phase, readiness, eviction, a disruption
    on its way (DisruptionTarget), deletion."""
    status = obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or [] if isinstance(c, dict)}
    ready, disruption = conditions.get("Ready"), conditions.get(C.DISRUPTION_TARGET)
    return (status.get("phase"), ready, status.get("reason"), disruption, _deleting(obj))


def job_fingerprint(obj: dict[str, Any]) -> Any:
    """The launcher Job as the status reads it: suspended, started, its conditions, succeeded/failed counts.
    Its active/ready counts are left out: the launcher pod's own events carry those."""
    status = obj.get("status") or {}
    conditions = sorted((c.get("type"), c.get("status"), c.get("reason")) for c in status.get("conditions") or [])
    counts = (status.get("succeeded"), status.get("failed"), bool(status.get("startTime")))
    return ((obj.get("spec") or {}).get("suspend"), tuple(conditions), counts, _deleting(obj))


def content_fingerprint(obj: dict[str, Any]) -> Any:
    """Services, ConfigMaps, Secrets: their content and owner (drift from what the module wrote)."""
    meta = obj.get("metadata") or {}
    content = {k: obj.get(k) for k in ("spec", "data", "binaryData", "type")}
    return (_digest(content), _digest(meta.get("ownerReferences")), _digest(meta.get("labels")), _deleting(obj))


class Relevance:
    """Drops events that change nothing a reconcile looks at (a pod being bound, our own status write).

    Keeps one small fingerprint per object uid; DELETED and relist events always count."""

    def __init__(self, fingerprint: Callable[[dict[str, Any]], Any]):
        self.fingerprint = fingerprint
        self.seen: dict[str, Any] = {}

    def __call__(self, kind: str, obj: dict[str, Any]) -> bool:
        uid = (obj.get("metadata") or {}).get("uid") or ""
        if kind == "DELETED":
            self.seen.pop(uid, None)
            return True
        fp = self.fingerprint(obj)
        changed = self.seen.get(uid, _UNSEEN) != fp
        self.seen[uid] = fp
        return changed or kind == "LIST"


_UNSEEN = object()


@dataclass(frozen=True)
class Resource:
    """A watched resource: where to list it and how to map its objects to MPIJob keys."""

    name: str  # e.g. "pods"
    kind: str  # e.g. "Pod": the kind the reconcile module names in its actions
    api_version: str  # e.g. "v1": with the kind, where it lives (rest.collection)
    label_selector: str | None
    to_keys: Callable[[dict[str, Any]], list[Key]]
    fingerprint: Callable[[dict[str, Any]], Any]
    # Not needed for readiness: an API the cluster may not serve (a gang scheduler's PodGroups); its watch retries.
    optional: bool = False

    def url(self, namespace: str) -> str:
        """The collection of `namespace`, or of every namespace when it is empty."""
        return collection(self.api_version, self.kind, namespace)


def mpijob_keys(obj: dict[str, Any]) -> list[Key]:
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        return []
    api_version = obj.get("apiVersion")
    return [job_key(meta.get("namespace", ""), meta["name"], api_version if isinstance(api_version, str) else None)]


def owner_keys(obj: dict[str, Any]) -> list[Key]:
    """The MPIJob that controls this object (its controller ownerReference of kind MPIJob, of any served API)."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        api_version = str(ref.get("apiVersion", ""))
        if ref.get("controller") and ref.get("kind") == C.KIND and by_group(group_of(api_version)) is not None:
            return [job_key(meta.get("namespace", ""), ref["name"], api_version)]
    return []


def pod_keys_for(groups: tuple[str, ...]) -> Callable[[dict[str, Any]], list[Key]]:
    """Workers are owned by the MPIJob; the launcher pod by the launcher Job: both carry the job-name label, which
    does not say the job's API, so a launcher pod's event concerns that name in each watched API (a name that is not
    a job of an API costs one GET in the next run, which reports it gone)."""
    apis = [a for a in (by_group(g) for g in groups) if a is not None]

    def pod_keys(obj: dict[str, Any]) -> list[Key]:
        keys = owner_keys(obj)
        if keys:
            return keys
        meta = obj.get("metadata") or {}
        job = (meta.get("labels") or {}).get(C.JOB_NAME_LABEL)
        if job and any(r.get("kind") == "Job" for r in meta.get("ownerReferences") or []):
            ns = meta.get("namespace", "")
            return [job_key(ns, job, a.api_version) for a in apis]
        return []

    return pod_keys


pod_keys = pod_keys_for((GROUP,))


# The PodGroup API of each gang scheduler, as the reconcile module creates them.
PODGROUP_APIS = {C.VOLCANO: C.VOLCANO_PODGROUP_API}


def podgroup_fingerprint(obj: dict[str, Any]) -> Any:
    """A PodGroup as the reconcile reads it: its spec and owner (the scheduler's status updates are not ours)."""
    meta = obj.get("metadata") or {}
    return (_digest(obj.get("spec")), _digest(meta.get("ownerReferences")), _deleting(obj))


def resources(
    child_selector: str | None = None, gang_scheduling: str = "", apis: tuple[str, ...] = (GROUP,)
) -> list[Resource]:
    """The MPIJobs of each API group of `apis` and every kind of child the reconcile module creates (PodGroups only
    with gang scheduling; they carry no labels, as Kubeflow's do not, so all of them are watched and mapped by owner).
    Raises ValueError for a group that is not an MPIJob API served here."""
    podgroups = []
    if gang_scheduling:
        api = PODGROUP_APIS.get(gang_scheduling, C.PLUGINS_PODGROUP_API)
        podgroups = [Resource("podgroups", "PodGroup", api, None, owner_keys, podgroup_fingerprint, optional=True)]
    return [
        *(mpijob_resource(group) for group in apis),
        Resource("pods", "Pod", "v1", OPERATOR_LABEL, pod_keys_for(apis), pod_fingerprint),
        Resource("jobs", "Job", "batch/v1", child_selector, owner_keys, job_fingerprint),
        Resource("services", "Service", "v1", child_selector, owner_keys, content_fingerprint),
        Resource("configmaps", "ConfigMap", "v1", child_selector, owner_keys, content_fingerprint),
        Resource("secrets", "Secret", "v1", child_selector, owner_keys, content_fingerprint),
        *podgroups,
    ]


def mpijob_resource(group: str) -> Resource:
    """The watch of one API's MPIJobs; kubeflow.org's keeps its name (`mpijobs`: metrics and logs name it)."""
    api = by_group(group)
    if api is None:
        raise ValueError(f"{group!r} is not an MPIJob API group served here")
    name = PLURAL if group == GROUP else f"{PLURAL}.{group}"
    return Resource(name, C.KIND, api.api_version, None, mpijob_keys, mpijob_fingerprint)


@dataclass(frozen=True)
class Change:
    """One watch event about a job's object: its kind and name, and ADDED / MODIFIED / DELETED / LIST."""

    kind: str
    name: str
    event: str


class WatchState:
    """Bookkeeping of one watch: where to resume, and whether a relist is needed. Pure."""

    def __init__(self) -> None:
        self.resource_version: str | None = None
        self.synced = False

    def listed(self, resource_version: str) -> None:
        self.resource_version = resource_version
        self.synced = True

    def event(self, event: dict[str, Any]) -> str:
        """Records an event; returns what to do: 'dispatch', 'skip' (bookmark) or 'relist' (410 Gone)."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                self.resource_version = None
                return "relist"
            raise WatchError(f"watch error {obj.get('code')}: {obj.get('reason')}: {obj.get('message')}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = rv
        return "skip" if kind == "BOOKMARK" else "dispatch"

    def gone(self) -> None:
        self.resource_version = None


class WatchError(Exception):
    pass


class Watcher(threading.Thread):
    """Lists then watches one resource forever, calling `enqueue(key)` for every object event."""

    def __init__(
        self,
        api_client: Any,  # the shell's Rest (mpijob_operator.client.api_client)
        resource: Resource,
        namespace: str,
        enqueue: Callable[[Key, Change], None],
        *,
        on_synced: Callable[[str], None] | None = None,
        on_event: Callable[[str], None] | None = None,
        on_restart: Callable[[str, str], None] | None = None,
        watch_timeout: int = 300,
        page_size: int = 500,
        store: Store | None = None,
    ):
        super().__init__(name=f"watch-{resource.name}", daemon=True)
        self.api = api_client
        self.resource = resource
        self.namespace = namespace
        self.enqueue = enqueue
        self.on_synced = on_synced or (lambda _name: None)
        self.on_event = on_event or (lambda _name: None)
        self.on_restart = on_restart or (lambda _name, _reason: None)
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.store = store  # keeps what was watched for the batches' worlds (store.py)
        self.state = WatchState()
        self.relevant = Relevance(resource.fingerprint)
        self._stop = threading.Event()
        self._response: Any = None
        self.error_backoff = 0.0

    # -- HTTP --------------------------------------------------------------------------------
    def _get(self, query: dict[str, Any], timeout: float | tuple[float, float]) -> Any:
        """A raw GET through the shell's transport: the response, body not read yet (no model deserialisation)."""
        params = {k: v for k, v in query.items() if v is not None}
        return self.api.stream(self.resource.url(self.namespace), params, timeout)

    def list_all(self) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        cont: str | None = None
        while True:
            resp = self._get(
                {"labelSelector": self.resource.label_selector, "limit": self.page_size, "continue": cont}, timeout=60
            )
            try:
                data = json.loads(resp.data)
            finally:
                resp.release_conn()
            if resp.status >= 400:
                raise WatchError(f"list {self.resource.name}: HTTP {resp.status}: {data.get('message')}")
            items.extend(data.get("items") or [])
            meta = data.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                return items, meta.get("resourceVersion", "")

    def stream(self) -> Iterable[dict[str, Any]]:
        resp = self._get(
            {
                "watch": "true",
                "labelSelector": self.resource.label_selector,
                "resourceVersion": self.state.resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": self.watch_timeout,
            },
            timeout=(10, self.watch_timeout + 30),
        )
        self._response = resp
        try:
            if resp.status == 410:
                yield {"type": "ERROR", "object": {"code": 410}}
                return
            if resp.status >= 400:
                raise WatchError(f"watch {self.resource.name}: HTTP {resp.status}: {resp.data[:200]!r}")
            buf = b""
            for chunk in resp.stream(amt=65536, decode_content=False):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
                if self._stop.is_set():
                    return
        finally:
            self._response = None
            resp.release_conn()

    # -- loop --------------------------------------------------------------------------------
    def dispatch(self, obj: dict[str, Any], kind: str) -> None:
        self.on_event(self.resource.name)
        keys = self.resource.to_keys(obj)
        if self.store is not None:  # kept before the job is queued: its batch sees at least this
            self.store.put(self.resource.kind, keys, obj, kept(self.resource.kind, obj), kind)
        if not self.relevant(kind, obj):
            return
        name = (obj.get("metadata") or {}).get("name", "")
        for key in keys:
            self.enqueue(key, Change(self.resource.kind, name, kind))

    def relist(self) -> None:
        items, rv = self.list_all()
        self.relevant.seen.clear()  # forget objects deleted while we were not watching
        if self.store is not None:
            self.store.relisting(self.resource.name, self.resource.kind, self.resource.api_version)
        for obj in items:
            self.dispatch(obj, "LIST")
        if self.store is not None:
            self.store.relisted(self.resource.name)
        self.state.listed(rv)
        self.on_synced(self.resource.name)

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.state.resource_version is None:
                    self.relist()
                for event in self.stream():
                    what = self.state.event(event)
                    if what == "relist":
                        self.on_restart(self.resource.name, "gone")
                        log.info("watch expired (410 Gone): relisting", extra={"resource": self.resource.name})
                        break
                    if what == "dispatch":
                        self.dispatch(event.get("object") or {}, event.get("type", ""))
                self.error_backoff = 0.0
            except Exception as exc:
                if self._stop.is_set():
                    return
                self.on_restart(self.resource.name, "error")
                self.error_backoff = min(30.0, max(0.5, self.error_backoff * 2))
                log.warning(
                    "watch failed: %s; retrying in %.1fs",
                    exc,
                    self.error_backoff,
                    extra={"resource": self.resource.name},
                )
                if _is_unauthorized(exc):
                    log.error("the operator may not watch %s: check its RBAC", self.resource.name)
                self._stop.wait(self.error_backoff)

    def stop(self) -> None:
        self._stop.set()
        self.stop_current_watch()

    def stop_current_watch(self) -> None:
        """Ends the open watch request; the loop then resumes from `state.resource_version`."""
        resp = self._response
        if resp is not None:
            with contextlib.suppress(Exception):  # it may be closing already
                resp.shutdown() if hasattr(resp, "shutdown") else resp.close()


def _is_unauthorized(exc: Exception) -> bool:
    text = str(exc)
    return "HTTP 401" in text or "HTTP 403" in text
