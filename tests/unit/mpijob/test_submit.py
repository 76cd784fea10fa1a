"""The pure half of mpi.operator.mpijob / mpijob_info (module_utils/mpijob/submit.py): short form, overlays, patches,
summary, messages. The shell half is tested in tests/unit/kube/test_mpijob_task.py and test_jobs.py."""

import copy
from datetime import datetime, timezone

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import submit as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis.kubeflow import parse
from tests.support.paths import ROOT

NOW = datetime(2026, 1, 1, 12, 0, 30, tzinfo=timezone.utc)


def short(**kw):
    return {"name": "pi", "image": "img:1", "command": ["mpirun", "-n", "2", "/opt/mpi/pi"], **kw}


def test_short_form_is_a_valid_v2beta1_job_with_sshd_workers():
    m = S.short_form_manifest(short(workers=3, slots_per_worker=2, namespace="team"))
    job = parse(m)
    assert m["apiVersion"] == "kubeflow.org/v2beta1" and m["metadata"] == {"name": "pi", "namespace": "team"}
    assert (job.worker_replicas, job.slots_per_worker, job.mpi_implementation) == (3, 2, "OpenMPI")
    launcher = m["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    worker = m["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert launcher["args"] == ["mpirun", "-n", "2", "/opt/mpi/pi"] and "command" not in launcher
    assert "command" not in worker  # the operator gives command-less workers sshd
    assert m["spec"]["runPolicy"] == {"cleanPodPolicy": "Running"}


def test_short_form_command_string_resources_env_and_suspend():
    m = S.short_form_manifest(
        short(
            command="mpirun -n 2 'a b'",
            resources={"cpu": 1, "memory": "1Gi"},
            launcher_resources={"limits": {"cpu": "500m"}},
            env={"A": 1},
            mpi_implementation="MPICH",
            suspend=True,
            labels={"team": "x"},
        )
    )
    specs = m["spec"]["mpiReplicaSpecs"]
    launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert launcher["args"] == ["mpirun", "-n", "2", "a b"]
    assert worker["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert launcher["resources"] == {"limits": {"cpu": "500m"}}
    assert launcher["env"] == worker["env"] == [{"name": "A", "value": "1"}]
    assert m["spec"]["mpiImplementation"] == "MPICH" and m["spec"]["runPolicy"]["suspend"] is True
    assert m["metadata"]["labels"] == {"team": "x"}


@pytest.mark.parametrize(
    "params, needle",
    [
        ({"name": "pi", "image": "i"}, "needs command"),
        ({"image": "i", "command": ["x"]}, "needs name"),
        (short(resources={"requests": {"cpu": 1}, "cpu": 1}), "resources: give either"),
        (short(resources="1 cpu"), "resources: must be a dict"),
    ],
)
def test_short_form_errors_name_the_option(params, needle):
    with pytest.raises(S.SubmitError, match=needle):
        S.short_form_manifest(params)


def test_short_form_invalid_job_names_the_field():
    with pytest.raises(S.SubmitError, match=r"spec.mpiReplicaSpecs.Worker.replicas: must be >= 1"):
        S.desired_manifest(short(workers=0), None)
    with pytest.raises(S.SubmitError, match=r"metadata.name: .*DNS label"):
        S.desired_manifest(short(name="Pi"), None)


def load(path):
    return yaml.safe_load((ROOT / path).read_text())


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").rglob("*.yaml")))
def test_every_example_is_a_valid_mpijob(path):
    # a file may bring what its job needs along (a List with a claim, a ConfigMap): the one MPIJob in it
    manifest = S.desired_manifest({}, S.one_mpijob([load(path)], path))
    assert parse(manifest).name == manifest["metadata"]["name"]


def test_definition_overlay_workers_suspend_and_namespace():
    definition = load("examples/v1/tensorflow-mnist-elastic.yaml")
    m = S.desired_manifest({"workers": 3, "suspend": False, "namespace": "ml"}, definition)
    assert m["apiVersion"] == "kubeflow.org/v1"  # applied as written: the API serves v1
    assert m["metadata"]["namespace"] == "ml"
    assert m["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    assert m["spec"]["runPolicy"]["suspend"] is False
    assert definition["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2  # the input is not modified
    assert S.desired_manifest({}, definition)["metadata"]["namespace"] == "default"
    renamed = S.desired_manifest({"name": "mnist-3f2a", "namespace": "ml"}, m)
    assert renamed["metadata"] == {"name": "mnist-3f2a", "namespace": "ml"}


@pytest.mark.parametrize(
    "params, definition, needle",
    [
        ({"namespace": "b"}, {"metadata": {"name": "pi", "namespace": "a"}}, "namespace: 'b' differs from metadata.na"),
        ({"image": "x"}, {"metadata": {"name": "pi"}}, "cannot be combined"),
        ({}, {"kind": "Job", "metadata": {"name": "pi"}}, "kind must be MPIJob"),
        ({}, ["a"], "must be a dict"),
        ({}, {"apiVersion": "kubeflow.org/v9", "metadata": {"name": "pi"}, "spec": {}}, "apiVersion: unsupported"),
    ],
)
def test_definition_errors(params, definition, needle):
    with pytest.raises(S.SubmitError, match=needle):
        S.desired_manifest(params, definition)


def test_no_manifest_means_patch_mode():
    assert S.desired_manifest({"name": "pi", "workers": 3}, None) is None


def job(replicas=2, suspend=None, conditions=(), status_extra=None):
    j = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {
            "name": "pi",
            "namespace": "ns",
            "creationTimestamp": "2026-01-01T12:00:00Z",
            "resourceVersion": "7",
            "managedFields": [{"manager": "x"}],
        },
        "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": replicas}}},
    }
    if suspend is not None:
        j["spec"]["runPolicy"] = {"suspend": suspend}
    status = {"conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions]}
    status.update(status_extra or {})
    j["status"] = status
    return j


def test_job_patch_only_what_differs():
    assert S.job_patch(job(2), 2, None) is None
    assert S.job_patch(job(2), 3, None) == {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}}
    assert S.job_patch(job(2), None, True) == {"spec": {"runPolicy": {"suspend": True}}}
    assert S.job_patch(job(2, suspend=True), None, True) is None
    assert S.job_patch(job(2), None, False) is None  # unset means not suspended
    no_worker = job()
    del no_worker["spec"]["mpiReplicaSpecs"]["Worker"]
    with pytest.raises(S.SubmitError, match="no Worker replica spec"):
        S.job_patch(no_worker, 2, None)


