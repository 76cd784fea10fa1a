"""Plans: desired vs observed -> ordered actions, and idempotence (a second plan on the result is empty)."""

from __future__ import annotations

import copy
import hashlib

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.planner import plan_job
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Outcome

from ._helpers import (
    at,
    finish_launcher,
    kinds,
    launcher_pod,
    manifest,
    plan,
    run_all,
    set_phase,
    settle,
    with_status,
    world_after,
)


def test_new_job_creates_children_in_kubeflow_order() -> None:
    p = plan(manifest())
    assert kinds(p) == [
        ("create", "Service", "pi"),
        ("create", "ConfigMap", "pi-config"),
        ("create", "Secret", "pi-ssh"),
        ("create", "Pod", "pi-worker-0"),
        ("create", "Pod", "pi-worker-1"),
        ("create", "Job", "pi-launcher"),
        ("status", "MPIJob", "pi"),
        ("event", "Event", "MPIJobCreated"),
    ]
    assert p.status["conditions"][0]["type"] == "Created" and p.status["startTime"] == "2026-01-01T00:00:00Z"
    assert p.status["replicaStatuses"]["Worker"]["selector"] == (
        "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker,"
        "training.kubeflow.org/operator-name=mpi-operator"
    )


def test_reconcile_is_idempotent() -> None:
    world = settle(manifest())
    again = plan(world.mpijob, world, now=at(30))
    assert again.actions == [] and again.status == world.mpijob["status"]


def test_running_when_launcher_and_all_workers_run() -> None:
    world = run_all(settle(manifest()))
    p = plan(world.mpijob, world, now=at(20))
    assert p.status["conditions"][-1]["type"] == "Running" and p.status["conditions"][-1]["status"] == "True"
    assert p.status["replicaStatuses"]["Worker"]["active"] == 2
    assert p.status["replicaStatuses"]["Launcher"] == {"active": 1}
    assert ("event", "Event", "MPIJobRunning") in kinds(p)
    # the hostfile stays static, discover_hosts.sh now lists the Running workers with their slots
    cm = next(a for a in p.actions if a.kind == "ConfigMap")
    assert cm.body["data"]["discover_hosts.sh"] == (
        "#!/bin/sh\necho pi-worker-0.pi.ns.svc:1\necho pi-worker-1.pi.ns.svc:1\n"
    )


def test_succeeded_then_clean_pod_policy_all_removes_workers_and_launcher_pods() -> None:
    world = run_all(settle(manifest(runPolicy={"cleanPodPolicy": "All"})))
    world = finish_launcher(world_after(world, plan(world.mpijob, world, now=at(20))))
    world.pods[-1] = set_phase(world.pods[-1], "Succeeded")
    p = plan(world.mpijob, world, now=at(400))
    st = p.status
    assert S.is_true(st, "Succeeded") and st["completionTime"] == "2026-01-01T00:05:00Z"
    assert S.get_condition(st, "Running")["status"] == "False"
    assert st["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert "active" not in st["replicaStatuses"]["Worker"]
    deleted = [a.name for a in p.actions if a.action == "delete"]
    assert deleted == ["pi-worker-0", "pi-worker-1", "pi-launcher-abcde"]
    assert not any(a.action == "create" for a in p.actions)


def test_cleanup_later_writes_the_outcome_now_and_cleans_up_in_the_next_pass() -> None:
    """Options.cleanup_later (the operator's): the pass in which the job finishes writes its status and events only;
    the next pass, on the written status, does the clean-up the same pass would have done, and nothing else."""
    later = K.Options(cleanup_later=True)
    world = run_all(settle(manifest(runPolicy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 600})))
    world = finish_launcher(world_after(world, plan(world.mpijob, world, now=at(20))))
    world.pods[-1] = set_phase(world.pods[-1], "Succeeded")
    same_pass = plan(world.mpijob, world, now=at(400))
    first = plan(world.mpijob, world, later, now=at(400))
    assert first.cleanup_pending and not same_pass.cleanup_pending
    # the same status, less the record of the launcher pod the clean-up deletes: the clean-up's pass keeps it
    assert [a.action for a in first.actions] == ["status", "event"] and "record" not in first.status
    assert first.status == {k: v for k, v in (same_pass.status or {}).items() if k != "record"}
    assert first.requeue_after == same_pass.requeue_after  # the TTL's deadline is kept
    world = world_after(world, first)
    second = plan(world.mpijob, world, later, now=at(401))
    assert not second.cleanup_pending
    deletes = [a for a in kinds(same_pass) if a[0] == "delete"]
    assert kinds(second) == [
        ("status", "MPIJob", "pi"),
        ("record", "ConfigMap", "pi-record"),
        *deletes,
        ("event", "Event", "MPIJobRecorded"),
    ]
    assert plan(world_after(world, second).mpijob, world_after(world, second), later, now=at(402)).actions == []


