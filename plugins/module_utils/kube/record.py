# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Writing a job's record (the core's record action, mpijob/record.py): the last lines of each pod's log it names
(pods/log with tailLines and limitBytes), the Warning events of the job and of those pods, then the ConfigMap the core
makes of them, created or merged into the one there. A log or event that cannot be read is noted in the record; a
ConfigMap that cannot be written raises, which stops the plan before the deletions the record precedes."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from ..mpijob import record as R
from ..mpijob.errors import ApiError, Unreachable
from ..mpijob.plan import Action, controlled_by
from .paths import collection, item
from .rest import Rest

LOG_TIMEOUT = 10.0  # a kubelet that cannot serve logs must not hold the plan for the full request timeout


def read_text(rest: Rest, path: str, query: dict, timeout: float = LOG_TIMEOUT) -> str:
    """A plain-text GET (a pod's log); raises ApiError as Rest.request does."""
    status, reason, raw = rest.raw("GET", path, query=query, accept="*/*", timeout=timeout)
    data = raw.decode(errors="replace")
    if status >= 400:
        try:
            body = json.loads(data)
        except ValueError:
            body = {"message": data[:300]}
        raise ApiError(status, reason, body if isinstance(body, dict) else {})
    return data


def event_time(e: dict) -> str | None:
    """When an Event last happened: its lastTimestamp, else its eventTime (events.k8s.io), else its creation."""
    return e.get("lastTimestamp") or e.get("eventTime") or (e.get("metadata") or {}).get("creationTimestamp")


def warning_events(rest: Rest, namespace: str, uids: list[tuple[str, str]], limit: int) -> list[dict]:
    """The Warning events of each (kind/name, uid), oldest first, `limit` at most; unreadable ones are skipped."""
    found = []
    for what, uid in uids:
        query = {"fieldSelector": f"involvedObject.uid={uid},type=Warning", "limit": str(limit)}
        try:
            items = rest.request("GET", collection("v1", "Event", namespace), query=query).get("items") or []
        except ApiError:
            continue
        keys = ("object", "reason", "message", "count", "lastTimestamp")
        found += [
            dict(zip(keys, (what, e.get("reason"), e.get("message"), e.get("count") or 1, event_time(e))))
            for e in items
        ]
    found.sort(key=lambda e: str(e.get("lastTimestamp") or ""))
    return found[-limit:]


def write_record(rest: Rest, a: Action, now: str) -> bool:
    """Reads what the record action `a` asks for and writes the record. False when a ConfigMap of that name is not the
    job's (it is left alone, and the plan goes on without a record)."""
    body = a.body or {}
    meta = body["metadata"]
    ns = meta["namespace"]
    limits = body.get("limits") or {}

    def log(entry: dict) -> tuple[str | None, str]:
        query = {
            "container": entry.get("container") or "",
            "tailLines": str(limits.get("lines") or R.Limits().lines),
            # more than is kept: the core keeps the last bytes of the last lines, the API server would cut the end
            "limitBytes": str(4 * int(limits.get("podBytes") or R.Limits().pod_bytes)),
        }
        if entry.get("previous"):
            query["previous"] = "true"
        try:
            return read_text(rest, item("v1", "Pod", ns, entry["name"]) + "/log", query), ""
        except (ApiError, Unreachable) as exc:
            return None, f"log unavailable: {exc}"

    wanted = [e for e in body.get("pods") or [] if e.get("log")]
    owner = (meta.get("ownerReferences") or [{}])[0]
    subjects = [(f"{owner.get('kind')}/{owner.get('name')}", owner.get("uid", ""))]
    subjects += [(f"Pod/{e['name']}", e["uid"]) for e in wanted if e.get("uid")]
    # at once: a kubelet that cannot serve a log (a node gone) costs one LOG_TIMEOUT, not one per pod
    with ThreadPoolExecutor(max_workers=len(wanted) + 1) as pool:
        reads = {e.get("uid") or e["name"]: pool.submit(log, e) for e in wanted}
        found_events = pool.submit(warning_events, rest, ns, subjects, R.EVENTS)
        logs = {key: read.result() for key, read in reads.items()}
        events = found_events.result()
    cm = R.record_config_map(body, logs, events, now)
    seen = body.get("seen")
    if seen is None:
        try:
            rest.request("POST", collection("v1", "ConfigMap", ns), cm)
            return True
        except ApiError as exc:
            if exc.status != 409:
                raise
        seen = rest.get(item("v1", "ConfigMap", ns, meta["name"]))
        if seen is None or not controlled_by(seen, owner.get("uid", "")):
            return False
        cm = R.record_config_map({**body, "seen": seen}, logs, events, now)
    # The resourceVersion read: a record changed since is read again by the next pass, never written over.
    patch = {"metadata": {"resourceVersion": (seen.get("metadata") or {}).get("resourceVersion")}, "data": cm["data"]}
    rest.request("PATCH", item("v1", "ConfigMap", ns, meta["name"]), patch, content_type="application/merge-patch+json")
    return True
