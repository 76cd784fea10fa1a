"""The failure policy: its parse on every API, the children it changes, and the restart it decides, pass by pass."""

from __future__ import annotations

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import record as Rec
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import restart as R
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import api_for, has_failure_policy
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import InvalidMPIJob
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.spec import ExitCodes, FailurePolicy, FailureRule

from . import _bdap as B
from ._helpers import at, kinds, manifest, plan, set_phase, settle, world_after
from ._t9k import t9k

POLICY = {"maxRestarts": 1, "maxDisruptionRestarts": 2, "nodeLostSeconds": 60}


def policy_job(**policy) -> dict:
    return manifest(runPolicy={"failurePolicy": {**POLICY, **policy}})


def errors(obj: dict) -> list[str]:
    with pytest.raises(InvalidMPIJob) as exc:
        api_for(obj).parse(obj)
    return [str(e) for e in exc.value.errors]


# ---- parse ---------------------------------------------------------------------------------------------------------


def test_parse_reads_the_policy_with_its_defaults() -> None:
    job = api_for(m := manifest(runPolicy={"failurePolicy": {}})).parse(m)
    assert job.run_policy.failure_policy == FailurePolicy(0, 10, 60, (), None)
    full = policy_job(
        workerFailure="ReplaceWorker",
        rules=[
            {"action": "FailJob", "onExitCodes": {"containerName": "launcher", "operator": "In", "values": [42, 43]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        ],
    )
    fp = api_for(full).parse(full).run_policy.failure_policy
    assert fp == FailurePolicy(
        1,
        2,
        60,
        (
            FailureRule("FailJob", ExitCodes("In", (42, 43), "launcher")),
            FailureRule("Ignore", None, (("DisruptionTarget", "True"),)),
        ),
        "ReplaceWorker",
    )
    assert api_for(manifest()).parse(manifest()).run_policy.failure_policy is None


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"maxRestarts": -1}, "spec.runPolicy.failurePolicy.maxRestarts: must be >= 0, got -1"),
        ({"maxDisruptionRestarts": "x"}, "spec.runPolicy.failurePolicy.maxDisruptionRestarts: must be an integer"),
        ({"nodeLostSeconds": -5}, "spec.runPolicy.failurePolicy.nodeLostSeconds: must be >= 0, got -5"),
        ({"workerFailure": "Some"}, "spec.runPolicy.failurePolicy.workerFailure: unsupported value 'Some'"),
        ({"rules": [{"action": "Retry", "onPodConditions": [{"type": "X"}]}]}, "rules[0].action: unsupported value"),
        ({"rules": [{"onPodConditions": [{"type": "X"}]}]}, "spec.runPolicy.failurePolicy.rules[0].action: required"),
        ({"rules": [{"action": "Count"}]}, "rules[0]: must set exactly one of onExitCodes and onPodConditions"),
        (
            {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [0]}}]},
            "rules[0].onExitCodes.values: must not contain 0 with the operator In",
        ),
        (
            {"rules": [{"action": "Count", "onExitCodes": {"operator": "Is", "values": [1]}}]},
            "rules[0].onExitCodes.operator: unsupported value 'Is'",
        ),
        (
            {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 1]}}]},
            "rules[0].onExitCodes.values: must not repeat a value",
        ),
        (
            {"rules": [{"action": "Count", "onPodConditions": [{"type": "X", "status": "Maybe"}]}]},
            "rules[0].onPodConditions[0].status: unsupported value 'Maybe'",
        ),
        ({"rules": [{"action": "Count", "onPodConditions": [{"type": "X"}]}] * 21}, "must have at most 20 items"),
        ({"maxRestart": 3}, "spec.runPolicy.failurePolicy.maxRestart: unknown field"),
    ],
)
def test_bad_policies_are_refused_naming_the_field(policy: dict, message: str) -> None:
    assert any(message in e for e in errors(manifest(runPolicy={"failurePolicy": policy}))), errors(
        manifest(runPolicy={"failurePolicy": policy})
    )


