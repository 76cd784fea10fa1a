"""The watch tracker: the bench's own watches on MPIJobs and their children, which record when each job got what."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from kubernetes import client

from hack.experiments.bench.settings import (
    PREFIX,
)
from hack.lib.mpijob import GROUP, PLURAL, VERSION, child_refs


class Tracker:
    """Watches children and MPIJobs in the bench namespaces; records when each job got what."""

    def __init__(self, api: client.ApiClient, workers: int):
        self.api = api
        self.workers = workers
        self.lock = threading.Lock()
        self.created: dict[tuple[str, str], float] = {}
        self.children: dict[tuple[str, str], set[str]] = {}
        self.all_children: dict[tuple[str, str], float] = {}
        self.running: dict[tuple[str, str], float] = {}
        self.succeeded: dict[tuple[str, str], float] = {}
        self.pod_phases: dict[tuple[str, str], dict[str, str]] = {}
        self.pods_up: dict[tuple[str, str], float] = {}
        self.launcher_done: dict[tuple[str, str], float] = {}  # the launcher Job Complete (the cluster's share)
        self.workers_deleting: dict[tuple[str, str], set[str]] = {}  # worker pods marked for deletion, or gone
        self.cleaned: dict[tuple[str, str], float] = {}  # when the last of a job's workers was
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def expected(self, name: str) -> set[str]:
        return child_refs(name, self.workers)

    def start(self) -> None:
        core, batch = client.CoreV1Api(self.api), client.BatchV1Api(self.api)
        custom = client.CustomObjectsApi(self.api)
        sources = [
            ("Pod", core.list_pod_for_all_namespaces, {"label_selector": "training.kubeflow.org/operator-name"}),
            ("Service", core.list_service_for_all_namespaces, {"label_selector": "app"}),
            ("ConfigMap", core.list_config_map_for_all_namespaces, {"label_selector": "app"}),
            ("Secret", core.list_secret_for_all_namespaces, {"label_selector": "app"}),
            ("Job", batch.list_job_for_all_namespaces, {"label_selector": "app"}),
            ("MPIJob", lambda **kw: custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kw), {}),
        ]
        for kind, func, kw in sources:
            t = threading.Thread(target=self._watch, args=(kind, func, kw), daemon=True)
            t.start()
            self.threads.append(t)

    def _watch(self, kind: str, func: Any, kw: dict[str, Any]) -> None:
        rv = None
        while not self.stop.is_set():
            try:
                if rv is None:
                    listing = func(_preload_content=False, **kw)
                    data = json.loads(listing.data)
                    for obj in data.get("items") or []:
                        self.seen(kind, obj)
                    rv = data["metadata"]["resourceVersion"]
                resp = func(
                    _preload_content=False,
                    watch=True,
                    resource_version=rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=60,
                    **kw,
                )
                for line in resp:
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        rv = None
                        break
                    rv = ev["object"]["metadata"].get("resourceVersion", rv)
                    if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.seen(kind, ev["object"], gone=ev["type"] == "DELETED")
                    if self.stop.is_set():
                        break
            except Exception as exc:  # keep measuring: relist
                print(f"bench watch {kind}: {exc}", file=sys.stderr)
                rv = None
                time.sleep(0.5)

    def seen(self, kind: str, obj: dict[str, Any], gone: bool = False) -> None:
        now = time.time()
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if not ns.startswith(PREFIX):
            return
        if kind == "MPIJob":
            key = (ns, meta["name"])
            conds = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}
            if conds.get("Running") == "True" or conds.get("Succeeded") == "True":
                with self.lock:
                    self.running.setdefault(key, now)
            if conds.get("Succeeded") == "True":
                with self.lock:
                    self.succeeded.setdefault(key, now)
            return
        if kind == "Pod":
            job = (meta.get("labels") or {}).get("training.kubeflow.org/job-name")
            if job:
                self.pod_seen((ns, job), meta["name"], meta.get("labels") or {}, obj, now, gone)
        else:
            job = (meta.get("labels") or {}).get("app")
        if not job or gone:
            return
        if kind == "Job" and any(
            c.get("type") == "Complete" and c.get("status") == "True"
            for c in (obj.get("status") or {}).get("conditions") or []
        ):
            with self.lock:
                self.launcher_done.setdefault((ns, job), now)
        key = (ns, job)
        with self.lock:
            got = self.children.setdefault(key, set())
            got.add(f"{kind}/{meta['name']}")
            if key not in self.all_children and self.expected(job) <= got:
                self.all_children[key] = now

    def pod_seen(
        self,
        key: tuple[str, str],
        name: str,
        labels: dict[str, str],
        obj: dict[str, Any],
        now: float,
        gone: bool = False,
    ) -> None:
        """The cluster's share: every worker Running and the launcher pod started (Running or done). And the
        clean-up: every worker marked for deletion."""
        role = labels.get("training.kubeflow.org/job-role", "")
        phase = (obj.get("status") or {}).get("phase", "")
        with self.lock:
            if role == "worker" and (gone or obj["metadata"].get("deletionTimestamp")):
                deleting = self.workers_deleting.setdefault(key, set())
                deleting.add(name)
                if len(deleting) >= self.workers:
                    self.cleaned.setdefault(key, now)
            if gone:
                return
            phases = self.pod_phases.setdefault(key, {})
            phases[f"{role}/{name}"] = phase
            workers = [p for n, p in phases.items() if n.startswith("worker/")]
            launcher = [p for n, p in phases.items() if n.startswith("launcher/")]
            if (
                key not in self.pods_up
                and len(workers) >= self.workers
                and all(p == "Running" for p in workers)
                and any(p in ("Running", "Succeeded") for p in launcher)
            ):
                self.pods_up[key] = now
