# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The record of what happened to a job's pods, kept before the operator deletes them and when the job fails: a
ConfigMap `<job>-record` owned by the job (it goes when the job goes), which `mpijob_info` and `submit.yml` show once
the pods are gone and `status.record` names.

The core decides what is kept (`record_action`): the launcher's newest pod and each failed one, and every failed or
evicted worker, with how each ended (phase, reason, exit code, node); which of them get the last lines of their log,
within the limits; and, once the shell has read those logs and the job's Warning events, the ConfigMap itself
(`record_config_map`), merged into the one already there: a pod recorded once is never recorded again, so a later pass
never rewrites the record to less. The shell (kube/record.py) reads the logs and writes the ConfigMap, in the plan's
order: the record before the deletions it precedes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import constants as C
from . import status as S
from .plan import Action
from .quantity import parse_quantity

SUFFIX = "-record"
SUMMARY = "record.json"  # the structured part; each log is a key `<pod>.log` of its own (kubectl describe shows it)
REASON = "MPIJobRecorded"
ROLE_LABEL_VALUE = "record"  # its training.kubeflow.org/job-role: not a pod's role, so no pod selector matches it
MOST_PODS = 100  # pods described in one record; more are counted, not described
SUMMARY_ROOM = 16 * 1024  # of the total kept for record.json and the events
EVENTS = 20  # the newest Warning events kept
MESSAGE_LOG = "terminationMessage"  # of a record action's pod entry only: never written into record.json