def test_differs_ignores_server_bookkeeping():
    a, b = job(), job()
    b["metadata"].update(resourceVersion="8", managedFields=[], generation=3)
    b["status"] = {"conditions": []}
    assert not S.differs(a, b)
    b["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    assert S.differs(a, b)
    assert S.differs(None, a) and not S.differs(None, None)


@pytest.mark.parametrize(
    "conditions, phase",
    [
        ((), "Pending"),
        ((("Created", "True", "MPIJobCreated", ""),), "Created"),
        ((("Created", "True", "", ""), ("Running", "True", "MPIJobRunning", "")), "Running"),
        (
            (
                ("Created", "True", "", ""),
                ("Running", "False", "MPIJobSuspended", ""),
                ("Suspended", "True", "MPIJobSuspended", ""),
            ),
            "Suspended",
        ),
        ((("Suspended", "False", "MPIJobResumed", ""), ("Running", "True", "", "")), "Running"),
        ((("Running", "False", "", ""), ("Succeeded", "True", "MPIJobSucceeded", "")), "Succeeded"),
        ((("Running", "False", "", ""), ("Failed", "True", "BackoffLimitExceeded", "")), "Failed"),
    ],
)
def test_phase_from_conditions(conditions, phase):
    assert S.job_phase(job(conditions=conditions)) == phase


def test_summary_counts_elapsed_and_progress_line():
    j = job(
        3,
        conditions=[("Created", "True", "MPIJobCreated", ""), ("Running", "True", "MPIJobRunning", "")],
        status_extra={
            "startTime": "2026-01-01T12:00:10Z",
            "replicaStatuses": {"Worker": {"active": 2, "failed": 1}, "Launcher": {"active": 1}},
        },
    )
    s = S.summary(j, NOW)
    assert (s["phase"], s["workers"], s["workers_running"], s["workers_failed"], s["launcher_active"]) == (
        "Running",
        3,
        2,
        1,
        1,
    )
    assert s["elapsed_seconds"] == 30 and not s["finished"]  # since creation, not since startTime
    assert s["progress"] == "ns/pi: Running, workers 2/3 running, 1 failed, 30s elapsed"


def pod(name, phase="Pending", scheduled=None, waiting=None, init_waiting=None):
    status = {"phase": phase, "conditions": []}
    if scheduled:
        status["conditions"].append(
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": scheduled}
        )
    if waiting:
        status["containerStatuses"] = [
            {"name": "worker", "state": {"waiting": dict(zip(("reason", "message"), waiting))}}
        ]
    if init_waiting:
        status["initContainerStatuses"] = [{"name": "gate", "state": {"waiting": {"reason": init_waiting}}}]
    return {"metadata": {"name": name}, "status": status}


def test_a_waiting_job_says_which_pods_wait_and_why():
    created = job(3, conditions=[("Created", "True", "MPIJobCreated", "")])
    assert S.needs_pods(created)
    pods = [
        pod("pi-worker-1", scheduled="0/5 nodes are available: 5 Insufficient cpu."),
        pod("pi-worker-0", scheduled="0/5 nodes are available: 5 Insufficient cpu."),
        pod("pi-worker-2", waiting=("ImagePullBackOff", 'Back-off pulling image "nope:1"')),
        pod("pi-launcher-x", init_waiting="PodInitializing"),  # starting as it should: not a reason to act
        pod("pi-worker-3", phase="Running"),
    ]
    s = S.summary(created, NOW, pods=pods)
    assert s["waiting"] == (
        "pi-worker-0 unschedulable: 0/5 nodes are available: 5 Insufficient cpu.; "
        'pi-worker-2 ImagePullBackOff: Back-off pulling image "nope:1" (and 1 more pod)'
    )
    assert s["progress"].endswith(f"30s elapsed (waiting: {s['waiting']})")
    assert S.summary(created, NOW, pods=[pod("pi-worker-0", init_waiting="PodInitializing")])["waiting"] == ""
    failed = pod("pi-worker-0", phase="Failed")
    failed["metadata"]["labels"] = {"training.kubeflow.org/job-role": "worker"}
    failed["status"]["containerStatuses"] = [
        {"name": "worker", "state": {"terminated": {"reason": "Error", "exitCode": 255}}}
    ]
    assert S.summary(created, NOW, pods=[failed])["waiting"] == "pi-worker-0 failed: Error, exit code 255"


def test_pods_are_read_only_for_a_job_whose_workers_do_not_all_run():
    running = job(
        2,
        conditions=[("Created", "True", "", ""), ("Running", "True", "", "")],
        status_extra={"replicaStatuses": {"Worker": {"active": 2}}},
    )
    assert not S.needs_pods(running)
    assert S.needs_pods(running, while_running=True)  # a wait for one job reads them every round
    assert S.needs_pods(job(2, conditions=[("Created", "True", "", ""), ("Running", "True", "", "")]))
    assert not S.needs_pods(job(2, conditions=[("Succeeded", "True", "", "")]))
    assert not S.needs_pods(job(2, suspend=True, conditions=[("Suspended", "True", "", "")]))


def test_summary_of_failed_job_stops_the_clock_and_says_why():
    j = job(
        conditions=[("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")],
        status_extra={"startTime": "2026-01-01T12:00:00Z", "completionTime": "2026-01-01T12:00:05Z"},
    )
    s = S.summary(j, NOW)
    assert s["finished"] and s["elapsed_seconds"] == 5
    assert s["progress"].endswith("(BackoffLimitExceeded: Job has reached the specified backoff limit)")
    msg = S.failure_message(s, {"pod": "pi-launcher-x", "exit": "Error, exit code 3", "log": ["a", "boom"]})
    assert msg.startswith("MPIJob ns/pi failed: BackoffLimitExceeded: Job has reached")
    assert "\nlauncher pod pi-launcher-x: Error, exit code 3\n" in msg
    assert msg.endswith("launcher log (last 2 lines):\na\nboom")
    msg = S.failure_message(s, {"pod": "", "exit": "", "log": [], "note": "launcher log unavailable: x"})
    assert msg.endswith("Job has reached the specified backoff limit\n(launcher log unavailable: x)")


def test_summary_and_progress_line_show_restarts_and_why_the_world_restarts():
    why = "MPIJob ns/pi is restarting (attempt 2): worker pod pi-worker-1 on node n2 exited with code 1 (Error)"
    j = job(
        2,
        conditions=[("Created", "True", "MPIJobCreated", ""), ("Restarting", "True", "MPIJobProgramFailure", why)],
        status_extra={"restartCount": 2, "restarts": {"program": 1, "disruption": 1}},
    )
    s = S.summary(j, NOW)
    assert (s["phase"], s["restarts"], s["restarts_by_cause"]) == ("Restarting", 2, {"program": 1, "disruption": 1})
    assert s["progress"] == (
        f"ns/pi: Restarting, workers 0/2 running, restarts 2 (program 1, disruption 1), 30s elapsed (restarting: {why})"
    )
    # running again: the count stays, the reason goes
    j = job(2, conditions=[("Running", "True", "MPIJobRunning", "")], status_extra={"restartCount": 2})
    assert S.summary(j, NOW)["progress"] == "ns/pi: Running, workers 0/2 running, restarts 2, 30s elapsed"
    s = S.summary(job(), NOW)
    assert (s["restarts"], s["restarting"]) == (0, "") and "restarts" not in s["progress"]


def launcher_pod(phase="Running", statuses=(), reason=None, message=None):
    status = {"phase": phase, "containerStatuses": list(statuses)}
    if reason:
        status.update(reason=reason, message=message)
    return {"metadata": {"name": "pi-launcher-x"}, "status": status}


def test_launcher_exit():
    term = {"name": "mpi-launcher", "state": {"terminated": {"reason": "Error", "exitCode": 3}}}
    sidecar = {"name": "side", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
    assert S.launcher_exit(launcher_pod("Failed", [sidecar, term]), "mpi-launcher") == "Error, exit code 3"
    oom = {
        "name": "m",
        "state": {"waiting": {}},
        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "message": "out of memory\n"}},
    }
    assert S.launcher_exit(launcher_pod("Running", [oom]), "m") == "OOMKilled, exit code 137: out of memory"
    assert S.launcher_exit(launcher_pod("Failed", reason="DeadlineExceeded", message="too long"), "m") == (
        "DeadlineExceeded: too long"
    )
    assert S.launcher_exit(launcher_pod("Running", [{"name": "m", "state": {"running": {}}}]), "m") == ""


