"""The switch between the Kubeflow MPI Operator and ours, as the tests and `make migrate-scale` drive it: the
Kubeflow operator installed in-cluster by its own manifest (hack/lib/kubeflow.py) with its pod on the real node, the
jobs (on kwok nodes, told when to finish, and real `mpirun` on the real node, told by a file), what the jobs' children
were before and after (uids, restarts, statuses), and the playbook run (playbooks/migrate.yml)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import pathlib
import re
import subprocess
import sys
import time
from typing import Any

from hack.lib.ansible import ansible_env
from hack.lib.images import REAL_NODE_SELECTOR, REAL_NODE_TOLERATION, built_image
from hack.lib.kubeflow import apply_manifest, kubeflow_manifest
from hack.lib.mpijob import GROUP, PLURAL, VERSION, new_mpijob
from hack.lib.paths import ROOT

OUTCOME = "kwok.mpi.operator/outcome"
ROLE = "training.kubeflow.org/job-role"
JOB_NAME = "training.kubeflow.org/job-name"
# The real job's ranks wait for this file in their worker pod, then compute: `tell_real` creates it.
GO_FILE = "/tmp/go"
PHASE_RANK = {"Pending": 0, "Created": 0, "Running": 1, "Restarting": 1, "Suspended": 1, "Succeeded": 2, "Failed": 2}


def install_kubeflow(kubeconfig: str, kubectl: str, **manifest: Any) -> str:
    """The Kubeflow operator as its users install it: its manifest, the image of its v0.8.2 binary
    (hack/build/images/kubeflow-operator, imported into the real node), its pod on the real node; `manifest` are
    kubeflow_manifest's other arguments (its namespace, the watched one, the CRD or not). Returns the image."""
    repository, tag = built_image("kubeflow-operator")
    image = f"{repository}:{tag}"
    docs = kubeflow_manifest(
        image,
        pull_policy="Never",
        node_selector=REAL_NODE_SELECTOR,
        tolerations=[REAL_NODE_TOLERATION],
        **manifest,
    )
    apply_manifest(docs, kubeconfig, kubectl)
    return image


def kwok_job(name: str, workers: int = 2) -> dict[str, Any]:
    """A job whose pods kwok runs until told (`tell_kwok`): its launcher keeps running."""
    return new_mpijob(name, workers, launcher_annotations={OUTCOME: "run"})


def real_job(name: str, image: str) -> dict[str, Any]:
    """Real `mpirun` on the real node (OpenMPI 4, 2 workers x 2 slots): the 4 ranks wait in their worker pods for
    GO_FILE, then compute pi (the launcher's log names the host of each rank)."""
    placement = {"nodeSelector": REAL_NODE_SELECTOR, "tolerations": [REAL_NODE_TOLERATION]}
    wait_then_pi = f"until [ -e {GO_FILE} ]; do sleep 1; done; exec /opt/mpi/pi"
    body = new_mpijob(name, 2, slotsPerWorker=2, runPolicy={"cleanPodPolicy": "Running", "backoffLimit": 2})
    for role, spec in body["spec"]["mpiReplicaSpecs"].items():
        container = spec["template"]["spec"]["containers"][0]
        container.update(image=image, imagePullPolicy="Never")
        if role == "Launcher":
            # args, not command: the image's entrypoint waits until the workers' names resolve.
            container["args"] = ["mpirun", "--allow-run-as-root", "-np", "4", "sh", "-c", wait_then_pi]
        spec["template"]["spec"].update(placement)
    return body


def create_jobs(api_client: Any, namespace: str, bodies: list[dict[str, Any]]) -> None:
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    for body in bodies:
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


def list_jobs(api_client: Any, namespace: str) -> list[dict[str, Any]]:
    from kubernetes import client

    return client.CustomObjectsApi(api_client).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]


