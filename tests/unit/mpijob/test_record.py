"""The record of a job's pods (record.py): what is kept and when, that it comes before every deletion the plan makes,
that it is bounded, kept once and never rewritten to less, and what mpijob_info / submit.yml make of it."""

from __future__ import annotations

import copy
import json

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import record as R
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S

from . import _bdap
from ._helpers import at, finish_launcher, kinds, launcher_pod, manifest, plan, run_all, set_phase, settle, world_after


def ended(pod: dict, phase: str, reason: str, code: int, node: str = "node-1", at_s: int = 50) -> dict:
    pod = set_phase(pod, phase)
    pod["spec"]["nodeName"] = node
    pod["metadata"].setdefault("uid", "uid-" + pod["metadata"]["name"])
    name = pod["spec"]["containers"][0]["name"]
    term = {"reason": reason, "exitCode": code, "finishedAt": f"2026-01-01T00:00:{at_s:02d}Z"}
    pod["status"]["containerStatuses"] = [{"name": name, "state": {"terminated": term}}]
    return pod


def failed_world(workers: int = 3, **run_policy) -> P.World:
    """A job whose launcher failed (backoffLimit spent), worker 1 OOM-killed, worker 2 evicted, the others running."""
    world = run_all(settle(manifest("pi", workers, runPolicy={"backoffLimit": 0, **run_policy})))
    for pod in world.pods:
        pod["metadata"].setdefault("uid", "uid-" + pod["metadata"]["name"])
        pod.setdefault("spec", {}).setdefault("containers", [{"name": "launcher"}])
    world.pods[1] = ended(world.pods[1], "Failed", "OOMKilled", 137, "node-2", 40)
    evicted = set_phase(world.pods[2], "Failed", reason="Evicted")
    evicted["status"]["message"] = "The node was low on resource: memory."
    world.pods[2] = {**evicted, "spec": {**evicted["spec"], "nodeName": "node-3"}}
    world.pods[-1] = ended(world.pods[-1], "Failed", "Error", 1, "node-1", 55)
    return finish_launcher(world, "Failed", "BackoffLimitExceeded")


def record_of(p: P.Plan) -> P.Action:
    (found,) = [a for a in p.actions if a.action == "record"]
    return found


def test_a_failed_job_keeps_the_launcher_and_each_failed_worker_before_the_clean_up_deletes_them() -> None:
    world = failed_world(cleanPodPolicy="All")
    p = plan(world.mpijob, world, now=at(60))
    order = [a[0] for a in kinds(p) if a[0] != "event"]
    assert order[0] == "status" and order[1] == "record" and set(order[2:]) == {"delete"}  # before every deletion
    body = record_of(p).body
    assert record_of(p).name == "pi-record" and body["why"] == "job failed; cleanPodPolicy=All"
    assert [(e["role"], e["name"]) for e in body["pods"]] == [
        ("launcher", "pi-launcher-abcde"),
        ("worker", "pi-worker-1"),  # failed at :40
        ("worker", "pi-worker-2"),  # evicted: no finish time, after
    ]
    launcher, oom, evicted = body["pods"]
    assert (launcher["reason"], launcher["exitCode"], launcher["node"], launcher["log"]) == ("Error", 1, "node-1", True)
    assert (oom["reason"], oom["exitCode"], oom["node"]) == ("OOMKilled", 137, "node-2")
    assert (evicted["reason"], evicted["node"], evicted["message"]) == (
        "Evicted",
        "node-3",
        "The node was low on resource: memory.",
    )
    # owned by the job: it goes when the job goes; found by the batch's ConfigMap list (label app)
    assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-pi"
    assert body["metadata"]["labels"] == {"app": "pi"}
    assert p.status["record"] == {"configMap": "pi-record", "pods": 3, "lastUpdateTime": "2026-01-01T00:01:00Z"}
    (event,) = [a for a in p.actions if a.name == R.REASON]
    assert event.body["message"] == (
        "Kept the record of launcher pi-launcher-abcde (Error, exit code 1), worker pi-worker-1 (OOMKilled, exit "
        "code 137), worker pi-worker-2 (Evicted) in ConfigMap pi-record (job failed; cleanPodPolicy=All)"
    )