def test_summary_without_status_is_pending_from_creation():
    j = job()
    del j["status"]
    s = S.summary(j, NOW)
    assert (s["phase"], s["elapsed_seconds"], s["workers_running"]) == ("Pending", 30, 0)


CONDITIONS_OF = {
    "Pending": (),
    "Created": (("Created", "True", "MPIJobCreated", ""),),
    "Running": (("Created", "True", "", ""), ("Running", "True", "MPIJobRunning", "")),
    "Suspended": (
        ("Created", "True", "", ""),
        ("Running", "False", "MPIJobSuspended", ""),
        ("Suspended", "True", "MPIJobSuspended", ""),
    ),
    "Succeeded": (("Running", "False", "", ""), ("Succeeded", "True", "MPIJobSucceeded", "")),
    "Failed": (("Running", "False", "", ""), ("Failed", "True", "BackoffLimitExceeded", "")),
}


@pytest.mark.parametrize(
    "phase, wait_for, done",
    [
        ("Running", "Succeeded", False),
        ("Succeeded", "Succeeded", True),
        ("Failed", "Succeeded", True),
        ("Suspended", "Succeeded", False),
        ("Pending", "Succeeded", False),
        ("Created", "Running", False),
        ("Running", "Running", True),
        ("Failed", "Running", True),
        ("Suspended", "Running", False),
        ("Suspended", "Suspended", True),
        ("Running", "Suspended", False),
        ("Succeeded", "Suspended", False),
    ],
)
def test_reached(phase, wait_for, done):
    j = job(conditions=CONDITIONS_OF[phase])
    assert S.job_phase(j) == phase
    assert S.reached(j, wait_for) is done