def test_cleanup_later_has_nothing_to_defer_without_a_clean_up_or_once_the_ttl_expired() -> None:
    later = K.Options(cleanup_later=True)
    world = finish_launcher(run_all(settle(manifest())))  # cleanPodPolicy None
    p = plan(world.mpijob, world, later, now=at(400))
    assert S.is_true(p.status, "Succeeded") and not p.cleanup_pending
    world = finish_launcher(
        run_all(settle(manifest(runPolicy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0})))
    )
    p = plan(world.mpijob, world, later, now=at(400))
    assert p.outcome is Outcome.DELETED and not p.cleanup_pending  # the MPIJob goes, its children with it


def test_clean_pod_policy_running_keeps_finished_pods() -> None:
    world = run_all(settle(manifest(runPolicy={"cleanPodPolicy": "Running"})))
    world.pods[0] = set_phase(world.pods[0], "Succeeded")
    world = finish_launcher(world)
    world.pods[-1] = set_phase(world.pods[-1], "Succeeded")
    p = plan(world.mpijob, world, now=at(400))
    assert [a.name for a in p.actions if a.action == "delete"] == ["pi-worker-1"]


def test_clean_pod_policy_none_keeps_everything() -> None:
    world = finish_launcher(run_all(settle(manifest())))
    p = plan(world.mpijob, world, now=at(400))
    assert not [a for a in p.actions if a.action == "delete"]
    world = world_after(world, p)
    assert plan(world.mpijob, world, now=at(500)).actions == []


def test_launcher_backoff_failure_names_the_last_pod_reason() -> None:
    world = run_all(settle(manifest()))
    world.pods[-1] = set_phase(world.pods[-1], "Failed")
    world.pods[-1]["status"].update(reason="Error", message="exit 1")
    world = finish_launcher(world, "Failed", "BackoffLimitExceeded")
    world.launcher["status"]["conditions"][0]["message"] = "Job has reached the specified backoff limit"
    p = plan(world.mpijob, world, now=at(60))
    cond = S.get_condition(p.status, "Failed")
    assert cond["reason"] == "BackoffLimitExceeded/Error"
    assert cond["message"] == "Job has reached the specified backoff limit: exit 1"
    assert p.status["completionTime"] == "2026-01-01T00:01:00Z"
    assert ("event", "Event", "BackoffLimitExceeded/Error") in kinds(p)


def test_launcher_backoff_failure_without_a_pod_reason_names_how_the_container_ended() -> None:
    # A plain non-zero exit leaves the pod's reason empty; Kubeflow then reports "BackoffLimitExceeded/".
    world = run_all(settle(manifest()))
    world.pods[-1] = set_phase(world.pods[-1], "Failed")
    world.pods[-1]["status"]["containerStatuses"] = [
        {"name": "launcher", "state": {"terminated": {"reason": "Error", "exitCode": 3}}}
    ]
    world = finish_launcher(world, "Failed", "BackoffLimitExceeded")
    world.launcher["status"]["conditions"][0]["message"] = "Job has reached the specified backoff limit"
    cond = S.get_condition(plan(world.mpijob, world, now=at(60)).status, "Failed")
    assert cond["reason"] == "BackoffLimitExceeded/Error"
    assert cond["message"] == "Job has reached the specified backoff limit: launcher container exited with code 3"


