"""Scenario 4, the real node (hack/worlds/node): a job whose ranks run for real (OpenMPI's pi, four ranks on two
workers).
- The node's kubelet and containerd restarted while the ranks run: their containers (containerd's shims) run on, so
  the job must end Succeeded with the same pods, none restarted.
- The node lost: the kubelet stopped, past the node monitor grace period. The node goes NotReady and its NoExecute
  taint evicts the job's pods (they tolerate it for 5 s): they are deleted, but nobody can stop their containers
  until the kubelet is back, so the launcher Job (podReplacementPolicy Failed, as Kubeflow's) starts no second
  launcher beside one that may still run. When the kubelet is back the evicted pods end; with backoffLimit 0 the
  launcher Job fails and with it the MPIJob, its status saying why; nothing is left orphaned."""

from __future__ import annotations

import pathlib
import subprocess
import time
from typing import Any

from kubernetes import client

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from hack.experiments.chaos import checks
from hack.experiments.chaos.faults import Operator
from hack.experiments.chaos.observer import Observer
from hack.experiments.chaos.scenarios import Row, fresh_namespace, retrying
from hack.lib.images import REAL_NODE_SELECTOR, REAL_NODE_TOLERATION, built_image
from hack.lib.mpijob import GROUP, PLURAL, VERSION
from hack.lib.paths import ROOT
from hack.lib.wait import wait_until

NAMESPACE = "chaos-node"
EVICT_AFTER = 5  # seconds the pods tolerate an unreachable or not-ready node


def node_daemon(action: str, name: str) -> None:
    subprocess.run(
        ["bash", str(ROOT / "hack/worlds/node/daemon.sh"), action, name],
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    )


def real_job(name: str, image: str, seconds: int) -> dict[str, Any]:
    """Four ranks of pi on two workers of the real node, after `seconds` of sleep in each rank."""
    tolerations = [REAL_NODE_TOLERATION] + [
        {
            "key": f"node.kubernetes.io/{taint}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": EVICT_AFTER,
        }
        for taint in ("unreachable", "not-ready")
    ]

    def template(role: str, args: list[str] | None = None) -> dict[str, Any]:
        container: dict[str, Any] = {"name": role, "image": image, "imagePullPolicy": "Never"}
        if args:
            container["args"] = args
        return {"spec": {"nodeSelector": REAL_NODE_SELECTOR, "tolerations": tolerations, "containers": [container]}}

    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 2,
            "sshAuthMountPath": "/root/.ssh",
            "mpiImplementation": "OpenMPI",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": template(
                        "launcher",
                        ["mpirun", "--allow-run-as-root", "-np", "4", "sh", "-c", f"sleep {seconds}; exec /opt/mpi/pi"],
                    ),
                },
                "Worker": {"replicas": 2, "template": template("worker")},
            },
        },
    }


def job_pods(core: client.CoreV1Api, name: str) -> dict[str, tuple[str, int]]:
    """The job's pods: name -> (uid, restarts)."""
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"{C.JOB_NAME_LABEL}={name}").items
    return {
        p.metadata.name: (p.metadata.uid, sum(s.restart_count for s in p.status.container_statuses or [])) for p in pods
    }


def condition(custom: client.CustomObjectsApi, name: str, kind: str) -> dict | None:
    job = custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    return next(
        (c for c in (job.get("status") or {}).get("conditions") or [] if c["type"] == kind and c["status"] == "True"),
        None,
    )


def evicted(core: client.CoreV1Api, name: str) -> bool:
    """Every pod of the job is being deleted (the taint eviction of a lost node)."""
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"{C.JOB_NAME_LABEL}={name}").items
    return bool(pods) and all(p.metadata.deletion_timestamp for p in pods)


def finished(custom: client.CustomObjectsApi, name: str) -> dict | None:
    return condition(custom, name, C.SUCCEEDED) or condition(custom, name, C.FAILED)


def orphans(api: client.ApiClient) -> list[str]:
    """Pods and other children of the namespace whose controlling MPIJob or Job is gone, or stuck terminating."""
    batch = client.BatchV1Api(api)
    owners = {j["metadata"]["uid"] for j in checks.list_jobs(api, NAMESPACE).values()}
    owners |= {j.metadata.uid for j in batch.list_namespaced_job(NAMESPACE).items}
    found = []
    for kind, items in checks.children(api, NAMESPACE):
        for obj in items:
            refs = [r for r in obj.metadata.owner_references or [] if r.controller]
            if (obj.metadata.labels or {}).get(C.JOB_NAME_LABEL) and not any(r.uid in owners for r in refs):
                found.append(f"orphan {kind}/{obj.metadata.name}")
            if kind == "Pod" and obj.metadata.deletion_timestamp:
                found.append(f"Pod/{obj.metadata.name} still terminating")
    return found