@pytest.mark.parametrize(
    "phase, wait_for, never",
    [
        ("Succeeded", "Suspended", True),
        ("Failed", "Suspended", True),
        ("Running", "Suspended", False),
        ("Succeeded", "Succeeded", False),
        ("Failed", "Running", False),
        ("Pending", "Suspended", False),
    ],
)
def test_a_finished_job_is_never_suspended_so_the_wait_ends(phase, wait_for, never):
    j = job(conditions=CONDITIONS_OF[phase])
    why = S.unreachable(j, wait_for)
    assert bool(why) is never
    if never:
        assert why == f"MPIJob {S.ref(j)} has finished ({phase}): it will never be Suspended"


def test_reached_names_a_bad_target():
    with pytest.raises(S.SubmitError, match="wait_for: must be one of Succeeded, Running, Suspended, got 'Done'"):
        S.reached(job(), "Done")


@pytest.mark.parametrize(
    "wait_for, suspended, target",
    [
        (None, False, "Succeeded"),
        (None, True, "Suspended"),
        ("Running", True, "Running"),
    ],
)
def test_wait_target(wait_for, suspended, target):
    j = job()
    j["spec"].setdefault("runPolicy", {})["suspend"] = suspended
    assert S.wait_target(wait_for, j) == target


def test_newest_launcher_pod_and_tail():
    def pod(name, role, ts):
        return {"metadata": {"name": name, "creationTimestamp": ts, "labels": {"training.kubeflow.org/job-role": role}}}

    pods = [
        pod("pi-launcher-a", "launcher", "2026-01-01T12:00:00Z"),
        pod("pi-worker-0", "worker", "2026-01-01T13:00:00Z"),
        pod("pi-launcher-b", "launcher", "2026-01-01T12:01:00Z"),
    ]
    assert S.newest_launcher_pod(pods)["metadata"]["name"] == "pi-launcher-b"
    assert S.newest_launcher_pod(pods[1:2]) is None
    assert S.tail("1\n2\n3\n", 2) == ["2", "3"] and S.tail("1\n2\n", 0) == ["1", "2"] and S.tail("", 5) == []