def test_backoff_limit_and_a_policy_are_refused_together() -> None:
    obj = manifest(runPolicy={"backoffLimit": 3, "failurePolicy": {}})
    assert errors(obj)[0].startswith("spec.runPolicy.backoffLimit: must not be set with spec.runPolicy.failurePolicy")


def test_every_api_reads_the_policy_at_its_own_place() -> None:
    obj = t9k(runPolicy={"failurePolicy": {"maxRestarts": 2}})
    assert api_for(obj).parse(obj).run_policy.failure_policy.max_restarts == 2 and has_failure_policy(obj)
    assert any(
        e.startswith("spec.runPolicy.failurePolicy.maxRestarts")
        for e in errors(t9k(runPolicy={"failurePolicy": {"maxRestarts": -1}}))
    )
    bdap = B.example()
    bdap["spec"]["failurePolicy"] = {"maxRestarts": 2}
    assert api_for(bdap).parse(bdap).run_policy.failure_policy.max_restarts == 2 and has_failure_policy(bdap)
    bdap["spec"]["failurePolicy"] = {"maxRestarts": -1}
    assert errors(bdap) == ["spec.failurePolicy.maxRestarts: must be >= 0, got -1"]
    assert not has_failure_policy(manifest()) and not has_failure_policy(B.example())


# ---- children ------------------------------------------------------------------------------------------------------


def test_children_of_a_policy_job_carry_the_attempt_and_never_restart_in_place() -> None:
    job = api_for(m := policy_job()).parse(m)
    job = type(job)(**{**job.__dict__, "attempt": 3})
    worker = K.worker_pod(job, 0, K.Options())
    launcher = K.launcher_job(job, K.Options())
    for pod_meta, pod_spec in (
        (worker["metadata"], worker["spec"]),
        (launcher["spec"]["template"]["metadata"], launcher["spec"]["template"]["spec"]),
    ):
        assert pod_meta["labels"][C.ATTEMPT_LABEL] == "3" and pod_spec["restartPolicy"] == "Never"
        assert {"name": "MPIJOB_RESTART_ATTEMPT", "value": "3"} in pod_spec["containers"][0]["env"]
    assert launcher["metadata"]["labels"][C.ATTEMPT_LABEL] == "3" and launcher["spec"]["backoffLimit"] == 0
    plain = api_for(manifest()).parse(manifest())
    assert C.ATTEMPT_LABEL not in K.worker_pod(plain, 0, K.Options())["metadata"]["labels"]
    assert "backoffLimit" not in K.launcher_job(plain, K.Options())["spec"]


# ---- the restart, pass by pass -------------------------------------------------------------------------------------


def node(name: str, ready: str = "True", since: float = 0) -> dict:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": S.rfc3339(at(since))}]},
    }


def launcher_pod(world: P.World, phase: str = "Running") -> dict:
    """The launcher Job's pod, labelled as its template says."""
    template = world.launcher["spec"]["template"]
    return set_phase(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "pi-launcher-abcde",
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [
                    {"controller": True, "kind": "Job", "name": "pi-launcher", "uid": world.launcher["metadata"]["uid"]}
                ],
            },
            "spec": {"nodeName": "n0"},
        },
        phase,
    )


def running(obj: dict, now: float = 10) -> P.World:
    """The job settled, every worker Running on its node n<i>, its launcher pod Running on n0, the status written."""
    world = settle(obj, now=at(now - 10))
    world.pods = [
        set_phase(p, "Running", ready=True) for p in world.pods if p["metadata"]["name"] != "pi-launcher-abcde"
    ]
    for i, pod in enumerate(world.pods):
        pod["spec"]["nodeName"] = f"n{i + 1}"
    world.pods.append(launcher_pod(world))
    world.nodes = {f"n{i}": node(f"n{i}") for i in range(len(world.pods))}
    return world_after(world, plan(world.mpijob, world, now=at(now)))


