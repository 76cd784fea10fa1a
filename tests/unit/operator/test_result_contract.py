"""The one result contract between the reconcile module and the loop: what the core decides (finished, condition
transitions, requeue) goes through the module's JSON output and comes back unchanged from the runner's parse."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult, Key, Outcome
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.status import Transition
from ansible_collections.mpi.operator.plugins.modules import mpijob_reconcile
from mpijob_operator.runner import parse_module_result
from tests.unit.mpijob._helpers import at, finish_launcher, manifest, plan, run_all, settle, with_status, world_after


def lifecycle() -> dict[str, P.Plan]:
    """The plans of one job's life, each on the world its predecessor left, and of a few special jobs."""
    plans: dict[str, P.Plan] = {}
    obj = manifest(runPolicy={"ttlSecondsAfterFinished": 600, "activeDeadlineSeconds": 3600})
    world = P.World(mpijob=obj)
    plans["new"] = plan(obj, world, now=at(0))
    world = settle(obj, world=world_after(world, plans["new"]))
    plans["nothing to do"] = plan(world.mpijob, world, now=at(5))
    world = run_all(world)
    plans["running"] = plan(world.mpijob, world, now=at(60))
    world = finish_launcher(world_after(world, plans["running"]))
    plans["succeeded"] = plan(world.mpijob, world, now=at(310))
    cleaned = copy.deepcopy(world)
    cleaned.mpijob["spec"]["runPolicy"]["cleanPodPolicy"] = "All"
    plans["succeeded, clean-up later"] = plan(cleaned.mpijob, cleaned, K.Options(cleanup_later=True), now=at(310))
    world = world_after(world, plans["succeeded"])
    plans["finished, waiting for its TTL"] = plan(world.mpijob, world, now=at(320))
    plans["TTL expired"] = plan(world.mpijob, world, now=at(1000))
    plans["invalid"] = plan(manifest(workers=0), now=at(0))
    foreign = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pi", "ownerReferences": []}}
    plans["foreign child"] = plan(manifest(), P.World(mpijob=manifest(), service=foreign))
    fresh = {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "MPIJobCreated",
                "lastTransitionTime": "2999-01-01T00:00:00Z",
            }
        ]
    }
    other = with_status(manifest(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}), fresh)
    plans["managed by MultiKueue"] = plan(other, now=at(0))
    return plans


def facts(p: P.Plan) -> tuple:
    return p.finished, [(t.type, t.status, t.reason) for t in p.transitions], p.requeue_after, p.cleanup_pending


def test_the_core_says_what_changed_finished_and_when_to_come_back() -> None:
    got = {name: facts(p) for name, p in lifecycle().items()}
    assert got == {
        "new": (False, [("Created", "True", "MPIJobCreated")], 3601.0, False),
        "nothing to do": (False, [], 3596.0, False),
        "running": (False, [("Running", "True", "MPIJobRunning")], 3541.0, False),
        # Succeeded turns Running off: both are transitions, each with its own reason.
        "succeeded": (
            True,
            [("Running", "False", "MPIJobRunning"), ("Succeeded", "True", "MPIJobSucceeded")],
            590.0,
            False,
        ),
        # The same, with the workers to delete left to a pass that can wait.
        "succeeded, clean-up later": (
            True,
            [("Running", "False", "MPIJobRunning"), ("Succeeded", "True", "MPIJobSucceeded")],
            590.0,
            True,
        ),
        "finished, waiting for its TTL": (True, [], 580.0, False),
        "TTL expired": (True, [], None, False),  # the MPIJob is deleted: its status is not written, nothing transitions
        "invalid": (True, [("Failed", "True", "ValidationError")], None, False),
        "foreign child": (False, [], None, False),
        # Another controller's status, however fresh its times, is no transition of ours.
        "managed by MultiKueue": (False, [], None, False),
    }


def test_a_reason_or_message_change_is_not_a_transition() -> None:
    old = {"conditions": [{"type": "Running", "status": "False", "reason": "A", "message": "m"}]}
    new = {"conditions": [{"type": "Running", "status": "False", "reason": "B", "message": "n"}]}
    assert S.transitions(old, new) == ()
    assert S.transitions({}, new) == (Transition("Running", "False", "B"),)