# ---- the other two MPIJob APIs ---------------------------------------------------------------------------------------

MANIFESTS = ROOT / "tests/integration/manifests"


def api_example(name):
    return yaml.safe_load((MANIFESTS / name).read_text())


def test_t9k_definition_workers_and_suspend_go_where_t9k_keeps_them():
    m = S.desired_manifest({"workers": 3, "suspend": True, "namespace": "team"}, api_example("t9k-mpi-example.yaml"))
    assert m["spec"]["worker"]["replicas"] == 3 and m["spec"]["runMode"]["pause"]["enabled"] is True
    assert ("mpiReplicaSpecs" not in m["spec"] and "runPolicy" not in m["spec"]) or "suspend" not in m["spec"][
        "runPolicy"
    ]
    assert S.job_patch(m, 5, False) == {"spec": {"worker": {"replicas": 5}, "runMode": {"pause": {"enabled": False}}}}
    assert S.job_patch(m, 3, True) is None and S.worker_replicas(m) == 3 and S.is_suspended(m)


def test_bdap_definition_scales_numworkers_and_cannot_be_suspended():
    m = S.desired_manifest({"workers": 2}, api_example("bdap-simple-train-cpu.yaml"))
    assert m["spec"]["numWorkers"] == 2 and S.job_patch(m, 4, None) == {"spec": {"numWorkers": 4}}
    with pytest.raises(S.SubmitError, match=r"suspend: batch\.test\.bdap\.com/v1 MPIJobs cannot be suspended"):
        S.job_patch(m, None, True)
    with pytest.raises(S.SubmitError, match="cannot be suspended"):
        S.desired_manifest({"suspend": True}, api_example("bdap-simple-train-cpu.yaml"))