def used(world: P.World, program: int, disruption: int) -> P.World:
    """The world as if `program` + `disruption` restarts had happened: the status counts them, the pods and the
    launcher Job are of that attempt."""
    attempt = program + disruption
    world.mpijob["status"].update(restartCount=attempt, restarts={"program": program, "disruption": disruption})
    for obj in [*world.pods, world.launcher]:
        obj["metadata"]["labels"][C.ATTEMPT_LABEL] = str(attempt)
    return world


def failed(pod: dict, code: int = 1, reason: str = "Error", **status) -> dict:
    pod = set_phase(pod, "Failed")
    pod["status"]["containerStatuses"] = [
        {
            "name": "worker",
            "state": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": "2026-01-01T00:00:30Z"}},
        }
    ]
    pod["status"].update(status)
    return pod


def pod_named(world: P.World, name: str) -> int:
    return next(i for i, p in enumerate(world.pods) if p["metadata"]["name"] == name)


def gone(world: P.World, p: P.Plan) -> P.World:
    """The world once the plan's deletions are done (world_after removes deleted pods at once) and the launcher Job's
    pods went with it."""
    world = world_after(world, p)
    if world.launcher is None:
        world.pods = [q for q in world.pods if q["metadata"]["labels"].get(C.JOB_ROLE_LABEL) != "launcher"]
    return world


def unrecorded(p: P.Plan) -> list[P.Action]:
    """The plan's actions less the record of the pods it deletes (record.py keeps it right before the first deletion,
    with its Event; tests/unit/mpijob/test_record.py tests it): what the restart itself does."""
    return [a for a in p.actions if a.action != "record" and not (a.action == "event" and a.name == Rec.REASON)]


def sans_record(status: dict) -> dict:
    """A status less its reference to the record (status.record), which each recording pass renews."""
    return {k: v for k, v in status.items() if k != "record"}


def test_a_worker_that_exits_non_zero_restarts_the_whole_world() -> None:
    world = running(policy_job())
    assert S.is_true(world.mpijob["status"], "Running")
    i = pod_named(world, "pi-worker-1")
    world.pods[i] = failed(world.pods[i])
    p = plan(world.mpijob, world, now=at(31))
    # the status first (attempt 1, the counts, Restarting naming the pod, its node and its exit code), then every pod
    # and the launcher Job of attempt 0; nothing created
    assert kinds(p) == [
        ("status", "MPIJob", "pi"),
        ("record", "ConfigMap", "pi-record"),  # the evidence of the world it deletes, before any deletion
        ("delete", "Pod", "pi-worker-0"),
        ("delete", "Pod", "pi-worker-1"),
        ("delete", "Pod", "pi-launcher-abcde"),
        ("delete", "Job", "pi-launcher"),
        ("event", "Event", C.REASON_PROGRAM_FAILURE),  # written before the status (a transition's Event)
        ("event", "Event", Rec.REASON),
    ]
    st = p.status
    assert st["restartCount"] == 1 and st["restarts"] == {"program": 1, "disruption": 0}
    cond = S.get_condition(st, "Restarting")
    assert cond["status"] == "True" and cond["reason"] == C.REASON_PROGRAM_FAILURE
    assert cond["message"] == (
        "MPIJob ns/pi is restarting (attempt 1): worker pod pi-worker-1 on node n2 exited with code 1 (Error); "
        "program failures 1 of 1 (failurePolicy.maxRestarts)"
    )
    assert st["phase"] == "Restarting" and S.get_condition(st, "Running") is None
    assert [a.body["message"] for a in unrecorded(p) if a.action == "event"] == [cond["message"]]
    assert p.restart == {"cause": "program", "scope": "world"}
    assert not any(a.force for a in p.actions)