def module_result(p: P.Plan, name: str) -> JobResult:
    """The result the module builds from a plan it carried out in full (reconcile_batch, then the Applier)."""
    result = JobResult(namespace="ns", name=name, uid=f"uid-{name}")
    p.fill(result)
    result.actions = [a.summary() for a in p.actions]
    result.transitions = list(p.transitions)
    return result


def test_core_plan_to_module_output_to_runner_parse_is_lossless() -> None:
    results = [module_result(p, f"job-{i}") for i, p in enumerate(lifecycle().values())]
    results[0].read_version, results[0].resource_version = "41", "42"  # a status write's versions go through too
    # What the module emits: exit_json(changed=..., jobs=[r.as_dict() ...]) is one JSON document on stdout.
    emitted = json.dumps({"changed": True, "jobs": [r.as_dict() for r in results], "api_calls": 7})
    parsed = parse_module_result([r.key for r in results], json.loads(emitted), "successful")
    assert [parsed[r.key] for r in results] == results
    assert any(r.transitions for r in results) and any(r.finished for r in results)
    assert any(r.requeue_after for r in results) and any(r.deleted for r in results)
    assert any(r.cleanup_pending for r in results)
    assert {r.outcome for r in results} == set(Outcome)  # every outcome goes through by value


def test_keys_of_two_apis_do_not_collide_through_the_contract() -> None:
    """A kubeflow.org job and a T9k job of the same name in one namespace are two jobs, each its own result."""
    kubeflow = JobResult(namespace="ns", name="pi", uid="a", finished=True)
    t9k = JobResult(namespace="ns", name="pi", uid="b", api_version="batch.tensorstack.dev/v1beta1")
    assert kubeflow.key == Key("ns", "pi", "kubeflow.org/v2beta1")
    assert t9k.key == Key("ns", "pi", "batch.tensorstack.dev/v1beta1")
    assert JobResult(namespace="ns", name="pi", api_version="kubeflow.org/v1").key == kubeflow.key  # one job
    emitted = json.dumps({"jobs": [t9k.as_dict(), kubeflow.as_dict()]})
    parsed = parse_module_result([kubeflow.key, t9k.key], json.loads(emitted), "successful")
    assert parsed == {kubeflow.key: kubeflow, t9k.key: t9k}
    assert "api_version" not in kubeflow.as_dict()  # kubeflow.org's result is as it always was


def test_every_field_of_the_result_is_documented_in_the_module() -> None:
    documented = yaml.safe_load(mpijob_reconcile.RETURN)["jobs"]["contains"]
    result = JobResult(
        namespace="ns",
        name="pi",
        transitions=[Transition("Created", "True", "MPIJobCreated")],
        api_version="batch.tensorstack.dev/v1beta1",
        restart={"cause": "program", "scope": "world"},
        read_version="41",
        resource_version="42",
    )
    assert set(documented) == set(result.as_dict())
    assert set(documented["restart"]["contains"]) == set(result.as_dict()["restart"])
    assert set(documented["transitions"]["contains"]) == set(result.as_dict()["transitions"][0])


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        ({"cause": "disruption", "scope": "worker"}, {"cause": "disruption", "scope": "worker"}),
        ({"cause": "program"}, {"cause": "program", "scope": "world"}),
        ({"cause": "cosmic rays"}, None),
        ("program", None),
    ],
)
def test_a_restart_goes_through_the_contract_as_the_metric_counts_it(sent: object, read: object) -> None:
    entry = JobResult(namespace="ns", name="a").as_dict() | {"restart": sent}
    assert JobResult.from_dict(json.loads(json.dumps(entry))).restart == read


@pytest.mark.parametrize(
    "entry",
    [{"namespace": "ns", "name": "a"}, {"namespace": "ns", "name": "a", "transitions": None, "requeue_after": None}],
)
def test_a_sparse_entry_takes_the_defaults(entry: dict) -> None:
    assert JobResult.from_dict(entry) == JobResult(namespace="ns", name="a")