def test_a_bad_field_is_named_in_the_manifests_own_api():
    bad = api_example("t9k-mpi-example.yaml")
    bad["spec"]["worker"]["replicas"] = -1
    with pytest.raises(S.SubmitError, match=r"spec\.worker\.replicas"):
        S.desired_manifest({}, bad)
    bad = api_example("bdap-simple-train-cpu.yaml")
    bad["spec"]["numWorkers"] = 0
    with pytest.raises(S.SubmitError, match=r"spec\.numWorkers"):
        S.desired_manifest({}, bad)


def test_summary_reads_each_apis_own_status():
    t9k = api_example("t9k-mpi-example.yaml")
    t9k["metadata"].update(namespace="team", creationTimestamp="2026-01-01T12:00:00Z")
    t9k["status"] = {
        "phase": "Paused",
        "conditions": [{"type": "Paused", "status": "True", "reason": "Paused", "message": "paused by the user"}],
        "tasks": [
            {"type": "worker", "status": [{"name": "w0", "phase": "Running"}, {"name": "w1", "phase": "Failed"}]},
            {"type": "launcher", "status": [{"name": "l", "phase": "Running"}]},
        ],
    }
    s = S.summary(t9k, NOW)
    assert (s["phase"], s["workers"], s["workers_running"], s["workers_failed"], s["launcher_active"]) == (
        "Paused",
        5,
        1,
        1,
        1,
    )
    assert s["suspended"] is False and S.reached(t9k, "Suspended") and not S.reached(t9k, "Running")
    assert "(Paused: paused by the user)" in s["progress"]
    t9k["status"]["conditions"] = [{"type": "Completed", "status": "True", "reason": "Succeeded", "message": ""}]
    assert S.reached(t9k, "Succeeded") and S.summary(t9k, NOW)["finished"]
    bdap = api_example("bdap-simple-train-cpu.yaml")
    bdap["status"] = {
        "phase": "Running",
        "readyWorkers": 4,
        "launcher": "simple-train-cpu-launcher",
        "conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}],
    }
    s = S.summary(bdap, NOW)
    assert (s["phase"], s["workers"], s["workers_running"], s["launcher_active"]) == ("Running", 5, 4, 1)
    assert S.reached(bdap, "Running") and not S.reached(bdap, "Succeeded")