def test_the_new_world_waits_for_the_old_one_then_for_its_workers_before_its_launcher() -> None:
    world = running(policy_job())
    world.pods[0] = failed(world.pods[0])
    p = plan(world.mpijob, world, now=at(31))
    # the deletions were sent but the pods are still terminating: nothing new yet, the same plan again
    world_status = world_after(world, p)
    world_status.pods = [dict(q, metadata={**q["metadata"], "deletionTimestamp": "x"}) for q in world.pods]
    world_status.launcher = None
    waiting = plan(world_status.mpijob, world_status, now=at(32))
    assert not any(a.action == "create" for a in waiting.actions)
    assert not any(a.action == "status" for a in waiting.actions)
    # the old pods gone: the new workers, attempt 1, and no launcher until they run
    world = gone(world, p)
    assert world.pods == []
    p = plan(world.mpijob, world, now=at(40))
    assert [k for k in kinds(p) if k[0] == "create"] == [
        ("create", "Pod", "pi-worker-0"),
        ("create", "Pod", "pi-worker-1"),
    ]
    for a in p.actions:
        if a.action != "create":
            continue
        assert a.body["metadata"]["labels"][C.ATTEMPT_LABEL] == "1"
        assert {"name": C.ATTEMPT_ENV, "value": "1"} in a.body["spec"]["containers"][0]["env"]
    world = world_after(world, p)
    world.pods[0] = set_phase(world.pods[0], "Running", ready=True)
    assert not any(a.kind == "Job" for a in plan(world.mpijob, world, now=at(41)).actions)
    world.pods = [set_phase(q, "Running", ready=True) for q in world.pods]
    p = plan(world.mpijob, world, now=at(42))
    job = next(a for a in p.actions if a.kind == "Job")
    assert job.body["metadata"]["labels"][C.ATTEMPT_LABEL] == "1" and job.body["spec"]["backoffLimit"] == 0
    # the new launcher runs: Running again, Restarting gone, the counts kept
    world = world_after(world, p)
    world.pods.append(launcher_pod(world))
    p = plan(world.mpijob, world, now=at(50))
    st = p.status
    assert S.is_true(st, "Running") and S.get_condition(st, "Restarting") is None
    assert st["phase"] == "Running" and st["restartCount"] == 1 and st["restarts"]["program"] == 1
    world = world_after(world, p)
    assert plan(world.mpijob, world, now=at(60)).actions == []


def test_the_budget_spent_fails_the_job_saying_which() -> None:
    obj = policy_job()
    world = used(running(obj), 1, 0)
    world.pods[0] = failed(world.pods[0])
    p = plan(world.mpijob, world, now=at(31))
    cond = S.get_condition(p.status, "Failed")
    assert cond["reason"] == C.REASON_MAX_RESTARTS and p.status["phase"] == "Failed"
    assert cond["message"] == (
        "MPIJob ns/pi has failed: worker pod pi-worker-0 on node n1 exited with code 1 (Error); the budget for "
        "program failures is spent: failurePolicy.maxRestarts is 1, 1 used"
    )
    assert p.status["completionTime"] and not any(a.action in ("create", "delete") for a in p.actions)
    assert p.restart is None


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        (lambda p: set_phase(p, "Failed", reason="Evicted"), "failed (Evicted)"),
        (
            lambda p: (
                failed(p, 137, "OOMKilled")
                | {
                    "status": {
                        **failed(p, 137, "OOMKilled")["status"],
                        "conditions": [
                            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}
                        ],
                    }
                }
            ),
            "was OOM-killed (exit code 137), condition DisruptionTarget: TerminationByKubelet",
        ),
        (
            lambda p: {
                **p,
                "status": {
                    **p["status"],
                    "conditions": [
                        {
                            "type": "DisruptionTarget",
                            "status": "True",
                            "reason": "EvictionByEvictionAPI",
                            "message": "Eviction API: evicting",
                        }
                    ],
                },
            },
            "is being disrupted: DisruptionTarget EvictionByEvictionAPI (Eviction API: evicting)",
        ),
    ],
)
def test_disruptions_count_against_their_own_budget(change, detail) -> None:
    world = running(policy_job())
    world.pods[0] = change(world.pods[0])
    p = plan(world.mpijob, world, now=at(31))
    assert p.status["restarts"] == {"program": 0, "disruption": 1}
    cond = S.get_condition(p.status, "Restarting")
    assert cond["reason"] == C.REASON_DISRUPTION
    assert f"worker pod pi-worker-0 on node n1 {detail}; disruptions 1 of 2" in cond["message"]
    assert p.restart == {"cause": "disruption", "scope": "world"}