def test_evicted_worker_fails_the_job_with_a_completion_time_so_cleanup_runs() -> None:
    world = run_all(settle(manifest(runPolicy={"cleanPodPolicy": "All"})))
    world.pods[1] = set_phase(world.pods[1], "Failed", reason="Evicted")
    p = plan(world.mpijob, world, now=at(90))
    cond = S.get_condition(p.status, "Failed")
    assert (cond["reason"], cond["message"]) == ("MPIJobEvicted", "1/2 workers are evicted")
    assert p.status["completionTime"] == "2026-01-01T00:01:30Z"
    # cleanup in the same pass: workers deleted, the still-running launcher Job suspended
    assert ("delete", "Pod", "pi-worker-0") in kinds(p) and ("delete", "Pod", "pi-worker-1") in kinds(p)
    suspend = next(a for a in p.actions if a.kind == "Job")
    assert suspend.body == {"spec": {"suspend": True}}


def test_failed_worker_shows_in_conditions() -> None:
    world = run_all(settle(manifest()))
    world = world_after(world, plan(world.mpijob, world, now=at(20)))
    world.pods[1] = set_phase(world.pods[1], "Failed")
    world.pods[1]["status"]["containerStatuses"] = [{"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]
    p = plan(world.mpijob, world, now=at(40))
    cond = p.status["conditions"][-1]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Running", "False", "MPIJobWorkerFailed")
    assert cond["message"] == "1/2 workers failed: pi-worker-1 (OOMKilled, exit code 137)"
    assert p.status["replicaStatuses"]["Worker"] == {
        "active": 1,
        "failed": 1,
        "selector": p.status["replicaStatuses"]["Worker"]["selector"],
    }
    assert ("event", "Event", "MPIJobWorkerFailed") in kinds(p)
    world = world_after(world, p)
    assert plan(world.mpijob, world, now=at(50)).actions == []  # no repeated event


def test_suspend_and_resume() -> None:
    obj = manifest()
    world = run_all(settle(obj))
    world = world_after(world, plan(world.mpijob, world, now=at(20)))
    world.mpijob["spec"]["runPolicy"] = {"suspend": True}
    p = plan(world.mpijob, world, now=at(30))
    assert ("patch", "Job", "pi-launcher") in kinds(p)
    assert {a.name for a in p.actions if a.action == "delete"} == {"pi-worker-0", "pi-worker-1"}
    assert S.is_true(p.status, "Suspended") and S.get_condition(p.status, "Running")["reason"] == "MPIJobSuspended"
    assert p.status["replicaStatuses"]["Worker"].get("active") is None
    world = world_after(world, p)
    world.pods = []  # the Job controller removed the launcher pod
    world.launcher["status"] = {"startTime": "2026-01-01T00:00:05Z"}
    p = plan(world.mpijob, world, now=at(40))
    assert kinds(p) == [("status", "MPIJob", "pi")] and p.status["replicaStatuses"]["Launcher"] == {}
    world = world_after(world, p)

    world.mpijob["spec"]["runPolicy"] = {"suspend": False}
    p = plan(world.mpijob, world, now=at(60))
    resumed = S.get_condition(p.status, "Suspended")
    assert (resumed["status"], resumed["reason"]) == ("False", "MPIJobResumed")
    assert p.status["startTime"] == "2026-01-01T00:01:00Z"
    job_actions = [a for a in p.actions if a.kind == "Job"]
    assert [a.subresource for a in job_actions] == ["status", ""]  # startTime cleared first
    assert job_actions[1].body["spec"]["suspend"] is False
    assert [a.name for a in p.actions if a.action == "create"] == ["pi-worker-0", "pi-worker-1"]


def test_wait_for_workers_ready_is_honoured_after_resume() -> None:
    obj = manifest(launcherCreationPolicy="WaitForWorkersReady", runPolicy={"suspend": True})
    world = settle(obj)
    assert world.launcher["spec"]["suspend"] is True and world.pods == []
    world.mpijob["spec"]["runPolicy"] = {"suspend": False}
    p = plan(world.mpijob, world, now=at(60))
    assert not [a for a in p.actions if a.kind == "Job"]  # workers are not Ready yet: the launcher stays suspended
    world = world_after(world, p)
    world.pods = [set_phase(pod, "Running", ready=False) for pod in world.pods]
    assert not [a for a in plan(world.mpijob, world, now=at(70)).actions if a.kind == "Job"]
    world.pods = [set_phase(pod, "Running", ready=True) for pod in world.pods]
    p = plan(world.mpijob, world, now=at(80))
    assert [a.body["spec"]["suspend"] for a in p.actions if a.kind == "Job"] == [False]


def test_wait_for_workers_ready_creates_the_launcher_after_the_workers() -> None:
    world = settle(manifest(launcherCreationPolicy="WaitForWorkersReady"))
    assert world.launcher is None and len(world.pods) == 2
    world.pods = [set_phase(pod, "Running", ready=True) for pod in world.pods]
    p = plan(world.mpijob, world, now=at(10))
    assert ("create", "Job", "pi-launcher") in kinds(p)


def _going(pod: dict) -> dict:
    pod = copy.deepcopy(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:50Z"
    return pod


def test_wait_for_workers_ready_does_not_count_workers_being_deleted() -> None:
    # A resume right after a pause: the old workers are still going away, Ready until their containers stop. The
    # launcher waits for workers that stay (CI of 0dc80fb: a T9k launcher started against them exited 255).
    world = settle(manifest(launcherCreationPolicy="WaitForWorkersReady"))
    world.pods = [_going(set_phase(pod, "Running", ready=True)) for pod in world.pods]
    p = plan(world.mpijob, world, now=at(60))
    assert not [a for a in p.actions if a.kind == "Job"]
    fresh = [set_phase(pod, "Running", ready=True) for pod in settle(world.mpijob).pods]
    world.pods = fresh[:1] + world.pods[1:]  # one replaced, one still going
    assert not [a for a in plan(world.mpijob, world, now=at(61)).actions if a.kind == "Job"]
    world.pods = fresh
    assert ("create", "Job", "pi-launcher") in kinds(plan(world.mpijob, world, now=at(62)))


def test_resume_keeps_the_launcher_suspended_while_old_workers_are_going() -> None:
    obj = manifest(launcherCreationPolicy="WaitForWorkersReady", runPolicy={"suspend": True})
    world = settle(obj)
    world.mpijob["spec"]["runPolicy"] = {"suspend": False}
    world = world_after(world, plan(world.mpijob, world, now=at(60)))
    world.pods = [_going(set_phase(pod, "Running", ready=True)) for pod in world.pods]
    assert not [a for a in plan(world.mpijob, world, now=at(70)).actions if a.kind == "Job"]


def test_created_suspended_makes_a_suspended_launcher_and_no_workers() -> None:
    p = plan(manifest(runPolicy={"suspend": True}))
    assert not any(a.kind == "Pod" for a in p.actions)
    launcher = next(a for a in p.actions if a.kind == "Job")
    assert launcher.body["spec"]["suspend"] is True
    assert "startTime" not in p.status and S.is_true(p.status, "Suspended")


def test_elastic_scale_down_deletes_highest_indices_first_and_rewrites_the_hostfile() -> None:
    world = run_all(settle(manifest(workers=4)))
    world = world_after(world, plan(world.mpijob, world, now=at(20)))
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 2
    p = plan(world.mpijob, world, now=at(30))
    cm = next(a for a in p.actions if a.kind == "ConfigMap")
    assert cm.body["data"]["hostfile"] == "pi-worker-0.pi.ns.svc slots=1\npi-worker-1.pi.ns.svc slots=1\n"
    assert "pi-worker-2" not in cm.body["data"]["discover_hosts.sh"]
    # The running launcher is told of the new hosts list first (test_scale_down_waits_until_the_launcher_knows...).
    for now in (31, 32, 36):
        assert not [a for a in p.actions if a.action == "delete"]
        world = world_after(world, p)
        p = plan(world.mpijob, world, now=at(now))
    assert [a.name for a in p.actions if a.action == "delete"] == ["pi-worker-3", "pi-worker-2"]
    world = world_after(world, p)
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    p = plan(world.mpijob, world, now=at(40))
    assert [a.name for a in p.actions if a.action == "create"] == ["pi-worker-2"]
    assert (
        "pi-worker-2.pi.ns.svc slots=1" in next(a for a in p.actions if a.kind == "ConfigMap").body["data"]["hostfile"]
    )


def test_scaling_updates_a_derived_pod_group() -> None:
    opts = K.Options(gang_scheduling="volcano")
    world = settle(manifest(workers=2), opts)
    assert world.pod_group["spec"]["minMember"] == 3
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 5
    p = plan(world.mpijob, world, opts)
    assert next(a for a in p.actions if a.kind == "PodGroup").body == {"spec": {"minMember": 6}}
    assert kinds(p).index(("patch", "PodGroup", "pi")) < kinds(p).index(("create", "Pod", "pi-worker-2"))


def test_suspend_deletes_the_pod_group() -> None:
    opts = K.Options(gang_scheduling="scheduler-plugins-scheduler")
    world = settle(manifest(), opts)
    world.mpijob["spec"]["runPolicy"] = {"suspend": True}
    assert ("delete", "PodGroup", "pi") in kinds(plan(world.mpijob, world, opts, at(5)))


def test_ttl_deletes_the_mpijob_after_it_finished() -> None:
    world = finish_launcher(run_all(settle(manifest(runPolicy={"ttlSecondsAfterFinished": 600}))))
    p = plan(world.mpijob, world, now=at(310))
    assert p.requeue_after == 590.0 and p.outcome is Outcome.OK  # completed at 00:05:00
    world = world_after(world, p)
    p = plan(world.mpijob, world, now=at(900))
    assert p.outcome is Outcome.DELETED and kinds(p)[-1] == ("delete-mpijob", "MPIJob", "pi")
    assert p.actions[-1].uid == "uid-pi"


def test_active_deadline_requeues() -> None:
    p = plan(manifest(runPolicy={"activeDeadlineSeconds": 100}), now=at(0))
    assert p.requeue_after == 101.0


def test_a_child_owned_by_someone_else_is_not_taken_over() -> None:
    obj = manifest()
    foreign = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pi", "ownerReferences": []}}
    p = plan(obj, P.World(mpijob=obj, service=foreign))
    assert kinds(p) == [("event", "Event", "ErrResourceExists")]
    assert (
        p.error == 'Resource "pi" of Kind "Service" already exists and is not managed by MPIJob'
        and p.outcome is Outcome.RETRY
    )


def test_drift_is_repaired() -> None:
    world = settle(manifest())
    world.service["spec"]["selector"] = {"app": "other"}
    world.secret["data"].pop("ssh-publickey")
    world.config_map["data"]["hostfile"] = "tampered\n"
    p = plan(world.mpijob, world, now=at(10))
    assert kinds(p) == [("patch", "Service", "pi"), ("patch", "ConfigMap", "pi-config"), ("patch", "Secret", "pi-ssh")]
    assert p.actions[0].body["spec"]["selector"]["app"] is None  # a merge patch that replaces the selector
    assert (
        world_after(world, p).service["spec"]["selector"] == K.service(kubeflow.parse(world.mpijob))["spec"]["selector"]
    )


def test_malformed_job_gets_a_failed_condition_and_a_warning_naming_the_field() -> None:
    obj = manifest()
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 0
    p = plan(obj)
    assert kinds(p) == [("status", "MPIJob", "pi"), ("event", "Event", "ValidationError")]
    cond = p.status["conditions"][-1]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Failed", "True", "ValidationError")
    assert "spec.mpiReplicaSpecs.Worker.replicas: must be >= 1" in cond["message"]
    assert (
        p.actions[1].body["type"] == "Warning"
        and "spec.mpiReplicaSpecs.Worker.replicas" in p.actions[1].body["message"]
    )
    assert p.error and p.outcome is Outcome.ERROR
    fixed = with_status(obj, p.status)
    assert plan(fixed, now=at(5)).actions == []  # no new event for the same error
    fixed["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    p = plan(fixed, now=at(10))
    assert S.get_condition(p.status, "Failed") is None and ("create", "Pod", "pi-worker-0") in kinds(p)


def test_externally_managed_jobs_are_left_alone() -> None:
    p = plan(manifest(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    assert p.actions == [] and p.status == {}


def test_terminating_job_is_left_alone() -> None:
    obj = manifest()
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert plan(obj).actions == []


def test_restart_policy_in_launcher_template_warns() -> None:
    obj = manifest()
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] = "Always"
    p = plan(obj)
    assert ("event", "Event", "SetPodTemplateRestartPolicy") in kinds(p)
    launcher = next(a for a in p.actions if a.kind == "Job")
    assert launcher.body["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_ssh_keys_are_made_only_when_the_secret_is_missing() -> None:
    calls = []

    def keys():
        calls.append(1)
        return b"k", b"p"

    obj = manifest()
    world = settle(obj)
    plan_job(world.mpijob, world, K.Options(), at(1), keys)
    assert calls == []
    plan_job(obj, P.World(mpijob=obj), K.Options(), at(1), keys)
    assert calls == [1]


def test_resume_merges_template_labels_and_keeps_other_annotations() -> None:
    world = settle(manifest(runPolicy={"suspend": True}))
    world.mpijob["spec"]["runPolicy"] = {"suspend": False}
    world.mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["nodeSelector"] = {"zone": "b"}
    world.launcher["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a", "pool": "x"}
    resume = next(a for a in plan(world.mpijob, world, now=at(5)).actions if a.kind == "Job")
    tmpl = resume.body["spec"]["template"]
    assert "annotations" not in tmpl["metadata"]  # a merge patch with null would drop e.g. Kueue's annotations
    assert tmpl["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"
    assert tmpl["spec"]["nodeSelector"] == {"zone": "b", "pool": None}  # replaced, as Kubeflow does


def test_scale_down_waits_until_the_launcher_knows_the_workers_are_going() -> None:
    """Horovod's elastic driver reads discover_hosts.sh every second, from the ConfigMap volume the kubelet rewrites
    at its periodic sync (up to about a minute): a worker deleted before the launcher's file drops it can be given a
    rank again in the next world, which then waits for it until Gloo's timeout and fails the job. So: the
    ConfigMap first, then the launcher pod's annotation (the kubelet rewrites a changed pod's volumes at once), then,
    C.HOSTS_NOTICE_S later, the workers."""
    world = run_all(settle(manifest(workers=3)))
    world = world_after(world, plan(world.mpijob, world, now=at(20)))
    assert plan(world.mpijob, world, now=at(21)).actions == []  # a steady job: its launcher is not told anything
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1

    p = plan(world.mpijob, world, now=at(30))  # 1. the ConfigMap, nothing else
    assert [(a.action, a.kind) for a in p.actions if a.kind != "MPIJob"] == [("patch", "ConfigMap")]
    assert p.requeue_after == 1.0
    world = world_after(world, p)

    p = plan(world.mpijob, world, now=at(31))  # 2. the launcher pod, told of the file the ConfigMap now has
    [poke] = [a for a in p.actions if a.kind == "Pod"]
    digest = hashlib.sha256(world.config_map["data"]["discover_hosts.sh"].encode()).hexdigest()[:16]
    assert (poke.action, poke.name, poke.reason) == ("patch", "pi-launcher-abcde", "hosts")
    assert poke.body == {"metadata": {"annotations": {C.DISCOVER_HOSTS_ANNOTATION: f"{digest}@2026-01-01T00:00:31Z"}}}
    world = world_after(world, p)

    p = plan(world.mpijob, world, now=at(33))  # 3. C.HOSTS_NOTICE_S for the kubelet and Horovod's discovery
    assert p.actions == [] and p.requeue_after == C.HOSTS_NOTICE_S - 2
    p = plan(world.mpijob, world, now=at(36))  # 4. the workers
    assert [(a.action, a.name) for a in p.actions if a.kind == "Pod"] == [
        ("delete", "pi-worker-2"),
        ("delete", "pi-worker-1"),
    ]


@pytest.mark.parametrize("launcher_phase", ["Pending", "Succeeded", None])
def test_scale_down_without_a_running_launcher_deletes_at_once(launcher_phase: str | None) -> None:
    world = settle(manifest(workers=3))
    world.pods = [set_phase(p, "Running", ready=True) for p in world.pods]
    if launcher_phase:
        world.pods.append(launcher_pod(world, launcher_phase))
    world = world_after(world, plan(world.mpijob, world, now=at(20)))
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 2
    p = plan(world.mpijob, world, now=at(30))
    assert [(a.action, a.name) for a in p.actions if a.kind == "Pod"] == [("delete", "pi-worker-2")]


def test_a_pending_worker_scaled_away_goes_at_once() -> None:
    """Not Running, it was never in discover_hosts.sh: nothing to tell the launcher."""
    world = run_all(settle(manifest(workers=3)))
    world.pods = [set_phase(p, "Pending") if p["metadata"]["name"] == "pi-worker-2" else p for p in world.pods]
    world = world_after(world, plan(world.mpijob, world, now=at(20)))
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 2
    p = plan(world.mpijob, world, now=at(30))
    assert [(a.action, a.name) for a in p.actions if a.kind == "Pod"] == [("delete", "pi-worker-2")]
