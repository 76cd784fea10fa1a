"""Status transitions: Kubeflow's condition mechanics, and golden files of a job's lifecycle."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow

from ._helpers import (
    assert_golden,
    at,
    finish_launcher,
    kinds,
    launcher_pod,
    manifest,
    plan,
    set_phase,
    settle,
    with_status,
    world_after,
)


def test_set_condition_keeps_transition_time_when_only_the_reason_changes() -> None:
    st: dict = {}
    assert S.set_condition(st, "Running", "False", "A", "m", "t1")
    assert not S.set_condition(st, "Running", "False", "A", "other message", "t2")
    assert S.set_condition(st, "Running", "False", "B", "m", "t3")
    cond = S.get_condition(st, "Running")
    assert (cond["lastTransitionTime"], cond["lastUpdateTime"]) == ("t1", "t3")


def test_the_changed_condition_goes_last() -> None:
    st: dict = {}
    S.set_condition(st, "Created", "True", "MPIJobCreated", "", "t1")
    S.set_condition(st, "Running", "True", "MPIJobRunning", "", "t2")
    S.set_condition(st, "Created", "True", "Other", "", "t3")
    assert [c["type"] for c in st["conditions"]] == ["Running", "Created"]


def test_running_and_restarting_exclude_each_other() -> None:
    st: dict = {}
    S.set_condition(st, "Running", "True", "R", "", "t1")
    S.set_condition(st, "Restarting", "True", "X", "", "t2")
    assert [c["type"] for c in st["conditions"]] == ["Restarting"]


def test_succeeded_and_failed_turn_running_off() -> None:
    st: dict = {}
    S.set_condition(st, "Running", "True", "R", "", "t1")
    S.set_condition(st, "Succeeded", "True", "S", "", "t2")
    assert S.get_condition(st, "Running")["status"] == "False"
    assert S.is_finished(st)


def _conds(*spec: tuple[str, str]) -> dict:
    return {"conditions": [{"type": t, "status": v, "reason": "r"} for t, v in spec]}


def test_phase_is_the_first_true_condition_not_the_last_one() -> None:
    # Kubeflow's column showed the last condition's type: Running for both of these.
    suspended = _conds(("Created", "True"), ("Suspended", "True"), ("Running", "False"))
    finished_unseen = _conds(("Created", "True"), ("Succeeded", "True"), ("Running", "False"))
    assert (kubeflow.phase(suspended), kubeflow.phase(finished_unseen)) == ("Suspended", "Succeeded")
    assert kubeflow.phase(_conds(("Running", "True"), ("Failed", "True"))) == "Failed"
    assert kubeflow.phase(_conds(("Created", "True"), ("Restarting", "True"))) == "Restarting"
    assert kubeflow.phase(_conds(("Created", "True"), ("Running", "False"))) == "Created"
    assert kubeflow.phase({}) == kubeflow.phase(None) == "Pending"
    assert kubeflow.with_phase(suspended)["phase"] == "Suspended" and "phase" not in suspended  # a copy


def test_a_finished_job_without_phase_gets_it_written_once() -> None:
    """A job finished under an operator that did not write status.phase: the next reconcile adds it, then no more
    writes (status is written only when it changed)."""
    old = {**_conds(("Created", "True"), ("Succeeded", "True")), "completionTime": "2026-01-01T00:00:00Z"}
    first = plan(with_status(manifest(), old))
    assert first.status["phase"] == "Succeeded"
    assert [a.action for a in first.actions] == ["status"]
    assert [a.action for a in plan(with_status(manifest(), first.status)).actions] == []


def _lifecycle(obj: dict, opts: K.Options | None = None) -> list[dict]:
    """Status after each step: created, workers and launcher running, launcher complete."""
    steps = []
    world = settle(obj, opts)
    steps.append({"step": "created", "status": world.mpijob["status"]})
    world.pods = [set_phase(p, "Running", ready=True) for p in world.pods] + [launcher_pod(world, "Running")]
    p = plan(world.mpijob, world, opts, at(60))
    steps.append({"step": "running", "actions": [a.summary() for a in p.actions], "status": p.status})
    world = finish_launcher(world_after(world, p))
    world.pods[-1] = set_phase(world.pods[-1], "Succeeded")
    p = plan(world.mpijob, world, opts, at(300))
    steps.append(
        {
            "step": "succeeded",
            "actions": [a.summary() for a in p.actions],
            "status": p.status,
            "requeue_after": p.requeue_after,
        }
    )
    return steps


def test_lifecycle_golden() -> None:
    assert_golden(
        "status_lifecycle",
        _lifecycle(manifest(runPolicy={"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 3600})),
    )


def test_lifecycle_launcher_as_worker_golden() -> None:
    assert_golden("status_lifecycle_launcher_as_worker", _lifecycle(manifest("pi", None, runLauncherAsWorker=True)))


def test_suspend_resume_golden() -> None:
    world = settle(manifest(runPolicy={"suspend": True}))
    steps = [{"step": "created suspended", "status": world.mpijob["status"]}]
    world.mpijob["spec"]["runPolicy"] = {"suspend": False}
    p = plan(world.mpijob, world, now=at(120))
    steps.append({"step": "resumed", "actions": [a.summary() for a in p.actions], "status": p.status})
    world = world_after(world, p)
    world.mpijob["spec"]["runPolicy"] = {"suspend": True}
    p = plan(world.mpijob, world, now=at(180))
    steps.append({"step": "suspended again", "actions": [a.summary() for a in p.actions], "status": p.status})
    assert_golden("status_suspend_resume", steps)


def test_plans_golden() -> None:
    """The plans of the main scenarios, as the module reports them (action, kind, name, reason)."""
    scenarios = {}
    scenarios["new job"] = plan(manifest())
    scenarios["new job, gang scheduling with Volcano"] = plan(manifest(), opts=K.Options(gang_scheduling="volcano"))
    scenarios["new job, WaitForWorkersReady"] = plan(manifest(launcherCreationPolicy="WaitForWorkersReady"))
    scenarios["new job, suspended"] = plan(manifest(runPolicy={"suspend": True}))
    world = settle(manifest(workers=4))
    world.mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 2
    scenarios["scale 4 -> 2"] = plan(world.mpijob, world, now=at(30))
    doc = [{"scenario": name, "actions": [a.summary() for a in p.actions]} for name, p in scenarios.items()]
    assert_golden("plans", doc)
    assert kinds(scenarios["new job"])[0] == ("create", "Service", "pi")