@dataclass(frozen=True)
class Limits:
    """How much of each pod's log, and of the whole record, is kept (the operator's --record-* flags)."""

    lines: int = C.RECORD_LINES
    pod_bytes: int = C.RECORD_POD_BYTES
    total_bytes: int = C.RECORD_TOTAL_BYTES

    def logs_allowed(self, used: int) -> int:
        """How many more logs fit in a record whose data already takes `used` bytes."""
        return max(0, (self.total_bytes - SUMMARY_ROOM - used) // self.pod_bytes) if self.pod_bytes else 0


MOST_BYTES = 900 * 1024  # below the 1 MiB the API server stores of one object, with room for its metadata


def byte_size(value: object, option: str) -> int:
    """A size in bytes written as a Kubernetes quantity (8192, 8Ki, 64k); raises ValueError naming `option`."""
    try:
        size = parse_quantity(value)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None
    if size.denominator != 1 or size < 0:
        raise ValueError(f"{option}: must be a whole number of bytes, got {value!r}")
    return int(size)


def parse_limits(lines: object, pod_bytes: object, total_bytes: object, options: tuple[str, str, str]) -> Limits:
    """The record's limits as an operator flag or a module option gives them (`options`: their names, in this
    order); raises ValueError naming the bad one."""
    lines_opt, pod_opt, total_opt = options
    if isinstance(lines, bool) or not isinstance(lines, int) or not 0 <= lines <= 10000:
        raise ValueError(f"{lines_opt}: must be an integer from 0 to 10000, got {lines!r}")
    pod, total = byte_size(pod_bytes, pod_opt), byte_size(total_bytes, total_opt)
    if not 0 <= pod <= 256 * 1024:
        raise ValueError(f"{pod_opt}: must be from 0 to 256Ki bytes, got {pod_bytes!r}")
    if not SUMMARY_ROOM + pod <= total <= MOST_BYTES:
        raise ValueError(
            f"{total_opt}: must be from {SUMMARY_ROOM // 1024}Ki plus {pod_opt} (room for the summary and one log) "
            f"to {MOST_BYTES // 1024}Ki (a ConfigMap holds at most 1Mi), got {total_bytes!r}"
        )
    return Limits(lines, pod, total)


def record_name(job_name: str) -> str:
    return job_name + SUFFIX


def log_key(name: str, taken: set[str]) -> str:
    """The data key of a pod's log: `<pod>.log`, or `<pod>.<n>.log` when a pod of that name was recorded before (a
    worker made again after a restart)."""
    key, n = f"{name}.log", 1
    while key in taken:
        n += 1
        key = f"{name}.{n}.log"
    return key


def _terminated(pod: dict) -> tuple[str, dict]:
    """(container name, terminated state) of the pod's container that ended worst: a non-zero exit first."""
    found = S.terminated_containers(pod)
    bad = [f for f in found if f[1].get("exitCode") not in (0, None)]
    return (bad or found or [("", {})])[0]


def _disrupted(pod: dict) -> bool:
    """Evicted, preempted, or its node drained: the pod's DisruptionTarget condition."""
    return S.is_true(pod.get("status") or {}, C.DISRUPTION_TARGET)


def failed(pod: dict) -> bool:
    """A pod that failed, was evicted or preempted, or whose container exited non-zero (a restarted one too); not one
    that ended because it was being deleted without a disruption (the clean-up's own deletion, a user's): its exit
    code says how it was stopped, not why the job failed."""
    st = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp") and not _disrupted(pod):
        return False
    if S.pod_phase(pod) == "Failed" or st.get("reason") == "Evicted" or _disrupted(pod):
        return True
    return _terminated(pod)[1].get("exitCode") not in (0, None)


def _restarted_after_failure(pod: dict) -> bool:
    """A container of the pod exited non-zero and was started again in place (restartPolicy OnFailure, the launcher's
    default): its log is the previous container's."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        last = (cs.get("lastState") or {}).get("terminated") or {}
        if last.get("exitCode") not in (0, None) and not (cs.get("state") or {}).get("terminated"):
            return True
    return False


def _restarted(pod: dict) -> bool:
    """A container of the pod was started again in place. A launcher's pod is a Job's, so its restartPolicy is OnFailure
    or Never: a restart follows a failure (or the loss of the pod's sandbox, a node's reboot)."""
    return any(int(cs.get("restartCount") or 0) > 0 for cs in (pod.get("status") or {}).get("containerStatuses") or [])


def launcher_failed(pod: dict) -> bool:
    """A launcher pod to keep as soon as its container failed. With the launcher's default restartPolicy OnFailure the
    Job controller deletes the pod once the Job's backoffLimit is spent, and its log with it, about a second after the
    kubelet reports the restart: before the job is Failed, often before the restart itself is seen (a container that
    fails at once is reported exited again, `restartCount` 1, in the same update), and under load before any pass sees
    the pod (the operator then plans from its last state: World.gone_pods). A restarted pod counts even while it is
    being deleted (its restart was not the deletion's). A launcher pod that failed for good (restartPolicy Never, an
    eviction) is not active, so the Job controller leaves it be: it stays until the job's clean-up, which keeps it
    first."""
    return _restarted(pod)


def facts(pod: dict, role: str, main: str | None) -> dict:
    """How a pod ended (or stood), in a few words: what a record says of it."""
    st = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    container, term = _terminated(pod)
    containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    container = container or (main if main in containers else (containers or [""])[0]) or ""
    out = {
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "role": role,
        "phase": st.get("phase") or "",
        "reason": term.get("reason") or st.get("reason") or "",
        "exitCode": term.get("exitCode"),
        "node": (pod.get("spec") or {}).get("nodeName") or "",
        "container": container,
        "message": S.truncate(term.get("message") or st.get("message") or "")[:512],
        "startedAt": term.get("startedAt") or st.get("startTime") or "",
        "finishedAt": term.get("finishedAt") or "",
        "restarts": sum(int(cs.get("restartCount") or 0) for cs in st.get("containerStatuses") or []),
        # the log to read is the failed container's, the one before the restart (pods/log?previous=true)
        "previous": _restarted_after_failure(pod) or None,
        # the whole termination message (the log's last lines when terminationMessagePolicy is FallbackToLogsOnError,
        # the launcher's default here): the log kept when the pod is gone before its log is read (record_config_map)
        MESSAGE_LOG: term.get("message") or None,
    }
    return {k: v for k, v in out.items() if v not in ("", None) or k in ("name", "uid", "exitCode")}


def identity(pod: dict) -> str:
    """What tells a pod from another of the same name (a worker made again): its uid, else its name."""
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or meta.get("name") or "")


def recorded(record: dict | None) -> dict:
    """The summary of a record ConfigMap as read ({} when there is none, or it is unreadable)."""
    text = ((record or {}).get("data") or {}).get(SUMMARY)
    try:
        summary = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return summary if isinstance(summary, dict) else {}


def _used(record: dict | None) -> int:
    return sum(len(k) + len(v) for k, v in ((record or {}).get("data") or {}).items() if isinstance(v, str))


def record_action(
    job_name: str,
    meta: dict,
    record: dict | None,
    launcher_pods: list[dict],
    workers: list[dict],
    going: list[dict],
    job_failed: bool,
    why: str,
    main: str | None,
    limits: Limits,
) -> Action | None:
    """What to keep before `going` (pods this plan deletes) are gone, or because the job failed (`job_failed`): the
    launcher's newest pod and each failed one, each failed or evicted worker, less those `record` (the ConfigMap as
    read) holds already; and a launcher pod as soon as it failed (launcher_failed), whatever else happens. None when
    there is nothing new to keep. `meta` is the record's metadata (name, namespace, labels, owner reference); `main`
    the name of the MPI container (the one whose log is kept)."""
    if record is not None and not any(
        r.get("uid") == ((meta.get("ownerReferences") or [{}])[0]).get("uid")
        for r in (record.get("metadata") or {}).get("ownerReferences") or []
    ):
        return None  # someone else's ConfigMap of that name: never written over
    going_ids = {identity(p) for p in going}
    launchers = sorted(launcher_pods, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "")
    # oldest first, so that the newest launcher is the last one a record holds
    kept_launchers = [
        p
        for i, p in enumerate(launchers)
        if ((identity(p) in going_ids or job_failed) and (i == len(launchers) - 1 or failed(p))) or launcher_failed(p)
    ]
    kept_workers = sorted(
        (p for p in workers if failed(p) and (identity(p) in going_ids or job_failed)),
        key=lambda p: (_terminated(p)[1].get("finishedAt") or "~", (p.get("metadata") or {}).get("name", "")),
    )
    summary = recorded(record)
    have = {p.get("uid") or p.get("name") for p in summary.get("pods") or [] if isinstance(p, dict)}
    new = [
        facts(p, role, main)
        for role, pods in ((C.ROLE_LAUNCHER, kept_launchers), (C.ROLE_WORKER, kept_workers))
        for p in pods
        if identity(p) not in have
    ]
    if not new:
        return None
    room = max(0, MOST_PODS - len(have))
    described, omitted = new[:room], len(new) - len(new[:room])
    # the logs that fit: the newest launcher's first, then the workers' in the order they failed, then older launchers'
    launchers_new = [e for e in described if e["role"] == C.ROLE_LAUNCHER]
    by_need = launchers_new[-1:] + [e for e in described if e["role"] != C.ROLE_LAUNCHER] + launchers_new[:-1]
    logs = limits.logs_allowed(_used(record))
    for i, entry in enumerate(by_need):
        entry["log"] = i < logs
    body = {
        "metadata": meta,
        "why": why,
        "pods": described,
        "omitted": omitted,
        "limits": {"lines": limits.lines, "podBytes": limits.pod_bytes, "totalBytes": limits.total_bytes},
        "seen": record,
    }
    return Action("record", "ConfigMap", meta["name"], reason=why, body=body, api_version="v1")


def event_message(action: Action) -> str:
    """The Normal event that says a record was kept, and of what."""
    body = action.body or {}
    parts = []
    for entry in body.get("pods") or []:
        how = ", ".join(
            x
            for x in (
                entry.get("reason") or entry.get("phase"),
                f"exit code {entry['exitCode']}" if entry.get("exitCode") is not None else "",
            )
            if x
        )
        parts.append(f"{entry.get('role')} {entry.get('name')}" + (f" ({how})" if how else ""))
    omitted = body.get("omitted") or 0
    more = f" and {omitted} more pods" if omitted else ""
    return S.truncate(f"Kept the record of {', '.join(parts)}{more} in ConfigMap {action.name} ({body.get('why')})")


# A log's control characters but the tab and the line ends: a program's NUL padding or terminal codes would make the
# record unreadable (and a NUL is refused by some of what reads a ConfigMap: YAML emitters, terminals).
_CONTROL = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127])


def tail(text: str, lines: int, most: int) -> str:
    """The last `lines` lines of `text`, at most `most` bytes of them (whole lines; a longer last line cut at its
    start), as UTF-8, control characters but the tab removed."""
    kept = text.translate(_CONTROL).splitlines()[-lines:] if lines > 0 else []
    out = "\n".join(kept) + ("\n" if kept else "")
    data = out.encode()
    if len(data) <= most:
        return out
    if data[-most - 1 : -most] == b"\n":
        return data[-most:].decode(errors="ignore")  # the cut falls between two lines
    cut = data[-most:].decode(errors="ignore")
    newline = cut.find("\n")
    return cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut


def record_config_map(body: dict, logs: dict[str, tuple[str | None, str]], events: list[dict], now: str) -> dict:
    """The record ConfigMap once the shell has read what `body` (a record action's) asks for: `logs` by pod uid, (the
    log's last lines or None, why there is none); `events` the Warning events of the job and of those pods, newest
    last. Merged into the record `body` saw: its pods and logs are kept as they were, the new ones added; its events
    are replaced by the newer list when that is not shorter."""
    seen = body.get("seen") or {}
    data = dict(seen.get("data") or {})
    summary = recorded(seen)
    limits = body.get("limits") or {}
    pods = [p for p in summary.get("pods") or [] if isinstance(p, dict)]
    have = {p.get("uid") or p.get("name") for p in pods}
    added = []
    for entry in body.get("pods") or []:
        if (entry.get("uid") or entry.get("name")) in have:
            continue  # recorded once, never again (the record there was written after the plan read it)
        have.add(entry.get("uid") or entry.get("name"))
        added.append(entry["name"])
        entry = dict(entry)
        wants_log = entry.pop("log", False)
        message = entry.pop(MESSAGE_LOG, None)
        text, note = logs.get(entry.get("uid") or entry.get("name", ""), (None, "not read"))
        if wants_log and not text and message:
            # the pod went before its log was read (the Job controller deletes a launcher's pod once the backoffLimit is
            # spent): its container's termination message holds the log's last lines (FallbackToLogsOnError)
            entry["logNote"] = f"{note or 'log unavailable'}; kept instead: the container's termination message"
            text = message
        if wants_log and text:
            key = log_key(entry["name"], set(data))
            data[key] = tail(text, int(limits.get("lines") or 0), int(limits.get("podBytes") or 0))
            entry["log"] = key
        elif wants_log:
            entry["logNote"] = note or "empty log"
        else:
            entry["logNote"] = "not kept: the record's size limit"
        pods.append(entry)
    old_events = [e for e in summary.get("events") or [] if isinstance(e, dict)]
    # the plan's own Warning events (body["pending"]) are newer than any read, unless the API has them already
    read = {(e.get("object"), e.get("reason"), e.get("message")) for e in events}
    pending = [
        {**e, "count": 1, "lastTimestamp": now}
        for e in body.get("pending") or []
        if (e.get("object"), e.get("reason"), e.get("message")) not in read
    ]
    new_events = [
        {k: e.get(k) for k in ("object", "reason", "message", "count", "lastTimestamp") if e.get(k) is not None}
        for e in (list(events) + pending)[-EVENTS:]
    ]
    occasions = [o for o in summary.get("occasions") or [] if isinstance(o, dict)]
    occasions.append({"at": now, "why": body.get("why") or "", "pods": added})
    omitted = int(summary.get("omitted") or 0) + int(body.get("omitted") or 0)
    out: dict = {
        "job": summary.get("job") or _job_ref(body["metadata"]),
        "occasions": occasions,
        "pods": pods,
        "omitted": omitted,
        "events": new_events if len(new_events) >= len(old_events) else old_events,
        "limits": limits,
    }
    # The whole record within totalBytes: the pods added last are counted instead of described (with their logs)
    # until the summary fits; the pods recorded before are never dropped.
    total = int(limits.get("totalBytes") or 0)
    old_count = len(summary.get("pods") or [])
    while True:
        data[SUMMARY] = json.dumps(out, indent=1)
        if not total or _used({"data": data}) <= total or len(pods) <= old_count:
            break
        dropped = pods.pop()
        data.pop(dropped.get("log") if isinstance(dropped.get("log"), str) else "", None)
        omitted += 1
        out["omitted"] = omitted
        occasions[-1]["pods"] = [n for n in occasions[-1]["pods"] if n != dropped.get("name")]
    meta = dict(body["metadata"])
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def _job_ref(meta: dict) -> dict:
    owner = (meta.get("ownerReferences") or [{}])[0]
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": owner.get("name", ""),
        "uid": owner.get("uid", ""),
    }


def status_ref(name: str, pods: int, now: str) -> dict:
    """status.record: where the record is (`kubectl describe` shows it), how many pods it describes, since when."""
    return {"configMap": name, "pods": pods, "lastUpdateTime": now}


def summary_of(record: dict | None) -> dict | None:
    """What `mpijob_info` returns of a record ConfigMap: its summary with each kept log's lines in place of its key;
    None without a record."""
    if record is None:
        return None
    summary = recorded(record)
    data = record.get("data") or {}
    pods = []
    for entry in summary.get("pods") or []:
        if not isinstance(entry, dict):
            continue
        entry = dict(entry)
        key = entry.get("log")
        if isinstance(key, str) and isinstance(data.get(key), str):
            entry["log"] = data[key].splitlines()
        else:
            entry["log"] = []
        pods.append(entry)
    out = {
        "config_map": (record.get("metadata") or {}).get("name", ""),
        "occasions": summary.get("occasions") or [],
        "pods": pods,
        "omitted": summary.get("omitted") or 0,
        "events": summary.get("events") or [],
    }
    out["lines"] = readable(out)
    return out


def _in_log(message: str, log: list[str]) -> bool:
    """The message is lines of the log (a termination message made of the log's last lines, FallbackToLogsOnError):
    printing it again says nothing. Its last line may be cut (truncate)."""
    lines = [line for line in message.splitlines() if line.strip()]
    whole = lines[:-1] if len(lines) > 1 else lines
    return bool(log) and all(line in log for line in whole)


def readable(summary: dict) -> list[str]:
    """A record as lines to print (submit.yml): why it was kept, each pod and how it ended with its log's last lines
    below it, the Warning events."""
    whys = "; ".join(f"{o.get('why')} at {o.get('at')}" for o in summary.get("occasions") or [])
    out = [f"ConfigMap {summary.get('config_map')} ({whys})"]
    for pod in summary.get("pods") or []:
        how = ", ".join(
            x
            for x in (
                pod.get("reason") or pod.get("phase") or "",
                f"exit code {pod['exitCode']}" if pod.get("exitCode") is not None else "",
            )
            if x
        )
        where = f" on {pod['node']}" if pod.get("node") else ""
        out.append(f"{pod.get('role')} {pod.get('name')}{where}: {how or 'no status'}")
        message = pod.get("message")
        if message and not _in_log(message, pod.get("log") or []):
            out += [f"  {line}" for line in message.splitlines() if line.strip()]
        out += [f"  | {line}" for line in pod.get("log") or []]
        if pod.get("logNote"):
            out.append(f"  ({pod['logNote']})")
    if summary.get("omitted"):
        out.append(f"... and {summary['omitted']} more pods, not described (the record's size)")
    for e in summary.get("events") or []:
        count = f" (x{e['count']})" if (e.get("count") or 1) > 1 else ""
        out.append(f"Warning {e.get('reason')} on {e.get('object')}{count}: {e.get('message')}")
    return out