def tell_kwok(api_client: Any, namespace: str, names: list[str]) -> None:
    """Tells the kwok launcher pods of `names` to succeed now (kwok's stage acts on the changed annotation)."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    wanted = set(names)
    patch = {"metadata": {"annotations": {OUTCOME: "succeed", "kwok.mpi.operator/outcome-after": "100ms"}}}
    for pod in core.list_namespaced_pod(namespace, label_selector=f"{ROLE}=launcher").items:
        if pod.metadata.labels.get(JOB_NAME) in wanted and pod.status.phase == "Running":
            core.patch_namespaced_pod(pod.metadata.name, namespace, patch)


def tell_real(kubeconfig: str, kubectl: str, namespace: str, name: str) -> None:
    """Lets the real job's ranks compute: GO_FILE in each of its worker pods."""
    for i in range(2):
        subprocess.run(
            [
                kubectl,
                f"--kubeconfig={kubeconfig}",
                "-n",
                namespace,
                "exec",
                f"{name}-worker-{i}",
                "--",
                "touch",
                GO_FILE,
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )


def job_phase(job: dict[str, Any]) -> str:
    """The first of Failed, Succeeded, Suspended, Restarting, Running, Created whose condition is True."""
    true = {c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    return next(
        (p for p in ("Failed", "Succeeded", "Suspended", "Restarting", "Running", "Created") if p in true), "Pending"
    )


@dataclasses.dataclass
class Snapshot:
    """The jobs of some namespaces and their children: uids by "Kind ns/name", the pods' container restarts, each
    job's status."""

    children: dict[str, str]
    restarts: dict[str, int]
    jobs: dict[str, dict[str, Any]]


def snapshot(api_client: Any, namespaces: list[str]) -> Snapshot:
    from kubernetes import client

    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    children: dict[str, str] = {}
    restarts: dict[str, int] = {}
    jobs: dict[str, dict[str, Any]] = {}
    for ns in namespaces:
        for job in list_jobs(api_client, ns):
            jobs[f"{ns}/{job['metadata']['name']}"] = job
        names = {k.split("/", 1)[1] for k in jobs if k.startswith(f"{ns}/")}
        for pod in core.list_namespaced_pod(ns, label_selector=JOB_NAME).items:
            children[f"Pod {ns}/{pod.metadata.name}"] = pod.metadata.uid
            restarts[f"{ns}/{pod.metadata.name}"] = sum(s.restart_count for s in pod.status.container_statuses or [])
        listed = (
            core.list_namespaced_service(ns).items
            + core.list_namespaced_config_map(ns).items
            + core.list_namespaced_secret(ns).items
            + batch.list_namespaced_job(ns).items
        )
        for obj in listed:
            owners = {o.name for o in obj.metadata.owner_references or [] if o.kind == "MPIJob"}
            if owners & names:
                children[f"{type(obj).__name__.removeprefix('V1')} {ns}/{obj.metadata.name}"] = obj.metadata.uid
    return Snapshot(children, restarts, jobs)


def compare(before: Snapshot, after: Snapshot) -> dict[str, list[str]]:
    """What a switch must not do, by what it did: children recreated (same name, another uid), children gone, pods
    restarted, jobs lost, statuses gone backwards (phase, or a True condition's transition time changed)."""
    recreated = [k for k, uid in before.children.items() if k in after.children and after.children[k] != uid]
    gone = [k for k in before.children if k not in after.children]
    restarted = [k for k, n in before.restarts.items() if after.restarts.get(k, n) > n]
    lost = [k for k in before.jobs if k not in after.jobs]
    backwards = []
    for key, job in before.jobs.items():
        now = after.jobs.get(key)
        if now is None:
            continue
        if PHASE_RANK[job_phase(now)] < PHASE_RANK[job_phase(job)]:
            backwards.append(f"{key}: {job_phase(job)} -> {job_phase(now)}")
            continue
        if job_phase(now) != job_phase(job):
            continue  # it moved on (finished): its conditions changed as they should
        then = {c["type"]: c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
        for c in (now.get("status") or {}).get("conditions") or []:
            old = then.get(c["type"])
            if old and (c.get("status") != "True" or c.get("lastTransitionTime") != old.get("lastTransitionTime")):
                backwards.append(f"{key}: condition {c['type']} {old.get('lastTransitionTime')} -> {c}")
        if (job.get("status") or {}).get("startTime") != (now.get("status") or {}).get("startTime"):
            backwards.append(f"{key}: startTime changed")
    return {"recreated": recreated, "gone": gone, "restarted": restarted, "lost": lost, "backwards": backwards}


@dataclasses.dataclass
class PlaybookRun:
    returncode: int
    output: str
    seconds: float

    def shown_plan(self) -> str:
        """The role's "Show the plan" task as ansible-playbook printed it (its TASK line and its result)."""
        match = re.search(
            r"TASK \[mpi\.operator\.migrate : Show the plan\].*?\n(ok: \[localhost\] => \{.*?\n\})", self.output, re.S
        )
        return match[0] if match else ""

    def plan(self) -> list[str]:
        """The lines of the plan the role showed (its "Show the plan" task)."""
        shown = self.shown_plan()
        if not shown:
            return []
        return json.loads(shown.split("=>", 1)[1])["msg"]


def run_migrate(kubeconfig: str, variables: dict[str, Any], work: pathlib.Path, *args: str) -> PlaybookRun:
    """`ansible-playbook playbooks/migrate.yml -e @VARS ARGS` against the checkout's collection."""
    work.mkdir(parents=True, exist_ok=True)
    vars_file = work / f"migrate-{time.monotonic_ns()}.json"
    vars_file.write_text(json.dumps(variables))
    started = time.monotonic()
    proc = subprocess.run(
        [
            str(pathlib.Path(sys.executable).parent / "ansible-playbook"),
            "playbooks/migrate.yml",
            "-e",
            f"@{vars_file}",
            *args,
        ],
        cwd=ROOT,
        env=ansible_env(kubeconfig),
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    return PlaybookRun(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started)


class PhaseWatch:
    """When each job of a namespace first showed a status.phase (which our operator writes and the Kubeflow one
    never does): polls from a thread while a switch runs."""

    def __init__(self, api_client: Any, namespaces: list[str], interval: float = 0.5) -> None:
        import threading

        self.api_client, self.namespaces, self.interval = api_client, namespaces, interval
        self.first: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PhaseWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            for ns in self.namespaces:
                try:
                    jobs = list_jobs(self.api_client, ns)
                except Exception:  # a busy API server: the next poll
                    continue
                for job in jobs:
                    key = f"{ns}/{job['metadata']['name']}"
                    if key not in self.first and (job.get("status") or {}).get("phase"):
                        self.first[key] = now
            self._stop.wait(self.interval)


KLOG_SYNC = re.compile(r'^I(\d{4}) (\d\d:\d\d:\d\d\.\d+)\s.*Finished syncing job "([^"]+)"', re.M)


def kubeflow_first_syncs(log: str, year: int) -> dict[str, float]:
    """When the Kubeflow operator first synced each job, from its klog lines ("Finished syncing job \"ns/name\"")."""
    first: dict[str, float] = {}
    for mmdd, clock, key in KLOG_SYNC.findall(log):
        stamp = datetime.datetime.strptime(f"{year}{mmdd} {clock[:15]}", "%Y%m%d %H:%M:%S.%f")
        first.setdefault(key, stamp.replace(tzinfo=datetime.UTC).timestamp())
    return first