def test_the_disruption_budget_spent_fails_the_job() -> None:
    world = used(running(policy_job()), 0, 2)
    world.pods[0] = set_phase(world.pods[0], "Failed", reason="Evicted")
    cond = S.get_condition(plan(world.mpijob, world, now=at(31)).status, "Failed")
    assert (
        cond["reason"] == C.REASON_MAX_DISRUPTIONS
        and "failurePolicy.maxDisruptionRestarts is 2, 2 used" in cond["message"]
    )


def test_a_launcher_failing_because_a_worker_was_evicted_is_a_disruption() -> None:
    world = running(policy_job())
    world.pods[0] = set_phase(world.pods[0], "Failed", reason="Evicted")
    launcher = pod_named(world, "pi-launcher-abcde")
    world.pods[launcher] = failed(world.pods[launcher], 1)
    p = plan(world.mpijob, world, now=at(31))
    assert p.status["restarts"] == {"program": 0, "disruption": 1}
    assert "worker pod pi-worker-0" in S.get_condition(p.status, "Restarting")["message"]


def test_a_node_down_counts_as_lost_after_node_lost_seconds_and_its_pods_go_at_once() -> None:
    world = running(policy_job())
    world.nodes["n2"] = node("n2", "Unknown", since=20)
    p = plan(world.mpijob, world, now=at(50))
    assert not any(a.action in ("status", "delete") for a in p.actions)
    assert p.requeue_after == pytest.approx(31.0)  # lost at 20 + 60 s, looked at again then
    p = plan(world.mpijob, world, now=at(80))
    cond = S.get_condition(p.status, "Restarting")
    assert cond["reason"] == C.REASON_DISRUPTION
    assert "worker pod pi-worker-1 on node n2 is lost: node n2 unreachable for 60s" in cond["message"]
    forced = {a.name for a in p.actions if a.action == "delete" and a.force}
    assert forced == {"pi-worker-1"}  # the others end gracefully
    # a node that is gone: its pods are lost at once
    world = running(policy_job())
    world.nodes["n1"] = None
    p = plan(world.mpijob, world, now=at(31))
    assert (
        "worker pod pi-worker-0 on node n1 is lost: node n1 is gone"
        in S.get_condition(p.status, "Restarting")["message"]
    )
    # a node not read (no RBAC, an error): never taken for lost
    world = running(policy_job())
    world.nodes = {}
    assert plan(world.mpijob, world, now=at(500)).actions == []


def test_old_pods_stuck_on_a_lost_node_are_force_deleted_when_it_counts_as_lost() -> None:
    world = running(policy_job())
    world.mpijob["status"].update(restartCount=1, restarts={"program": 1, "disruption": 0})
    world.pods[0]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    world.nodes["n1"] = node("n1", "False", since=20)
    p = plan(world.mpijob, world, now=at(40))
    assert ("delete", "Pod", "pi-worker-0") not in kinds(p) and p.requeue_after == pytest.approx(41.0)
    p = plan(world.mpijob, world, now=at(81))
    delete = next(a for a in p.actions if a.name == "pi-worker-0")
    assert delete.force


@pytest.mark.parametrize(
    ("rules", "code", "reason", "counts"),
    [
        ([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}], 42, C.REASON_FAIL_JOB_RULE, None),
        (
            [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}}],
            143,
            C.REASON_DISRUPTION,
            {"program": 0, "disruption": 1},
        ),
        (
            [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}}],
            1,
            C.REASON_PROGRAM_FAILURE,
            {"program": 1, "disruption": 0},
        ),
        (
            [{"action": "FailJob", "onExitCodes": {"containerName": "other", "operator": "In", "values": [42]}}],
            42,
            C.REASON_PROGRAM_FAILURE,
            {"program": 1, "disruption": 0},
        ),
    ],
)
def test_rules_decide_before_the_built_in_classification(rules, code, reason, counts) -> None:
    world = running(policy_job(rules=rules))
    world.pods[1] = failed(world.pods[1], code)
    p = plan(world.mpijob, world, now=at(31))
    if counts is None:
        cond = S.get_condition(p.status, "Failed")
        assert cond["reason"] == reason
        assert cond["message"].endswith(
            "exited with code 42 (Error), which failurePolicy.rules[0] says is fatal (FailJob)"
        )
    else:
        assert S.get_condition(p.status, "Restarting")["reason"] == reason and p.status["restarts"] == counts


