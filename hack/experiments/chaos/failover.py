"""Scenarios 2 and 3, on the operator in-cluster (hack/experiments/chaos/incluster.py: two replicas, leader election):
- leader failover: during a burst of jobs the leader's pod is deleted, then the new leader's container is SIGKILLed
  on the node; how long until another replica holds the Lease and writes, and nothing lost;
- upgrade under load: jobs running, playbooks/install.yml rolls out another image and then the first one back; no
  child recreated, no status rewritten, no Event written, then the jobs finish as usual."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

from kubernetes import client

from hack.experiments.chaos import checks
from hack.experiments.chaos.incluster import InCluster, pod_of, tag_image
from hack.experiments.chaos.observer import Observer
from hack.experiments.chaos.scenarios import Row, create_all, settle_and_check
from hack.lib.wait import wait_until


def takeover(op: InCluster, observer: Observer, old: str, fault_at: float, timeout: float = 120) -> tuple[float, float]:
    """Seconds from the fault until a replica other than `old` holds the Lease, and until the first status write seen
    after that (the observer's watch)."""
    holder = wait_until(lambda: (h := op.holder()) and h != old and h, timeout, "another replica to lead", interval=0.1)
    leading = time.time()
    wait_until(lambda: observer.writes_after(leading) > 0, timeout, "the new leader's first write", interval=0.1)
    first_write = min(t for t in observer.first.values() if t > leading)
    del holder
    return leading - fault_at, first_write - fault_at


def leader_failover(
    api: client.ApiClient, op: InCluster, jobs: int = 200, workers: int = 2, timeout: float = 900
) -> Row:
    """Scenario 2. The burst is created at once; once 5 % of the jobs are Created the leader's pod is deleted (its
    replacement starts as the other replica takes over); once the new leader has written, its container is SIGKILLed
    on the node (the kubelet restarts it; the Lease must expire first)."""
    row = Row("leader failover", jobs)
    ns = op.namespace
    checks.delete_jobs(api, ns)
    observer = Observer(api, ns).start()
    try:
        first = wait_until(op.holder, 180, "a leader", interval=0.2)
        names = [f"failover-{i:05d}" for i in range(jobs)]
        creating = create_all(api, ns, names, workers)
        wait_until(
            lambda: observer.reached("Created") >= max(1, jobs // 20), timeout, "5 % of the jobs Created", interval=0.1
        )
        fault_at, start = time.time(), time.monotonic()
        op.delete_pod(pod_of(first) or "")
        lease_s, write_s = takeover(op, observer, first, fault_at)
        running = observer.count("Running")
        row.faults.append(f"{time.monotonic() - start:.0f}s leader pod {pod_of(first)} deleted")
        row.notes.append(
            f"pod deleted: another replica led {lease_s:.1f} s after, wrote {write_s:.1f} s after"
            f" ({running}/{jobs} jobs Running then)"
        )
        second = wait_until(op.holder, 60, "a leader", interval=0.1)
        fault_at = time.time()
        pid = op.kill_container(pod_of(second) or "")
        lease_s, write_s = takeover(op, observer, second, fault_at)
        running = observer.count("Running")
        row.faults.append(f"{time.monotonic() - start:.0f}s leader {pod_of(second)} SIGKILLed (pid {pid} on the node)")
        row.notes.append(
            f"SIGKILL: another replica led {lease_s:.1f} s after, wrote {write_s:.1f} s after"
            f" ({running}/{jobs} jobs Running then)"
        )
        if running == jobs:
            row.findings.append("the burst was over before the SIGKILL: no failover under load measured")
        creating.result(timeout=timeout)
        settle_and_check(api, row, observer, names, workers, timeout, time.monotonic())
    finally:
        observer.stop()
    return row


def metric_total(pod: client.V1Pod, name: str, port: int = 8080) -> float:
    """The sum of a counter's samples on one replica (its pod IP is reachable from the node's host)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://{pod.status.pod_ip}:{port}/metrics", timeout=3) as r:
            text = r.read().decode()
    except OSError:
        return 0.0
    return sum(
        s.value for fam in text_string_to_metric_families(text) for s in fam.samples if s.name == f"{name}_total"
    )


def led_by(op: InCluster, image_tag: str, jobs: int) -> client.V1Pod:
    """The leading replica once it runs the image `image_tag` and has reconciled every job (its metrics)."""

    def leader() -> client.V1Pod | None:
        holder = pod_of(op.holder())
        return next(
            (
                p
                for p in op.pods()
                if p.metadata.name == holder and p.spec.containers[0].image.endswith(f":{image_tag}")
            ),
            None,
        )

    pod = wait_until(leader, 180, f"a replica of :{image_tag} to lead", interval=0.5)
    wait_until(
        lambda: metric_total(pod, "mpi_operator_reconciles") >= jobs,
        300,
        f"the leader of :{image_tag} to reconcile every job",
        interval=1,
    )
    return pod


def snapshot(api: client.ApiClient, namespace: str, names: set[str]) -> dict[str, Any]:
    """What must not change while the operator is upgraded: each job's resourceVersion (its status), each child's UID,
    the Events about the jobs."""
    children = {}
    for kind, items in checks.children(api, namespace):
        for obj in items:
            if any(r.controller for r in obj.metadata.owner_references or []):
                children[f"{kind}/{obj.metadata.name}"] = obj.metadata.uid
    jobs = {n: j["metadata"]["resourceVersion"] for n, j in checks.list_jobs(api, namespace).items() if n in names}
    events = {
        f"{e.involved_object.name}/{e.reason}": e.count or 1
        for e in client.CoreV1Api(api).list_namespaced_event(namespace).items
        if e.involved_object.kind == "MPIJob" and e.involved_object.name in names
    }
    return {"jobs": jobs, "children": children, "events": events}


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    found = []
    for what, label in (
        ("jobs", "status rewritten (resourceVersion moved)"),
        ("children", "child recreated or changed"),
        ("events", "Event written"),
    ):
        old, new = before[what], after[what]
        found += [f"{label}: {k}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return found


def upgrade_under_load(
    api: client.ApiClient,
    op: InCluster,
    repository: str,
    tag: str,
    jobs: int = 200,
    workers: int = 2,
    timeout: float = 900,
) -> Row:
    """Scenario 3. The jobs Running, install.yml rolls out the image under another tag (the same build: to the
    Deployment a new image, every pod replaced) and then the first tag back, each time until the new leader has
    reconciled every job; what the jobs, their children and their Events were before must be what they are after."""
    row = Row("upgrade under load", jobs)
    ns = op.namespace
    checks.delete_jobs(api, ns)
    observer = Observer(api, ns).start()
    try:
        names = [f"upgrade-{i:05d}" for i in range(jobs)]
        create_all(api, ns, names, workers).result(timeout=timeout)
        wait_until(lambda: observer.count("Running") == jobs, timeout, f"{jobs} jobs Running", interval=0.5)
        time.sleep(5)  # the last Events and status writes land
        before = snapshot(api, ns, set(names))
        start = time.monotonic()
        new_tag = f"{tag}-chaos-upgrade"
        tag_image(repository, tag, new_tag)
        for image_tag in (new_tag, tag):
            took = op.install(repository, image_tag)
            pod = led_by(op, image_tag, jobs)
            row.faults.append(f"{time.monotonic() - start:.0f}s install.yml rolled out :{image_tag} ({took:.0f} s)")
            row.notes.append(
                f":{image_tag}: leader {pod.metadata.name} had made"
                f" {metric_total(pod, 'mpi_operator_reconciles'):.0f} reconciles ({jobs} jobs)"
            )
        time.sleep(5)
        row.findings += changes(before, snapshot(api, ns, set(names)))
        settle_and_check(api, row, observer, names, workers, timeout, time.monotonic())
        row.settle_s = None  # nothing to settle from: the jobs never stopped Running
    finally:
        observer.stop()
    return row
