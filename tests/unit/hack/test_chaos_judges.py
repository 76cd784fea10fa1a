"""The chaos harness's pure judgements (hack/experiments/chaos/): when a refusal names the field a mutation broke, what
an upgrade changed, and that the storm's manifests are the same for a seed and spread over the three APIs."""

from __future__ import annotations

from hack.experiments.chaos.failover import changes
from hack.experiments.chaos.storm import Storm, names_a_field


def test_a_refusal_names_the_field_by_its_path_or_last_keys() -> None:
    server = (
        'MPIJob.kubeflow.org "storm-00001" is invalid: spec.slotsPerWorker: Invalid value: "string": '
        "spec.slotsPerWorker in body must be of type integer"
    )
    assert names_a_field(server, ["spec.slotsPerWorker: type swapped"])
    assert names_a_field(
        "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].image: Required value",
        ["spec.mpiReplicaSpecs.Worker.template.spec.containers.0.image: removed"],
    )
    assert names_a_field(
        "the API version in the data (12) does not match the expected API version", ["apiVersion: type swapped"]
    )
    assert not names_a_field(
        "Internal error occurred: etcdserver: request timed out", ["spec.slotsPerWorker: huge value"]
    )


def test_an_upgrade_that_changed_nothing_has_no_changes_and_each_change_is_named() -> None:
    before = {"jobs": {"a": "10"}, "children": {"Pod/a-worker-0": "u1"}, "events": {"a/MPIJobCreated": 1}}
    assert changes(before, before) == []
    after = {
        "jobs": {"a": "11"},
        "children": {"Pod/a-worker-0": "u2", "Pod/a-worker-1": "u3"},
        "events": {"a/MPIJobCreated": 2},
    }
    assert changes(before, after) == [
        "status rewritten (resourceVersion moved): a",
        "child recreated or changed: Pod/a-worker-0",
        "child recreated or changed: Pod/a-worker-1",
        "Event written: a/MPIJobCreated",
    ]


def test_the_storm_is_reproducible_and_covers_the_three_apis() -> None:
    one, two = Storm("ns", 30, seed=4), Storm("ns", 30, seed=4)
    assert [(v, o, d) for v, o, d in one.items.values()] == [(v, o, d) for v, o, d in two.items.values()]
    assert {v for v, _, _ in one.items.values()} == {
        "kubeflow.org/v2beta1",
        "batch.tensorstack.dev/v1beta1",
        "batch.test.bdap.com/v1",
    }
    assert all(done for _, _, done in one.items.values())
