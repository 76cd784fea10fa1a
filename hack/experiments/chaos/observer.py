"""What the chaos harness sees of its jobs for the whole run: every MPIJob of its namespace, watched as an informer
does (list, then watch from there; a broken watch, an expired resourceVersion or an API server that is down means
list again), each state recorded in order. A job's phase (the collection's own reading of its conditions) may only
move forward: Pending, Created, Running, Succeeded."""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client, watch

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow
from hack.lib.mpijob import GROUP, PLURAL, VERSION

# The phases a job of the harness passes through, in order; any other (Failed, Restarting, Suspended) is a finding.
FORWARD = ("Pending", "Created", "Running", "Succeeded")


class Observer:
    def __init__(self, api: client.ApiClient, namespace: str):
        self.custom = client.CustomObjectsApi(api)
        self.namespace = namespace
        self.lock = threading.Lock()
        self.phases: dict[str, list[str]] = {}  # job -> its phases as seen, each change once
        self.first: dict[tuple[str, str], float] = {}  # (job, phase) -> when first seen
        self.relists = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="chaos-observer", daemon=True)

    def start(self) -> Observer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(15)

    def seen(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        phase = kubeflow.phase(obj.get("status"))
        with self.lock:
            seq = self.phases.setdefault(name, [])
            if not seq or seq[-1] != phase:
                seq.append(phase)
                self.first.setdefault((name, phase), time.time())

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                listed = self.custom.list_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, PLURAL, _request_timeout=30
                )
                for obj in listed.get("items", []):
                    self.seen(obj)
                self.relists += 1
                stream = watch.Watch().stream(
                    self.custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    self.namespace,
                    PLURAL,
                    resource_version=listed["metadata"]["resourceVersion"],
                    timeout_seconds=60,
                    allow_watch_bookmarks=False,
                    _request_timeout=90,
                )
                for event in stream:
                    if self.stopping.is_set():
                        return
                    if event["type"] == "ERROR":  # 410 Gone: the resourceVersion is too old; list again
                        break
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.seen(event["object"])
            except Exception:
                time.sleep(0.5)

    def phase_of(self, name: str) -> str:
        with self.lock:
            seq = self.phases.get(name)
            return seq[-1] if seq else "Pending"

    def count(self, phase: str) -> int:
        with self.lock:
            return sum(1 for seq in self.phases.values() if seq and seq[-1] == phase)

    def reached(self, phase: str) -> int:
        """Jobs that have shown `phase` at some time."""
        with self.lock:
            return sum(1 for seq in self.phases.values() if phase in seq)

    def writes_after(self, moment: float) -> int:
        """Phase changes first seen after `moment` (time.time()): the operator's status writes since then."""
        with self.lock:
            return sum(1 for t in self.first.values() if t > moment)

    def backwards(self) -> list[str]:
        """Every job whose phases did not move forward only, with what was seen."""
        found = []
        with self.lock:
            for name, seq in sorted(self.phases.items()):
                ranks = [FORWARD.index(p) if p in FORWARD else -1 for p in seq]
                if -1 in ranks or ranks != sorted(ranks):
                    found.append(f"{name}: {' -> '.join(seq)}")
        return found