def real_node(
    api: client.ApiClient, kubeconfig: str, work: pathlib.Path, seconds: int = 45, timeout: float = 600
) -> Row:
    row = Row("real node", 2)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    fresh_namespace(core, NAMESPACE)
    image = ":".join(built_image("openmpi4"))  # this checkout's build of the OpenMPI 4 image
    operator = Operator(kubeconfig, work, NAMESPACE)
    operator.start()
    observer = Observer(api, NAMESPACE).start()
    start = time.monotonic()
    try:
        # 1. kubelet and containerd restarted under running ranks.
        retrying(
            lambda: custom.create_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, real_job("survives", image, seconds)
            )
        )
        wait_until(lambda: observer.phase_of("survives") == "Running", 240, "job survives Running", interval=0.5)
        time.sleep(5)  # the ranks are up (mpirun has started them)
        before = job_pods(core, "survives")
        node_daemon("restart", "containerd")
        node_daemon("restart", "kubelet")
        row.faults.append(f"{time.monotonic() - start:.0f}s containerd and kubelet restarted")
        wait_until(lambda: finished(custom, "survives"), timeout, "job survives to finish", interval=1)
        done = finished(custom, "survives") or {}
        after = {n: v for n, v in job_pods(core, "survives").items() if n in before}
        row.notes.append(
            f"restart: job {done.get('type')} ({done.get('reason')}); pods kept "
            f"{sum(after.get(n, ('', 0))[0] == uid for n, (uid, _) in before.items())}/{len(before)},"
            f" container restarts {sum(r for _, r in after.values())}"
        )
        if done.get("type") != C.SUCCEEDED or after != before:
            row.findings.append(
                f"survives: {done.get('type')} {done.get('reason')}: {done.get('message')};"
                f" pods before {before}, after {after}"
            )
        # 2. the node lost with ranks on it.
        retrying(
            lambda: custom.create_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, real_job("node-lost", image, 600)
            )
        )
        wait_until(lambda: observer.phase_of("node-lost") == "Running", 240, "job node-lost Running", interval=0.5)
        time.sleep(5)
        lost_at = time.monotonic()
        node_daemon("stop", "kubelet")
        row.faults.append(f"{lost_at - start:.0f}s kubelet stopped (node lost)")
        try:
            wait_until(lambda: evicted(core, "node-lost"), 300, "the node's pods evicted", interval=1)
            row.notes.append(
                f"node lost: its pods evicted {time.monotonic() - lost_at:.0f} s after the kubelet"
                " stopped (node monitor grace period, then the NoExecute taint)"
            )
        except TimeoutError as exc:
            row.findings.append(f"node-lost: {exc}")
        finally:
            node_daemon("start", "kubelet")
        back = time.monotonic()
        row.faults.append(f"{back - start:.0f}s kubelet started (node back)")
        try:
            wait_until(lambda: finished(custom, "node-lost"), 300, "job node-lost to finish", interval=1)
            done = finished(custom, "node-lost") or {}
            row.notes.append(
                f"node back: job {done.get('type')} {time.monotonic() - back:.0f} s after"
                f" ({done.get('reason')}: {done.get('message')})"
            )
            if done.get("type") != C.FAILED:
                row.findings.append(
                    f"node-lost: {done.get('type')} {done.get('reason')}, wanted Failed by its backoffLimit 0"
                )
        except TimeoutError as exc:
            row.findings.append(f"node-lost: {exc}; phases {observer.phases.get('node-lost')}")
        try:
            wait_until(lambda: not orphans(api), 180, "no orphan or terminating pod", interval=1)
            row.settle_s = time.monotonic() - back
        except TimeoutError:
            row.findings += orphans(api)
        row.findings += [f"backwards: {b}" for b in observer.backwards() if not b.startswith("node-lost")]
        row.findings += [f"the operator exited by itself with {code}" for code in operator.exits]
    finally:
        observer.stop()
        operator.stop()
    if not row.findings:
        retrying(lambda: core.delete_namespace(NAMESPACE))
    return row
