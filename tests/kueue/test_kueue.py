"""A real Kueue v0.17 drives MPIJobs through the operator's contract (suspend, pod set info, conditions): quota, priority
preemption, and the scheduling directives Kueue writes into the pod templates. kwok nodes run the pods: launchers
succeed after their `outcome-after`, workers run until deleted."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client

from hack.lib.kwok import end_pod
from hack.lib.wait import wait_until
from tests.kueue.conftest import JOB_CPU, QUEUE_LABEL, Queues, queued_job
from tests.support.mpijob import create_mpijob, get_mpijob, has_condition, wait_condition

pytestmark = [pytest.mark.slow]


def pods_of(api: client.ApiClient, namespace: str, job: str) -> list[client.V1Pod]:
    return (
        client.CoreV1Api(api)
        .list_namespaced_pod(namespace, label_selector=f"training.kubeflow.org/job-name={job}")
        .items
    )


def condition_time(obj: dict[str, Any] | None, ctype: str) -> str:
    """lastTransitionTime of a True condition ("" when there is none): RFC 3339 in UTC, so strings order as times."""
    for c in (obj or {}).get("status", {}).get("conditions", []):
        if c["type"] == ctype and c["status"] == "True":
            return c["lastTransitionTime"]
    return ""


def suspended(job: dict[str, Any] | None) -> bool:
    return bool((job or {}).get("spec", {}).get("runPolicy", {}).get("suspend"))


class Sampler(threading.Thread):
    """Looks at the jobs every 0.3 s while a scenario runs: how many ran at once at most, and every pod seen while
    its job was suspended (none may ever be created)."""

    def __init__(self, api: client.ApiClient, namespace: str, names: list[str]):
        super().__init__(daemon=True)
        self.api, self.namespace, self.names = api, namespace, names
        self.most_running = 0
        self.pods_while_suspended: dict[str, set[str]] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.3):
            jobs = {n: get_mpijob(self.api, self.namespace, n) for n in self.names}
            self.most_running = max(
                self.most_running,
                sum(1 for j in jobs.values() if j and not suspended(j) and not has_condition(j, "Succeeded")),
            )
            for name, job in jobs.items():
                if suspended(job):
                    created = {
                        p.metadata.name
                        for p in pods_of(self.api, self.namespace, name)
                        if p.metadata.deletion_timestamp is None
                        and p.metadata.creation_timestamp.isoformat()
                        > condition_time(job, "Suspended").replace("Z", "+00:00")
                    }
                    if created:
                        self.pods_while_suspended.setdefault(name, set()).update(created)

    def stop(self) -> None:
        self.stopped.set()
        self.join(5)


def test_quota_admits_two_of_five_and_the_rest_in_order_with_no_pod_before_admission(
    queues: Queues, running_operator: Any, api_client: client.ApiClient, namespace: str
) -> None:
    """A ClusterQueue with room for two of five jobs: two run, three wait suspended with no pod; as each ends the next
    is admitted (StrictFIFO: in the order they were created); all five succeed."""
    flavor = queues.flavor()
    local = queues.local_queue(queues.cluster_queue(flavor, f"{2 * JOB_CPU}m", queueingStrategy="StrictFIFO"))
    names = [f"q{i}" for i in range(5)]
    sampler = Sampler(api_client, namespace, names)
    sampler.start()
    try:
        for name in names:
            create_mpijob(api_client, namespace, queued_job(name, local, "6s"))
            time.sleep(1.1)  # creation times a second apart: the FIFO order is unambiguous
        # Two admitted and Running, three suspended with no pod at all.
        for name in names[:2]:
            wait_condition(api_client, namespace, name, "Running", timeout=60)
        for name in names[2:]:
            job = get_mpijob(api_client, namespace, name)
            assert suspended(job) and has_condition(job, "Suspended"), (name, job.get("status"))
            assert pods_of(api_client, namespace, name) == [], name
            workload = queues.workload_of(name)
            assert workload is not None and not condition_time(workload, "Admitted"), name
        for name in names:
            wait_condition(api_client, namespace, name, "Succeeded", timeout=120)
    finally:
        sampler.stop()
    assert sampler.most_running <= 2
    assert sampler.pods_while_suspended == {}
    admitted = [condition_time(queues.workload_of(n), "Admitted") for n in names]
    assert all(admitted) and admitted == sorted(admitted), admitted
    # Each waiting job's pods came after its admission, and it ran only once one before it had ended.
    finished = [condition_time(get_mpijob(api_client, namespace, n), "Succeeded") for n in names]
    for i, name in enumerate(names):
        created = (
            min(p.metadata.creation_timestamp.isoformat() for p in pods_of(api_client, namespace, name))
            if pods_of(api_client, namespace, name)
            else None
        )
        assert created is None or created.replace("+00:00", "Z") >= admitted[i], (name, created, admitted[i])
        if i >= 2:
            assert admitted[i] >= sorted(finished[:i])[i - 2], (name, admitted, finished)


def test_a_higher_priority_job_preempts_and_the_victim_resumes_and_succeeds(
    queues: Queues, running_operator: Any, api_client: client.ApiClient, namespace: str
) -> None:
    """Room for one job. A low-priority job runs; a high-priority one preempts it: the victim is suspended as Kubeflow
    suspends (workers deleted, launcher Job suspended, Suspended condition and event), the high one runs and succeeds,
    then the victim is admitted again and succeeds. Its launcher Job is the same one throughout; nothing is left."""
    flavor = queues.flavor()
    local = queues.local_queue(
        queues.cluster_queue(flavor, f"{JOB_CPU}m", preemption={"withinClusterQueue": "LowerPriority"})
    )
    low, high = queues.priority_class("low", 100), queues.priority_class("high", 1000)
    create_mpijob(api_client, namespace, queued_job("victim", local, "10s", priority=low))
    wait_condition(api_client, namespace, "victim", "Running", timeout=60)
    batch, core = client.BatchV1Api(api_client), client.CoreV1Api(api_client)
    launcher_uid = batch.read_namespaced_job("victim-launcher", namespace).metadata.uid
    first_workers = {p.metadata.uid for p in pods_of(api_client, namespace, "victim") if "worker" in p.metadata.name}
    assert len(first_workers) == 2

    create_mpijob(api_client, namespace, queued_job("urgent", local, "3s", priority=high))
    victim = wait_condition(api_client, namespace, "victim", "Suspended", timeout=60)
    assert suspended(victim) and not has_condition(victim, "Running")
    suspension = next(c for c in victim["status"]["conditions"] if c["type"] == "Suspended")
    assert suspension["reason"] == "MPIJobSuspended", suspension

    def workers_gone() -> bool:
        return not [p for p in pods_of(api_client, namespace, "victim") if "worker" in p.metadata.name]

    wait_until(workers_gone, 30, what="the victim's workers deleted")
    assert batch.read_namespaced_job("victim-launcher", namespace).spec.suspend is True
    evicted = (queues.workload_of("victim") or {}).get("status", {}).get("conditions", [])
    assert any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted" for c in evicted), (
        evicted
    )
    reasons = {
        e.reason
        for e in core.list_namespaced_event(
            namespace, field_selector="involvedObject.name=victim,involvedObject.kind=MPIJob"
        ).items
    }
    assert "MPIJobSuspended" in reasons, reasons

    wait_condition(api_client, namespace, "urgent", "Succeeded", timeout=90)
    victim = wait_condition(api_client, namespace, "victim", "Succeeded", timeout=120)
    assert condition_time(queues.workload_of("victim"), "Admitted") > suspension["lastTransitionTime"]
    assert batch.read_namespaced_job("victim-launcher", namespace).metadata.uid == launcher_uid
    later_workers = {p.metadata.uid for p in pods_of(api_client, namespace, "victim") if "worker" in p.metadata.name}
    assert not later_workers & first_workers

    def nothing_runs() -> bool:
        return all(
            p.status.phase in ("Succeeded", "Failed")
            for n in ("victim", "urgent")
            for p in pods_of(api_client, namespace, n)
        )

    wait_until(nothing_runs, 30, what="no pod of either job left running")


def test_pod_set_info_reaches_every_pod_including_the_launcher_job_made_before_admission(
    queues: Queues, running_operator: Any, api_client: client.ApiClient, namespace: str
) -> None:
    """A ResourceFlavor with node labels and a toleration. The job waits (its LocalQueue does not exist yet) while the
    operator makes its launcher Job, suspended; once admitted, Kueue writes its node selector and toleration into the
    MPIJob, and every pod (the launcher Job's and the workers) carries them. Deactivated, Kueue restores the MPIJob's
    templates; admitted again, the pods carry them once more (no toleration twice)."""
    toleration = {"key": "example.com/kueue-flavor", "operator": "Exists", "effect": "NoSchedule"}
    flavor = queues.flavor(nodeLabels={"type": "kwok"}, tolerations=[toleration])
    cluster_queue = queues.cluster_queue(flavor, f"{JOB_CPU}m")
    create_mpijob(api_client, namespace, queued_job("placed", "lq", "1h"))
    batch = client.BatchV1Api(api_client)

    def launcher_job() -> client.V1Job | None:
        jobs = batch.list_namespaced_job(namespace).items
        return jobs[0] if jobs else None

    before = wait_until(launcher_job, 30, what="the launcher Job made while the job waits")
    assert before.spec.suspend is True and not (before.spec.template.spec.node_selector or {}).get("type")
    assert pods_of(api_client, namespace, "placed") == []

    def live_pods() -> list[client.V1Pod]:
        return [p for p in pods_of(api_client, namespace, "placed") if p.metadata.deletion_timestamp is None]

    def check_placed() -> None:
        wait_until(lambda: len(live_pods()) == 3, 60, what="the launcher and two workers")
        pods = live_pods()
        for pod in pods:
            assert (pod.spec.node_selector or {}).get("type") == "kwok", pod.metadata.name
            mine = [t for t in pod.spec.tolerations or [] if t.key == toleration["key"]]
            assert len(mine) == 1 and mine[0].operator == "Exists", (pod.metadata.name, pod.spec.tolerations)

    queues.local_queue(cluster_queue)
    wait_condition(api_client, namespace, "placed", "Running", timeout=60)
    check_placed()

    # Deactivated: evicted, suspended, and Kueue takes its pod set info back out of the MPIJob.
    queues.patch_workload(queues.workload_of("placed")["metadata"]["name"], {"spec": {"active": False}})
    wait_condition(api_client, namespace, "placed", "Suspended", timeout=60)

    def restored() -> bool:
        job = get_mpijob(api_client, namespace, "placed")
        return all(
            not (r["template"]["spec"].get("nodeSelector") or {}).get("type")
            for r in job["spec"]["mpiReplicaSpecs"].values()
        )

    wait_until(restored, 30, what="Kueue's restore of the MPIJob's pod templates")
    wait_until(lambda: not pods_of(api_client, namespace, "placed"), 60, what="the pods gone")
    queues.patch_workload(queues.workload_of("placed")["metadata"]["name"], {"spec": {"active": True}})
    wait_condition(api_client, namespace, "placed", "Running", timeout=60)
    check_placed()


def test_submit_playbook_queues_the_job_says_why_it_waits_and_reruns_without_touching_it(
    queues: Queues, running_operator: Any, playbook: Any, api_client: client.ApiClient, namespace: str, tmp_path: Any
) -> None:
    """`submit.yml -e mpijob_queue_name=...` into a queue with no room: the job waits suspended, each progress line
    says Kueue keeps it waiting and why (the Workload's condition), and the wait times out saying so. Submitted again
    the same, nothing changes (Kueue's suspension stays). With room, the next submit run waits until it succeeded."""
    cluster_queue = queues.cluster_queue(queues.flavor(), "0")
    local = queues.local_queue(cluster_queue)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(json.dumps(queued_job("waits", "ignored", "3s")))  # the label comes from mpijob_queue_name
    submit = {
        "mpijob_src": str(manifest),
        "mpijob_namespace": namespace,
        "mpijob_queue_name": local,
        "mpijob_poll_interval": 1,
    }
    run = playbook("submit.yml", extra_vars={**submit, "mpijob_wait_timeout": 4})
    assert run.returncode != 0
    why = f"(queued by Kueue in LocalQueue {local}: QuotaReserved Pending: couldn't assign flavors to pod set"
    assert "MPIJob progress: " in run.output and why in run.output, run.output[-4000:]
    assert f"timed out after 4s waiting for MPIJob {namespace}/waits" in run.output, run.output[-4000:]
    job = get_mpijob(api_client, namespace, "waits")
    assert suspended(job) and job["metadata"]["labels"][QUEUE_LABEL] == local
    assert pods_of(api_client, namespace, "waits") == []

    again = playbook("submit.yml", extra_vars={**submit, "mpijob_wait": False}).expect_ok()
    assert again.recap["changed"] == 0, again.output[-4000:]
    assert suspended(get_mpijob(api_client, namespace, "waits"))

    queues.set_quota(cluster_queue, f"{JOB_CPU}m")
    done = playbook("submit.yml", extra_vars={**submit, "mpijob_wait_timeout": 120}).expect_ok()
    assert done.recap["changed"] == 0, done.output[-4000:]
    assert has_condition(get_mpijob(api_client, namespace, "waits"), "Succeeded")


def test_a_restart_of_the_world_keeps_the_jobs_admission(
    queues: Queues, running_operator: Any, api_client: client.ApiClient, namespace: str
) -> None:
    """A failure policy's restart under Kueue: the job is never suspended, its Workload stays the same one and stays
    admitted (no re-queue, no eviction), and the restarted world runs to the end within the quota."""
    local = queues.local_queue(queues.cluster_queue(queues.flavor(), f"{JOB_CPU}m"))
    body = queued_job("restarted", local, "20s")
    body["spec"]["runPolicy"]["failurePolicy"] = {"maxRestarts": 1}
    create_mpijob(api_client, namespace, body)
    wait_condition(api_client, namespace, "restarted", "Running", timeout=60)
    workload = queues.workload_of("restarted") or {}
    admitted = condition_time(workload, "Admitted")
    seen_suspended = threading.Event()

    def watch() -> None:
        while not seen_suspended.is_set() and not has_condition(
            get_mpijob(api_client, namespace, "restarted"), "Succeeded"
        ):
            if suspended(get_mpijob(api_client, namespace, "restarted")):
                seen_suspended.set()
            time.sleep(0.3)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    end_pod(client.CoreV1Api(api_client), namespace, "restarted-worker-1", 1)
    wait_until(
        lambda: (get_mpijob(api_client, namespace, "restarted") or {}).get("status", {}).get("restartCount") == 1,
        60,
        what="the restart",
    )
    wait_condition(api_client, namespace, "restarted", "Running", timeout=60)  # the new world runs
    after = queues.workload_of("restarted") or {}
    assert after["metadata"]["uid"] == workload["metadata"]["uid"]
    assert condition_time(after, "Admitted") == admitted  # admitted once, never again
    assert not any(c["type"] == "Evicted" and c["status"] == "True" for c in after["status"].get("conditions", []))
    job = wait_condition(api_client, namespace, "restarted", "Succeeded", timeout=120)
    watcher.join(10)
    assert not seen_suspended.is_set() and job["status"]["restartCount"] == 1