def queued_job(suspend=True, conditions=(("Suspended", "True", "MPIJobSuspended", "MPIJob suspended"),)):
    j = job(suspend=suspend, conditions=conditions)
    j["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    return j


def workload(*conditions, active=True):
    return {
        "spec": {"active": active},
        "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions]},
    }


def test_a_job_queued_by_kueue_is_waited_for_to_the_end_and_its_progress_says_why_it_waits():
    # Kueue suspends a queued job until it admits it: waiting for "Suspended" would end at once.
    assert S.wait_target(None, queued_job()) == "Succeeded"
    pending = workload(
        (
            "QuotaReserved",
            "False",
            "Pending",
            "couldn't assign flavors to pod set launcher: "
            "insufficient unused quota for cpu in flavor rf, 100m more needed",
        )
    )
    s = S.summary(queued_job(), NOW, pending)
    assert (s["queue"], s["phase"]) == ("team-a", "Suspended")
    assert s["progress"] == (
        "ns/pi: Suspended, workers 0/2 running, 30s elapsed (queued by Kueue in LocalQueue "
        "team-a: QuotaReserved Pending: couldn't assign flavors to pod set launcher: insufficient "
        "unused quota for cpu in flavor rf, 100m more needed)"
    )
    assert S.summary(queued_job(), NOW)["queued"] == "waiting for Kueue to admit it"  # its Workload not looked for
    assert S.summary(queued_job(), NOW, {})["queued"].startswith("no Kueue Workload for it yet")  # looked, none
    evicted = workload(
        ("QuotaReserved", "False", "Pending", "x"),
        ("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: u) due to ..."),
    )
    assert S.queue_state(evicted) == "Evicted Preempted: Preempted to accommodate a workload (UID: u) due to ..."
    assert S.queue_state(workload(active=False)) == "its Workload is deactivated (spec.active: false)"
    assert (
        S.queue_state(workload(("QuotaReserved", "True", "QuotaReserved", ""), ("Admitted", "True", "Admitted", "")))
        == "admitted, starting"
    )
    assert S.queue_state(workload(("QuotaReserved", "True", "QuotaReserved", ""))).startswith("quota reserved")
    # Once admitted (running) or finished, the line is the usual one.
    running = queued_job(suspend=False, conditions=[("Running", "True", "MPIJobRunning", "")])
    assert S.summary(running, NOW, pending)["queued"] == "" and "Kueue" not in S.summary(running, NOW)["progress"]


def test_queue_name_and_priority_class_label_the_job_with_a_manifest_or_the_short_form():
    labels = {"kueue.x-k8s.io/queue-name": "team-a", "kueue.x-k8s.io/priority-class": "high"}
    short_form = S.desired_manifest(short(queue_name="team-a", priority_class="high", labels={"x": "y"}), None)
    assert short_form["metadata"]["labels"] == {"x": "y", **labels}
    manifest = S.short_form_manifest(short())
    manifest["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "old"}
    assert (
        S.desired_manifest({"queue_name": "team-a", "priority_class": "high"}, manifest)["metadata"]["labels"] == labels
    )
    with pytest.raises(S.SubmitError, match="queue_name and priority_class label a job as it is submitted"):
        S.desired_manifest({"name": "pi", "queue_name": "team-a"}, None)


def test_the_one_mpijob_of_a_file_may_be_in_a_list_with_what_it_needs():
    job = load("examples/v2beta1/pi.yaml")
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}}
    assert S.one_mpijob([{"apiVersion": "v1", "kind": "List", "items": [claim, job]}], "f") is job
    with pytest.raises(S.SubmitError, match="f must hold exactly one MPIJob, found 2"):
        S.one_mpijob([{"kind": "List", "items": [job]}, job], "f")


def test_a_launch_gate_that_gave_up_says_which_workers_never_answered():
    """The gate's last line is its container's termination message: the launcher runs, mpirun cannot reach them."""
    running = job(
        2,
        conditions=[("Created", "True", "", ""), ("Running", "True", "", "")],
        status_extra={"replicaStatuses": {"Worker": {"active": 2}}},
    )
    gave_up = (
        "launch gate: 2 of 2 workers did not answer in 20 s: pi-worker-0 (does not resolve), pi-worker-1 (does not "
        "resolve); starting the launcher anyway"
    )
    launcher = pod("pi-launcher-x", phase="Running")
    launcher["metadata"]["labels"] = {"training.kubeflow.org/job-role": "launcher"}
    launcher["status"]["initContainerStatuses"] = [
        {"name": "launch-gate", "state": {"terminated": {"exitCode": 0, "message": gave_up + "\n"}}}
    ]
    s = S.summary(running, NOW, pods=[launcher, pod("pi-worker-0", phase="Running")])
    assert s["waiting"] == f"pi-launcher-x {gave_up}"
    answered = copy.deepcopy(launcher)
    answered["status"]["initContainerStatuses"][0]["state"]["terminated"]["message"] = ""
    assert S.summary(running, NOW, pods=[answered])["waiting"] == ""