def test_a_launcher_deadline_fails_the_job_as_without_a_policy() -> None:
    world = running(policy_job())
    i = pod_named(world, "pi-launcher-abcde")
    world.pods[i] = failed(world.pods[i], 137)
    world.launcher["status"] = {
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "DeadlineExceeded",
                "message": "Job was active longer than specified deadline",
            }
        ]
    }
    p = plan(world.mpijob, world, now=at(31))
    assert S.get_condition(p.status, "Failed")["reason"] == "DeadlineExceeded"
    assert "restartCount" not in p.status


def test_a_launcher_job_that_failed_without_a_pod_is_a_program_failure() -> None:
    world = running(policy_job())
    world.pods = [q for q in world.pods if q["metadata"]["name"] != "pi-launcher-abcde"]
    world.launcher["status"] = {
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
            }
        ]
    }
    p = plan(world.mpijob, world, now=at(31))
    assert (
        "launcher Job pi-launcher failed (BackoffLimitExceeded: Job has reached"
        in S.get_condition(p.status, "Restarting")["message"]
    )


def test_an_operator_killed_after_the_status_finishes_the_restart_in_its_next_pass() -> None:
    """The status (attempt 1) was written, then the operator died: the old pods (attempt 0) are deleted by the next
    pass, which makes nothing new and counts nothing twice."""
    world = running(policy_job())
    world.pods[0] = failed(world.pods[0])
    p = plan(world.mpijob, world, now=at(31))
    world.mpijob = {**world.mpijob, "status": p.status}  # only the status was written
    again = plan(world.mpijob, world, now=at(35))
    done = [a for a in unrecorded(again) if a.action != "status"]
    assert {a.action for a in done} == {"delete"} and len(done) == 4
    assert sans_record(again.status) == sans_record(p.status) and again.restart is None
    world = gone(world, again)
    p2 = plan(world.mpijob, world, now=at(40))
    assert [a.name for a in p2.actions if a.action == "create"] == ["pi-worker-0", "pi-worker-1"]
    assert p2.status["restartCount"] == 1


def test_an_api_server_gone_in_the_middle_of_the_deletions_has_the_next_pass_finish_them() -> None:
    """The status and the first deletion went through, then the API server went away (the rest of the plan failed):
    the next pass, on the world read again, deletes what is left of attempt 0, counts nothing twice and makes
    nothing of attempt 1 yet."""
    world = running(policy_job())
    world.pods[0] = failed(world.pods[0])
    p = plan(world.mpijob, world, now=at(31))
    first = next(a for a in p.actions if a.action == "delete")
    world = world_after(world, P.Plan([first], p.status))
    world.mpijob = {**world.mpijob, "status": p.status}
    again = plan(world.mpijob, world, now=at(60))
    assert [k for k in kinds(again) if k[0] == "delete"] == [
        ("delete", "Pod", "pi-worker-1"),
        ("delete", "Pod", "pi-launcher-abcde"),
        ("delete", "Job", "pi-launcher"),
    ]
    assert sans_record(again.status) == sans_record(p.status) and again.restart is None
    world = gone(world, again)
    p2 = plan(world.mpijob, world, now=at(61))
    assert [a.name for a in p2.actions if a.action == "create"] == ["pi-worker-0", "pi-worker-1"]
    assert p2.status["restartCount"] == 1 and p2.status["restarts"] == {"program": 1, "disruption": 0}


