"""Progress writes (Options.progress_every): a status that only counts workers coming up, and the discover_hosts.sh
with it, may wait; every other change is written at once (docs/operator.md, "Progress writes")."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils.kube.reconcile import Held
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import job_key

from ._helpers import at, kinds, manifest, plan, run_all, set_phase, settle

EVERY = K.Options(progress_every=1.0)


def one_worker_up():
    """A created job of two workers, the first of them Running."""
    world = settle(manifest())
    world.pods = [set_phase(world.pods[0], "Running", ready=True), *world.pods[1:]]
    return world


def test_a_worker_coming_up_is_held_then_written_with_its_hosts_once_it_has_waited() -> None:
    world = one_worker_up()
    held = plan(world.mpijob, world, EVERY, now=at(10), held_for=0.25)
    assert held.held and kinds(held) == [] and held.requeue_after == 0.75
    assert held.status == world.mpijob["status"]  # what the API server still holds
    due = plan(world.mpijob, world, EVERY, now=at(11), held_for=1.0)
    assert not due.held and kinds(due) == [("patch", "ConfigMap", "pi-config"), ("status", "MPIJob", "pi")]
    assert due.status["replicaStatuses"]["Worker"]["active"] == 1


def test_nothing_is_held_without_the_shells_memory_or_with_progress_every_0() -> None:
    world = one_worker_up()
    for opts, held_for in ((EVERY, None), (K.Options(), 0.0)):
        p = plan(world.mpijob, world, opts, now=at(10), held_for=held_for)
        assert not p.held and ("status", "MPIJob", "pi") in kinds(p)


def test_a_condition_is_never_held() -> None:
    world = run_all(settle(manifest()))
    p = plan(world.mpijob, world, EVERY, now=at(10), held_for=0.0)
    assert not p.held and p.status["conditions"][-1]["type"] == "Running"
    assert ("event", "Event", "MPIJobRunning") in kinds(p)


def test_a_pass_with_anything_else_to_do_writes_the_counts_too() -> None:
    world = one_worker_up()
    world.service = None  # the Service is gone: made again, and the counts go with it
    p = plan(world.mpijob, world, EVERY, now=at(10), held_for=0.0)
    assert not p.held and ("create", "Service", "pi") in kinds(p) and ("status", "MPIJob", "pi") in kinds(p)


def test_progress_only_is_an_active_count_that_grew_and_nothing_else() -> None:
    old = {
        "conditions": [{"type": "Created", "status": "True"}],
        "replicaStatuses": {"Worker": {"active": 1, "selector": "s"}, "Launcher": {}},
    }

    def with_replicas(**replicas):
        return {**old, "replicaStatuses": {**old["replicaStatuses"], **replicas}}

    assert kubeflow.progress_only(old, with_replicas(Worker={"active": 2, "selector": "s"}))
    assert kubeflow.progress_only(old, with_replicas(Launcher={"active": 1}))
    assert not kubeflow.progress_only(old, with_replicas(Worker={"selector": "s"}))  # fewer: written
    assert not kubeflow.progress_only(old, with_replicas(Worker={"active": 1, "failed": 1, "selector": "s"}))
    assert not kubeflow.progress_only(old, {**with_replicas(Launcher={"active": 1}), "startTime": "t"})
    assert not kubeflow.progress_only({**old, "conditions": []}, with_replicas(Launcher={"active": 1}))
    assert not kubeflow.progress_only(old, {**old, "replicaStatuses": {"Worker": {"active": 2, "selector": "s"}}})
    assert not kubeflow.progress_only(old, with_replicas(Worker={"active": True, "selector": "s"}))


def test_held_remembers_since_when_until_a_pass_writes() -> None:
    clock = [100.0]
    held, key = Held(clock=lambda: clock[0]), job_key("ns", "pi")
    assert held.held_for(key) == 0.0
    held.update(key, True)
    clock[0] += 0.5
    held.update(key, True)  # held again: still since the first time
    assert held.held_for(key) == 0.5
    held.update(key, False)
    assert held.held_for(key) == 0.0
    assert Held().held_for(key) == 0.0
