# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What the watches saw, kept to hand each batch its jobs' world: a batch plans from it instead of reading the API
server again (a GET per job and five LISTs per namespace per batch before; docs/operator.md, "What a batch reads").

Each object is kept as JSON without its managedFields (bytes: a fraction of the memory of the decoded dict, and the
warm run's hand-off sends JSON anyway). A job's world goes to the module only when every watch it needs has listed, and
not right after a run of the job that ended in a retry (a conflict, an object that was not where the world said):
that job's next run reads the API server, as every run did before. The world may lag the API server by the watch's
delay; a write planned from a stale object is refused by the server (the status write carries the MPIJob's
resourceVersion, merge patches the child's, deletions its uid, creations meet the object that exists) and the job is
retried from a fresh read, never written blindly."""

from __future__ import annotations

import json
import threading
from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import pod_as_seen, secret_as_seen
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Key, job_entry, job_key
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.record import launcher_failed, record_name, recorded

# The kinds whose objects a world holds, by name (the MPIJobs by Key, the pods by their job-name label).
NAMED = ("Service", "ConfigMap", "Secret", "Job", "PodGroup")
RECORD_SUFFIX = record_name("")
GONE_PER_JOB = 3  # a job's failed launcher pods kept after their deletion, until its record has them (newest kept)


def kept(kind: str, obj: dict[str, Any]) -> bytes:
    """The JSON kept of a watched object of `kind`: all of it but `metadata.managedFields` (the server's field
    ownership, which nothing plans from: a third to half of a pod's JSON, which every batch would send and the module
    decode), and of a pod or a Secret only what a World holds of it (plan.py: a pod's spec but its node and its
    containers' names, a Secret's keys but not their values). The object is the watch's own, decoded for this event:
    its metadata is changed in place, the rest is left as it was (the watch's fingerprint reads it next)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    if kind == "Pod":
        return encode(pod_as_seen(obj))
    if kind == "Secret":
        return encode(secret_as_seen(obj))
    return encode(obj)


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _recorded_uids(record: dict[str, Any]) -> set[str]:
    """The uids of the pods a record ConfigMap (as watched) describes."""
    return {str(p.get("uid")) for p in recorded(record).get("pods") or [] if isinstance(p, dict) and p.get("uid")}


class Store:
    """The watched objects, kept as JSON, and each job's world built from them. Thread-safe: the watches write, the
    workers read."""

    def __init__(self, needed: set[str]):
        self.needed = set(needed)  # the watches (resource names) a world needs listed: all of the operator's
        self.listed: set[str] = set()
        self._lock = threading.Lock()
        self._mpijobs: dict[Key, bytes] = {}
        self._named: dict[str, dict[tuple[str, str], bytes]] = {kind: {} for kind in NAMED}
        self._pods: dict[tuple[str, str], dict[str, bytes]] = {}  # (namespace, job) -> pod name -> JSON
        # (namespace, job) -> pod name -> JSON of a launcher pod that failed and was deleted (World.gone_pods), kept
        # until the job's record names it, the job goes, or newer ones push it out (GONE_PER_JOB)
        self._gone: dict[tuple[str, str], dict[str, bytes]] = {}
        # (namespace, job) -> pod name -> JSON of a launcher pod as last seen failed before its deletion: what _gone
        # keeps of it. Its final state says less: the kubelet drops the container's lastState (the failure that
        # restarted it) from the status of a deleted pod, whose container then ends by the deletion's kill.
        self._failing: dict[tuple[str, str], dict[str, bytes]] = {}
        self._distrusted: set[Key] = set()

    # -- the watches' side ------------------------------------------------------------------------------------------
    def put(self, kind: str, keys: list[Key], obj: dict[str, Any], raw: bytes, event: str) -> None:
        """One watch event (or a listed object: event LIST) of `kind`; `keys` are the jobs it concerns."""
        meta = _meta(obj)
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        gone = event == "DELETED"
        with self._lock:
            if kind == C.KIND:
                for key in keys:
                    if gone:
                        self._mpijobs.pop(key, None)
                        self._gone.pop((key.namespace, key.name), None)
                        self._failing.pop((key.namespace, key.name), None)
                    else:
                        self._mpijobs[key] = raw
            elif kind == "Pod":
                labels = meta.get("labels") or {}
                job = labels.get(C.JOB_NAME_LABEL)
                if not job:
                    return
                pods = self._pods.setdefault((ns, job), {})
                launcher = labels.get(C.JOB_ROLE_LABEL) == C.ROLE_LAUNCHER
                if gone:
                    pods.pop(name, None)
                    if not pods:
                        del self._pods[(ns, job)]
                    if launcher:
                        self._launcher_gone((ns, job), name, obj, raw)
                else:
                    pods[name] = raw
                    if launcher and not meta.get("deletionTimestamp") and launcher_failed(obj):
                        self._failing.setdefault((ns, job), {})[name] = raw
            elif kind in self._named:
                if gone:
                    self._named[kind].pop((ns, name), None)
                else:
                    self._named[kind][(ns, name)] = raw
                    if kind == "ConfigMap" and self._gone and name.endswith(RECORD_SUFFIX):
                        self._forget_recorded((ns, name[: -len(RECORD_SUFFIX)]), obj)

    def _launcher_gone(self, job: tuple[str, str], name: str, obj: dict[str, Any], raw: bytes) -> None:
        """A launcher pod was deleted: kept as it was last seen failing (else as it ended, when that was a failure),
        unless the job's record has it already."""
        failing = self._failing.get(job) or {}
        seen = failing.pop(name, None)
        if not failing:
            self._failing.pop(job, None)
        if seen is None and not launcher_failed(obj):
            return
        if not any(k.namespace == job[0] and k.name == job[1] for k in self._mpijobs):
            return  # the job's own deletion took it
        record = self._named["ConfigMap"].get((job[0], record_name(job[1])))
        if record is not None and _meta(obj).get("uid") in _recorded_uids(json.loads(record)):
            return
        self._keep_gone(job, name, raw if seen is None else seen)

    def _keep_gone(self, job: tuple[str, str], name: str, raw: bytes) -> None:
        kept_ = self._gone.setdefault(job, {})
        kept_.pop(name, None)
        kept_[name] = raw  # newest last
        while len(kept_) > GONE_PER_JOB:
            del kept_[next(iter(kept_))]

    def _forget_recorded(self, job: tuple[str, str], record: dict[str, Any]) -> None:
        """The gone pods of `job` that its record (a ConfigMap as watched) names are needed no more."""
        kept_ = self._gone.get(job)
        if not kept_:
            return
        have = _recorded_uids(record)
        for name, raw in list(kept_.items()):
            if _meta(json.loads(raw)).get("uid") in have:
                del kept_[name]
        if not kept_:
            del self._gone[job]

    def relisting(self, resource: str, kind: str, api_version: str) -> None:
        """A relist of the watch `resource` begins: what was kept of it is forgotten (objects deleted while the watch
        was down); its worlds wait until it has listed again."""
        with self._lock:
            self.listed.discard(resource)
            if kind == C.KIND:
                storage = job_key("", "", api_version).api_version
                self._mpijobs = {k: v for k, v in self._mpijobs.items() if k.api_version != storage}
            elif kind == "Pod":
                self._pods.clear()
                self._gone.clear()
                self._failing.clear()
            elif kind in self._named:
                self._named[kind].clear()

    def relisted(self, resource: str) -> None:
        with self._lock:
            self.listed.add(resource)

    # -- the workers' side ------------------------------------------------------------------------------------------
    def distrust(self, key: Key) -> None:
        """The job's next run reads the API server (its last run met a world that was not the server's)."""
        with self._lock:
            self._distrusted.add(key)

    def forget(self, key: Key) -> None:
        with self._lock:
            self._distrusted.discard(key)

    def entry(self, key: Key) -> bytes:
        """The job's `jobs` entry as JSON: with its world (`seen`) when the store can give it, else the bare key (the
        module then reads the job)."""
        plain = encode(job_entry(key))
        seen = self._world(key)
        return plain if seen is None else plain[:-1] + b',"seen":' + seen + b"}"

    def _world(self, key: Key) -> bytes | None:
        ns, name = key.namespace, key.name
        with self._lock:
            if key in self._distrusted:
                self._distrusted.discard(key)
                return None
            if not self.needed <= self.listed:
                return None
            job = self._mpijobs.get(key)
            if job is None:  # not seen yet (or gone): the module's GET says which
                return None
            named = {
                "service": self._named["Service"].get((ns, name)),
                "config_map": self._named["ConfigMap"].get((ns, name + C.CONFIG_SUFFIX)),
                "record": self._named["ConfigMap"].get((ns, record_name(name))),
                "secret": self._named["Secret"].get((ns, name + C.SSH_SUFFIX)),
                "launcher": self._named["Job"].get((ns, name + C.LAUNCHER_SUFFIX)),
                "pod_group": self._named["PodGroup"].get((ns, name)),
            }
            pods = list((self._pods.get((ns, name)) or {}).values())
            gone_pods = list((self._gone.get((ns, name)) or {}).values())
        parts = [b'"mpijob":' + job, b'"pods":[' + b",".join(pods) + b"]"]
        if gone_pods:
            parts.append(b'"gone_pods":[' + b",".join(gone_pods) + b"]")
        parts += [b'"%s":%s' % (field.encode(), raw) for field, raw in named.items() if raw is not None]
        return b"{" + b",".join(parts) + b"}"

    def wrote_status(self, key: Key, read_version: str, written: dict[str, Any]) -> None:
        """The run wrote the job's status (`written`: its new status and resourceVersion) over the version `read_version`
        it planned from: the kept job takes it, unless the watch has brought a newer one meanwhile."""
        version = written.get("resourceVersion")
        with self._lock:
            raw = self._mpijobs.get(key)
            if raw is None or not version:
                return
            obj = json.loads(raw)
            if _meta(obj).get("resourceVersion") != read_version:
                return  # the watch delivered this write, or a later one, already
            obj.setdefault("metadata", {})["resourceVersion"] = version
            obj["status"] = written.get("status")
            self._mpijobs[key] = encode(obj)

    def sizes(self) -> dict[str, int]:
        """Objects and bytes kept (the operator's metrics)."""
        with self._lock:
            count = len(self._mpijobs) + sum(len(v) for v in self._named.values())
            count += sum(len(v) for v in (*self._pods.values(), *self._gone.values(), *self._failing.values()))
            size = sum(map(len, self._mpijobs.values())) + sum(sum(map(len, v.values())) for v in self._named.values())
            size += sum(
                sum(map(len, v.values())) for v in (*self._pods.values(), *self._gone.values(), *self._failing.values())
            )
        return {"objects": count, "bytes": size}