def test_suspend_during_a_restart_deletes_the_old_world_and_keeps_the_attempt() -> None:
    world = running(policy_job())
    world.pods[0] = failed(world.pods[0])
    p = plan(world.mpijob, world, now=at(31))
    world.mpijob = {**world.mpijob, "status": p.status}
    world.mpijob["spec"]["runPolicy"]["suspend"] = True
    p = plan(world.mpijob, world, now=at(32))
    assert {a.action for a in unrecorded(p) if a.action != "status"} == {"delete"}
    world = gone(world, p)
    p = plan(world.mpijob, world, now=at(33))
    assert not any(a.kind == "Pod" and a.action == "create" for a in p.actions)
    assert p.status["phase"] == "Suspended" and p.status["restartCount"] == 1
    assert not any(a.kind == "Job" for a in p.actions)  # made on resume, once the new workers run
    world = world_after(world, p)
    world.mpijob["spec"]["runPolicy"]["suspend"] = False
    p = plan(world.mpijob, world, now=at(34))
    assert [a.name for a in p.actions if a.action == "create"] == ["pi-worker-0", "pi-worker-1"]
    world = world_after(world, p)
    world.pods = [set_phase(q, "Running", ready=True) for q in world.pods]
    job = next(a for a in plan(world.mpijob, world, now=at(35)).actions if a.kind == "Job")
    assert "suspend" not in job.body["spec"] and job.body["metadata"]["labels"][C.ATTEMPT_LABEL] == "1"


def test_an_elastic_job_replaces_a_failed_worker_and_keeps_its_launcher() -> None:
    obj = policy_job()
    launcher = obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["command"] = ["horovodrun", "-np", "2", "--host-discovery-script", "/etc/mpi/discover_hosts.sh", "x"]
    world = running(obj)
    world.pods[1] = set_phase(world.pods[1], "Failed", reason="Evicted")
    p = plan(world.mpijob, world, now=at(31))
    assert kinds(p) == [
        ("status", "MPIJob", "pi"),
        ("record", "ConfigMap", "pi-record"),
        ("delete", "Pod", "pi-worker-1"),
        ("event", "Event", C.REASON_WORKER_REPLACED),
        ("event", "Event", Rec.REASON),
    ]
    assert p.status["restarts"] == {"program": 0, "disruption": 1} and p.status["restartCount"] == 0
    assert p.restart == {"cause": "disruption", "scope": "worker"}
    world = world_after(world, p)
    p = plan(world.mpijob, world, now=at(32))
    assert ("create", "Pod", "pi-worker-1") in kinds(p) and not any(a.kind == "Job" for a in p.actions)
    # unless the policy says the world restarts
    obj["spec"]["runPolicy"]["failurePolicy"]["workerFailure"] = "RestartWorld"
    world = running(obj)
    world.pods[1] = set_phase(world.pods[1], "Failed", reason="Evicted")
    assert plan(world.mpijob, world, now=at(31)).status["restartCount"] == 1


def test_without_a_policy_nothing_changes() -> None:
    world = running(manifest())
    world.pods[0] = set_phase(world.pods[0], "Failed", reason="Evicted")
    p = plan(world.mpijob, world, now=at(31))
    assert S.get_condition(p.status, "Failed")["reason"] == "MPIJobEvicted" and "restartCount" not in p.status


def test_a_restart_keeps_what_is_left_of_the_deadline() -> None:
    obj = manifest(runPolicy={"failurePolicy": POLICY, "activeDeadlineSeconds": 600})
    world = running(obj)
    world.pods[0] = failed(world.pods[0])
    world = gone(world, plan(world.mpijob, world, now=at(31)))
    world = world_after(world, plan(world.mpijob, world, now=at(40)))
    world.pods = [set_phase(q, "Running", ready=True) for q in world.pods]
    job = next(a for a in plan(world.mpijob, world, now=at(100)).actions if a.kind == "Job")
    assert job.body["spec"]["activeDeadlineSeconds"] == 501  # started at 0, 600 s, 100 s later (+1 s of requeue slack)


def test_restart_counts_survive_any_api_status_stage() -> None:
    old = {"restartCount": 2, "restarts": {"program": 1, "disruption": 1}}
    assert R.carry(old, {"phase": "Running"}) == {"phase": "Running", **old}
    assert R.restarts({"restarts": {"program": "x"}}) == {"program": 0, "disruption": 0}
    assert R.restart_count({"restartCount": -1}) == 0