def test_the_record_is_kept_once_and_the_status_keeps_pointing_at_it() -> None:
    world = failed_world(cleanPodPolicy="All")
    world = world_after(world, plan(world.mpijob, world, now=at(60)))
    again = plan(world.mpijob, world, now=at(70))
    assert not [a for a in again.actions if a.action == "record"]
    assert again.status["record"]["configMap"] == "pi-record"
    # a pod recorded before is never written again, even when it is seen again (a stale read)
    stale = copy.deepcopy(world)
    stale.pods = failed_world().pods
    assert not [a for a in plan(stale.mpijob, stale, now=at(80)).actions if a.action == "record"]


def test_a_pod_that_ends_while_it_is_deleted_is_not_a_failure_unless_disrupted() -> None:
    world = failed_world(cleanPodPolicy="All")
    world = world_after(world, plan(world.mpijob, world, now=at(60)))
    # the clean-up's deletion stops a healthy worker: SIGKILL after the grace period, exit 137
    stopped = ended(failed_world().pods[0], "Failed", "Error", 137, "node-1", 59)
    stopped["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    world.pods.append(stopped)
    assert not [a for a in plan(world.mpijob, world, now=at(70)).actions if a.action == "record"]
    # a worker preempted or drained is deleted too, with its DisruptionTarget condition: that one is kept
    stopped["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    )
    (kept,) = [a for a in plan(world.mpijob, world, now=at(70)).actions if a.action == "record"]
    assert [e["name"] for e in kept.body["pods"]] == ["pi-worker-0"]


def test_a_failed_job_is_recorded_whatever_its_clean_up_policy() -> None:
    world = failed_world()  # cleanPodPolicy None: nothing deleted, the record kept all the same
    p = plan(world.mpijob, world, now=at(60))
    assert [a[0] for a in kinds(p) if a[0] != "event"] == ["status", "record"]


def test_a_failed_job_whose_clean_up_waits_for_the_next_pass_is_recorded_in_the_pass_that_fails_it() -> None:
    """The operator's cleanup_later: the pass that writes Failed leaves the deletions to the next one, but not the
    record. The Job controller deletes a launcher pod it restarted in place (restartPolicy OnFailure) as it fails the
    Job, so the next pass may find no launcher pod (the race seen in test_mpirun_as_root)."""
    later = K.Options(cleanup_later=True)
    world = failed_world(cleanPodPolicy="Running")
    first = plan(world.mpijob, world, later, now=at(60))
    assert first.cleanup_pending
    assert [a[0] for a in kinds(first) if a[0] != "event"] == ["status", "record"]
    assert [e["name"] for e in record_of(first).body["pods"]] == ["pi-launcher-abcde", "pi-worker-1", "pi-worker-2"]
    assert first.status["record"]["configMap"] == "pi-record" and S.is_true(first.status, "Failed")
    world = world_after(world, first)
    world.pods = [p for p in world.pods if p["metadata"]["name"] != "pi-launcher-abcde"]  # the Job controller's
    second = plan(world.mpijob, world, later, now=at(61))
    assert [a.name for a in second.actions if a.action == "delete"] == ["pi-worker-0"]  # cleanPodPolicy Running
    # a healthy worker's deletion keeps nothing; what was kept stays kept, and the status still points at it
    assert not [a for a in second.actions if a.action == "record"]
    assert second.status["record"] == first.status["record"]


def test_a_succeeded_job_is_recorded_only_when_its_launcher_pod_goes() -> None:
    for policy, recorded in (("None", False), ("Running", False), ("All", True)):
        world = finish_launcher(run_all(settle(manifest(runPolicy={"cleanPodPolicy": policy}))))
        world.pods[-1] = set_phase(world.pods[-1], "Succeeded")
        p = plan(world.mpijob, world, now=at(60))
        assert any(a.action == "record" for a in p.actions) is recorded, policy
    body = record_of(p).body
    assert [(e["role"], e["phase"]) for e in body["pods"]] == [("launcher", "Succeeded")]  # its output


def test_a_launcher_restarted_in_place_after_a_failure_is_kept_at_once() -> None:
    # restartPolicy OnFailure (the launcher's default): the container failed and runs again; the Job controller will
    # delete the pod, its log with it, once the backoffLimit is spent, before the job is Failed
    world = run_all(settle(manifest("pi", 2)))
    pod = world.pods[-1]
    pod["metadata"].update(uid="uid-launcher", deletionTimestamp="2026-01-01T00:00:59Z")  # already being deleted
    term = {"reason": "Error", "exitCode": 1, "finishedAt": "2026-01-01T00:00:55Z"}
    pod["status"]["containerStatuses"] = [
        {"name": "launcher", "restartCount": 1, "state": {"running": {}}, "lastState": {"terminated": term}}
    ]
    p = plan(world.mpijob, world, now=at(60))
    action = record_of(p)
    assert action.body["why"] == "launcher failed"
    (entry,) = action.body["pods"]
    assert (entry["role"], entry["exitCode"], entry["previous"], entry["log"]) == ("launcher", 1, True, True)
    assert R.launcher_failed(pod) and not R.failed(pod)  # the deletion's own exit would not count; the restart's does


def test_a_launcher_that_failed_again_before_its_restart_was_reported_is_kept_at_once() -> None:
    # A container that fails at once: the kubelet reports it restarted and exited again in one update, so no state
    # shows it running again; the Job controller deletes the pod about a second later (backoffLimit 0 spent).
    world = run_all(settle(manifest("pi", 2)))
    pod = world.pods[-1]
    pod["metadata"]["uid"] = "uid-launcher"
    term = {"reason": "Error", "exitCode": 1, "message": "mpirun: use --allow-run-as-root\n"}
    pod["status"]["containerStatuses"] = [
        {"name": "launcher", "restartCount": 1, "state": {"terminated": term}, "lastState": {"terminated": term}}
    ]
    p = plan(world.mpijob, world, now=at(60))
    (entry,) = record_of(p).body["pods"]
    assert record_of(p).body["why"] == "launcher failed" and (entry["exitCode"], entry["log"]) == (1, True)
    # a pod that failed for good (restartPolicy Never) is left to the clean-up and the job's failure, which keep it
    pod["status"]["containerStatuses"] = [{"name": "launcher", "restartCount": 0, "state": {"terminated": term}}]
    pod["status"]["phase"] = "Failed"
    assert not R.launcher_failed(pod)
    # not one that the deletion itself ended (a suspend's, a user's): a pod recorded before its removal, if at all
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:59Z"
    assert not R.launcher_failed(pod)


def test_a_launcher_pod_deleted_before_any_pass_saw_it_is_kept_from_its_last_state() -> None:
    world = failed_world()
    pod = world.pods.pop()  # the Job controller deleted it; the operator's store kept its last state (gone_pods)
    term = {"reason": "Error", "exitCode": 1, "message": "line 1\nmpirun: use --allow-run-as-root\n"}
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:56Z"
    pod["status"]["containerStatuses"] = [{"name": "launcher", "restartCount": 1, "state": {"terminated": term}}]
    world.gone_pods = [pod]
    p = plan(world.mpijob, world, now=at(60))
    body = record_of(p).body
    launcher = body["pods"][0]
    assert (launcher["name"], launcher["exitCode"], launcher["log"]) == ("pi-launcher-abcde", 1, True)
    assert launcher[R.MESSAGE_LOG] == term["message"]  # the whole message, for the shell
    # the shell finds no pod to read the log of: the termination message is the log kept, and says so
    cm = R.record_config_map(body, {"uid-pi-launcher-abcde": (None, "log unavailable: 404 Not Found")}, [], "now")
    assert cm["data"]["pi-launcher-abcde.log"] == term["message"]
    kept = json.loads(cm["data"]["record.json"])["pods"][0]
    assert kept["logNote"] == "log unavailable: 404 Not Found; kept instead: the container's termination message"
    assert R.MESSAGE_LOG not in cm["data"]["record.json"]
    shown = R.summary_of(cm)["lines"]  # as submit.yml prints it: the message is the log, shown once
    assert shown[1:5] == [
        "launcher pi-launcher-abcde on node-1: Error, exit code 1",
        "  | line 1",
        "  | mpirun: use --allow-run-as-root",
        "  (log unavailable: 404 Not Found; kept instead: the container's termination message)",
    ]
    # a log that was read wins; a gone pod of another launcher Job (a job made again under that name) is not the job's
    cm = R.record_config_map(body, {"uid-pi-launcher-abcde": ("the log\n", "")}, [], "now")
    assert cm["data"]["pi-launcher-abcde.log"] == "the log\n"
    pod["metadata"]["ownerReferences"] = [{**pod["metadata"]["ownerReferences"][0], "uid": "uid-other"}]
    assert "pi-launcher-abcde" not in [e["name"] for e in record_of(plan(world.mpijob, world, now=at(60))).body["pods"]]


def test_a_suspend_records_the_launcher_before_the_job_controller_stops_it() -> None:
    world = run_all(settle(manifest()))
    world = world_after(world, plan(world.mpijob, world, now=at(20)))
    world.mpijob["spec"]["runPolicy"] = {"suspend": True}
    p = plan(world.mpijob, world, now=at(30))
    at_record = kinds(p).index(("record", "ConfigMap", "pi-record"))
    assert at_record < kinds(p).index(("patch", "Job", "pi-launcher"))
    assert at_record < min(i for i, a in enumerate(kinds(p)) if a[0] == "delete")
    assert [e["name"] for e in record_of(p).body["pods"]] == ["pi-launcher-abcde"]  # running workers: nothing failed
    assert record_of(p).body["why"] == "suspend"


def test_a_scale_down_of_healthy_workers_keeps_nothing() -> None:
    world = run_all(settle(manifest("pi", 3)))
    world.pods = [p for p in world.pods if "launcher" not in p["metadata"]["name"]]  # no launcher to tell
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    p = plan(world.mpijob, world, now=at(30))
    assert ("delete", "Pod", "pi-worker-2") in kinds(p) and not any(a.action == "record" for a in p.actions)


def test_the_ttl_keeps_no_record_the_job_and_its_record_go_together() -> None:
    world = failed_world(ttlSecondsAfterFinished=0)
    p = plan(world.mpijob, world, now=at(400))
    assert [a.action for a in p.actions if a.action != "event"] == ["delete-mpijob"]
    assert all(a.name != R.REASON for a in p.actions)


def test_a_config_map_of_that_name_that_is_not_the_jobs_is_never_written() -> None:
    world = failed_world()
    world.record = {"metadata": {"name": "pi-record", "uid": "theirs", "ownerReferences": []}, "data": {"a": "b"}}
    p = plan(world.mpijob, world, now=at(60))
    assert not any(a.action == "record" for a in p.actions) and "record" not in p.status


def test_a_bdap_failed_job_is_recorded_too() -> None:
    world = _bdap.ready_workers(_bdap.settle(P.World(mpijob=_bdap.example())))
    world = world_after(world, plan(world.mpijob, world, now=at(30)))
    world = _bdap.launcher(world, "Failed", exit_code=2)
    p = plan(world.mpijob, world, now=at(60))
    assert S.is_true(p.status, "Failed")
    assert [(e["role"], e["exitCode"]) for e in record_of(p).body["pods"]] == [("launcher", 2)]
    assert p.status["record"]["configMap"] == "simple-train-cpu-record"


def _failed_workers(n: int) -> P.World:
    world = failed_world(1 + 2)
    template = world.pods[0]
    world.pods = world.pods[-1:]  # the launcher's
    for i in range(n):
        pod = copy.deepcopy(template)
        pod["metadata"].update(name=f"pi-worker-{i}", uid=f"uid-w{i}")
        world.pods.append(ended(pod, "Failed", "Error", 1, f"node-{i}", i % 60))
    return world


def test_the_record_is_bounded() -> None:
    world = _failed_workers(150)
    body = record_of(plan(world.mpijob, world, now=at(60))).body
    assert len(body["pods"]) == R.MOST_PODS and body["omitted"] == 51  # 1 launcher + 150 workers
    logs = [e["name"] for e in body["pods"] if e["log"]]
    # (64 KiB - 16 KiB for the summary) / 8 KiB: the newest launcher's first, then the first workers to fail
    assert logs == ["pi-launcher-abcde", "pi-worker-0", "pi-worker-120", "pi-worker-60", "pi-worker-1", "pi-worker-121"]
    huge = {e["uid"]: ("y" * 200 + "\n") * 100 for e in body["pods"]}
    cm = R.record_config_map(body, {k: (v, "") for k, v in huge.items()}, [], "2026-01-01T00:01:00Z")
    assert sum(len(k) + len(v) for k, v in cm["data"].items()) <= 64 * 1024  # the default total, whatever the job
    summary = json.loads(cm["data"]["record.json"])
    assert len(summary["pods"]) + summary["omitted"] == 151 and len([k for k in cm["data"] if k.endswith(".log")]) == 6
    small = K.Options(record_lines=5, record_pod_bytes=1000, record_total_bytes=20 * 1024)
    body = record_of(plan(world.mpijob, world, small, now=at(60))).body
    assert sum(e["log"] for e in body["pods"]) == 4 and body["limits"] == {
        "lines": 5,
        "podBytes": 1000,
        "totalBytes": 20 * 1024,
    }
    long_log = "".join(f"line {i} " + "x" * 300 + "\n" for i in range(100))
    logs_read = {e["uid"]: (long_log, "") for e in body["pods"]}
    cm = R.record_config_map(body, logs_read, [], "2026-01-01T00:01:00Z")
    kept = cm["data"]["pi-launcher-abcde.log"]
    assert len(kept.encode()) <= 1000 and kept.endswith("line 99 " + "x" * 300 + "\n")
    assert sum(len(k) + len(v) for k, v in cm["data"].items()) < 20 * 1024


def test_the_config_map_merges_into_the_record_there_and_never_loses_anything() -> None:
    world = failed_world(cleanPodPolicy="All")
    body = record_of(plan(world.mpijob, world, now=at(60))).body
    logs = {"uid-pi-launcher-abcde": ("mpirun: rank 1 died\n", ""), "uid-pi-worker-1": (None, "log unavailable: 404")}
    events = [{"object": "MPIJob/pi", "reason": "MPIJobWorkerFailed", "message": "1/3 workers failed", "count": 2}]
    first = R.record_config_map(body, logs, events, "2026-01-01T00:01:00Z")
    assert first["metadata"]["name"] == "pi-record" and set(first["data"]) == {"record.json", "pi-launcher-abcde.log"}
    summary = json.loads(first["data"]["record.json"])
    assert summary["job"] == {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "namespace": "ns",
        "name": "pi",
        "uid": "uid-pi",
    }
    assert [p.get("log") or p.get("logNote") for p in summary["pods"]] == [
        "pi-launcher-abcde.log",
        "log unavailable: 404",
        "not read",  # the evicted worker's log was asked for but the shell had none
    ]
    # A worker made again under the same name fails too (a restart): added beside the first, its log key its own.
    again = copy.deepcopy(world)
    again.record = first
    again.pods[1] = ended(again.pods[1], "Failed", "Error", 2, "node-4", 59)
    again.pods[1]["metadata"]["uid"] = "uid-pi-worker-1-second"
    body2 = R.record_action(
        "pi", body["metadata"], first, [], again.pods[:3], [again.pods[1]], False, "restart", None, R.Limits()
    ).body
    second = R.record_config_map(body2, {"uid-pi-worker-1-second": ("second run\n", "")}, [], "2026-01-01T00:02:00Z")
    assert set(second["data"]) == {"record.json", "pi-launcher-abcde.log", "pi-worker-1.log"}
    assert second["data"]["pi-launcher-abcde.log"] == first["data"]["pi-launcher-abcde.log"]
    summary2 = json.loads(second["data"]["record.json"])
    assert [p["uid"] for p in summary2["pods"]][:3] == [p["uid"] for p in summary["pods"]]
    assert summary2["events"] == summary["events"]  # a shorter (here empty) list does not replace them
    assert [o["why"] for o in summary2["occasions"]] == ["job failed; cleanPodPolicy=All", "restart"]
    third_pod = {**body2["pods"][0], "uid": "uid-pi-worker-1-third"}
    third = R.record_config_map(
        {**body2, "seen": second, "pods": [third_pod]}, {third_pod["uid"]: ("y\n", "")}, [], "t"
    )
    assert third["data"]["pi-worker-1.2.log"] == "y\n"  # the key of a third pod of one name is its own


def test_a_record_written_since_the_plan_read_it_gets_no_pod_twice() -> None:
    """Two passes that both planned a record before either was written (the second's create meets the first's
    ConfigMap and merges into it): each pod is described once, with the first log kept."""
    world = failed_world(cleanPodPolicy="All")
    body = record_of(plan(world.mpijob, world, now=at(60))).body
    first = R.record_config_map(body, {"uid-pi-launcher-abcde": ("rank 1: reading\n", "")}, [], "t1")
    again = R.record_config_map({**body, "seen": first}, {"uid-pi-launcher-abcde": ("rank 1: boom\n", "")}, [], "t2")
    summary = json.loads(again["data"]["record.json"])
    uids = [p["uid"] for p in summary["pods"]]
    assert len(uids) == len(set(uids)) == 3
    assert set(again["data"]) == set(first["data"]) and [o["pods"] for o in summary["occasions"]][1:] == [[]]


def test_what_mpijob_info_and_submit_yml_show() -> None:
    world = failed_world(cleanPodPolicy="All")
    body = record_of(plan(world.mpijob, world, now=at(60))).body
    logs = {"uid-pi-launcher-abcde": ("rank 0 ok\nrank 1: boom\n", "")}
    events = [{"object": "MPIJob/pi", "reason": "MPIJobWorkerFailed", "message": "2/3 workers failed", "count": 1}]
    cm = R.record_config_map(body, logs, events, "2026-01-01T00:01:00Z")
    cm["metadata"]["name"] = "pi-record"
    shown = R.summary_of(cm)
    assert shown["pods"][0]["log"] == ["rank 0 ok", "rank 1: boom"] and shown["pods"][1]["log"] == []
    assert shown["lines"] == [
        "ConfigMap pi-record (job failed; cleanPodPolicy=All at 2026-01-01T00:01:00Z)",
        "launcher pi-launcher-abcde on node-1: Error, exit code 1",
        "  | rank 0 ok",
        "  | rank 1: boom",
        "worker pi-worker-1 on node-2: OOMKilled, exit code 137",
        "  (not read)",
        "worker pi-worker-2 on node-3: Evicted",
        "  The node was low on resource: memory.",
        "  (not read)",
        "Warning MPIJobWorkerFailed on MPIJob/pi: 2/3 workers failed",
        # the pass's own, not yet in the API when the shell read the events
        "Warning BackoffLimitExceeded/Error on MPIJob/pi: MPIJob ns/pi has failed: launcher container exited with code 1",
        "Warning MPIJobEvicted on MPIJob/pi: 1/3 workers are evicted",
    ]
    assert R.summary_of(None) is None


def test_tail_keeps_the_last_lines_within_the_bytes() -> None:
    assert R.tail("a\nb\nc\n", 2, 100) == "b\nc\n"
    assert R.tail("a\nb\nc", 0, 100) == ""
    assert R.tail("ééé\n" + "x" * 10 + "\n", 5, 8) == "xxxxxxx\n"  # a longer last line is cut at its start
    assert R.tail("aaaa\nbbbb\ncccc\n", 3, 10) == "bbbb\ncccc\n"  # whole lines when they fit


def test_tail_drops_control_characters_but_tabs() -> None:
    # a program's NUL padding and terminal colours: the record keeps the text
    assert R.tail("step 1\x00\x00\n\x1b[31merr\x1b[0m\tx\n", 5, 100) == "step 1\n[31merr[0m\tx\n"


def test_launcher_pod_helper_is_the_newest() -> None:
    # two launcher pods (a retry): the newest is kept with its log, an older failed one too, without
    world = failed_world(cleanPodPolicy="All")
    old = launcher_pod(world, "Failed", name="pi-launcher-old00")
    old["metadata"].update(uid="uid-old", creationTimestamp="2026-01-01T00:00:01Z")
    old["status"]["containerStatuses"] = [{"name": "launcher", "state": {"terminated": {"exitCode": 1}}}]
    world.pods.append(old)
    body = record_of(plan(world.mpijob, world, K.Options(record_total_bytes=24 * 1024), now=at(60))).body
    assert [(e["name"], e["log"]) for e in body["pods"] if e["role"] == "launcher"] == [
        ("pi-launcher-old00", False),
        ("pi-launcher-abcde", True),
    ]


def test_the_warning_events_of_the_pass_that_writes_the_record_are_in_it() -> None:
    """The job's failure is seen and recorded in one pass: its Warning event is not in the API when the shell reads the
    events, so the plan hands it over; once the API has it, it is not there twice."""
    world = failed_world(cleanPodPolicy="All")
    p = plan(world.mpijob, world, now=at(60))
    body = record_of(p).body
    warnings = [a.body for a in p.actions if a.action == "event" and a.body["type"] == "Warning"]
    assert warnings and [(e["reason"], e["message"]) for e in body["pending"]] == [
        (w["reason"], w["message"]) for w in warnings
    ]
    assert {e["object"] for e in body["pending"]} == {"MPIJob/pi"}
    read = [{"object": "Pod/pi-worker-1", "reason": "BackOff", "message": "back-off", "count": 3}]
    summary = json.loads(R.record_config_map(body, {}, read, "t1")["data"]["record.json"])
    assert [e["reason"] for e in summary["events"]] == ["BackOff"] + [w["reason"] for w in warnings]
    assert summary["events"][-1]["lastTimestamp"] == "t1"
    again = read + [{**e, "count": 1} for e in body["pending"]]
    summary = json.loads(R.record_config_map(body, {}, again, "t2")["data"]["record.json"])
    assert len(summary["events"]) == len(again)