def test_t9k_restarts_in_its_own_status_shape() -> None:
    obj = t9k(runPolicy={"failurePolicy": {"maxRestarts": 1}})
    api = api_for(obj)
    status = {"conditions": [], "phase": "Running"}
    api.restarting(status, C.REASON_PROGRAM_FAILURE, "why", "2026-01-01T00:00:00Z")
    assert S.get_condition(status, "Running")["status"] == "False" and status["phase"] == "Pending"
    api.given_up(status, C.REASON_MAX_RESTARTS, "spent", "2026-01-01T00:00:00Z")
    assert status["phase"] == "Failed" and S.get_condition(status, "Failed")["reason"] == C.REASON_MAX_RESTARTS


def test_bdap_restarts_with_its_launcher_pod() -> None:
    obj = B.example()
    obj["spec"]["failurePolicy"] = {"maxRestarts": 1}
    world = B.ready_workers(B.settle(P.World(mpijob=obj)))
    world = B.settle(world, 1)
    world = B.launcher(world, "Failed", exit_code=2)
    p = plan(world.mpijob, world, now=at(30))
    assert p.status["restartCount"] == 1 and p.status["phase"] == "Pending"
    assert S.get_condition(p.status, "Running")["reason"] == C.REASON_PROGRAM_FAILURE
    deleted = {a.name for a in p.actions if a.action == "delete"}
    assert f"{B.NAME}-launcher" in deleted and f"{B.NAME}-worker-0" in deleted


def test_a_worker_deleted_while_its_world_runs_is_a_disruption_but_not_one_a_scale_up_adds() -> None:
    world = running(policy_job())
    world.pods = [q for q in world.pods if q["metadata"]["name"] != "pi-worker-1"]
    p = plan(world.mpijob, world, now=at(31))
    cond = S.get_condition(p.status, "Restarting")
    assert cond["reason"] == C.REASON_DISRUPTION and "worker pod pi-worker-1 is gone" in cond["message"]
    # a scale-up while it runs: pi-worker-2 is not in the hostfile as read, so it is made, not mourned
    world = running(policy_job())
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    p = plan(world.mpijob, world, now=at(31))
    assert ("create", "Pod", "pi-worker-2") in kinds(p) and "restartCount" not in p.status
    # before its launcher exists, a missing worker is only made again (the new world being built)
    world = running(policy_job())
    world.pods = [q for q in world.pods if q["metadata"]["name"] != "pi-worker-1"]
    world.launcher = None
    p = plan(world.mpijob, world, now=at(31))
    assert ("create", "Pod", "pi-worker-1") in kinds(p) and "restartCount" not in p.status


def test_a_second_restart_before_the_world_ran_again_says_why_anew() -> None:
    world = running(policy_job(maxRestarts=2))
    world.pods[0] = failed(world.pods[0])
    p = plan(world.mpijob, world, now=at(31))
    world = gone(world, p)
    world = world_after(world, plan(world.mpijob, world, now=at(40)))  # the new workers, not running yet
    world.pods[1] = set_phase(world.pods[1], "Failed", reason="Evicted")
    world.pods[1]["spec"]["nodeName"] = "n2"
    p = plan(world.mpijob, world, now=at(45))
    cond = S.get_condition(p.status, "Restarting")
    assert p.status["restartCount"] == 2 and p.status["restarts"] == {"program": 1, "disruption": 1}
    assert cond["reason"] == C.REASON_DISRUPTION and "(attempt 2)" in cond["message"]
    world.pods[1] = failed(world.pods[1])  # a program failure again, before anything ran: the same reason
    p = plan(world.mpijob, world, now=at(45))
    cond = S.get_condition(p.status, "Restarting")
    assert cond["reason"] == C.REASON_PROGRAM_FAILURE and "(attempt 2)" in cond["message"]
    assert "program failures 2 of 2" in cond["message"]
