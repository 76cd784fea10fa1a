"""T9k's batch.tensorstack.dev/v1beta1 MPIJob through the shared core: its documentation's own examples, their
children and status (golden files), pause/resume, debug, the registry, and malformed objects."""

from __future__ import annotations

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import apis
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import podgroup as PG
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import t9k as T
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import t9k_status as T9S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import InvalidMPIJob

from ._helpers import KEYS, assert_golden, finish_launcher, kinds, malformed, manifest, plan
from ._t9k import completed, doc_examples, launcher_pod, random_walk, settle, step, t9k, workers_ready


def errors_of(obj: dict) -> list[str]:
    with pytest.raises(InvalidMPIJob) as exc:
        T.parse(obj)
    return [str(e) for e in exc.value.errors]


# ---- the registry ----------------------------------------------------------------------------------------------------


def test_registry_dispatches_on_group_and_kind() -> None:
    assert apis.api_for(random_walk()) is T.API
    assert apis.api_for(manifest()) is apis.kubeflow.API
    assert apis.api_for({**manifest(), "apiVersion": "kubeflow.org/v1"}) is apis.kubeflow.API
    # Unknown groups and a missing apiVersion go to kubeflow.org, whose parse has always named them.
    assert apis.api_for({"spec": {}}) is apis.kubeflow.API
    p = plan({**random_walk(), "apiVersion": "batch.example.com/v1"})
    assert "apiVersion: unsupported value 'batch.example.com/v1'" in p.error


def test_a_wrong_t9k_version_is_named() -> None:
    assert errors_of({**random_walk(), "apiVersion": "batch.tensorstack.dev/v1"}) == [
        "apiVersion: unsupported value 'batch.tensorstack.dev/v1': supported values: batch.tensorstack.dev/v1beta1"
    ]
    p = plan({**random_walk(), "apiVersion": "batch.tensorstack.dev/v2"})
    assert p.error and "supported" in p.error


def test_registered_apis_are_well_formed() -> None:
    for (group, kind), api in apis.REGISTRY.items():
        assert (api.group, api.kind) == (group, kind) and api.versions
        assert api.api_version == f"{group}/{api.versions[0]}"


# ---- the documentation's examples ------------------------------------------------------------------------------------


def test_doc_examples_parse() -> None:
    """The full examples parse as written; the doc's fragments parse on top of its first example."""
    job = T.parse(random_walk())
    assert (job.worker_replicas, job.slots_per_worker, job.owner_api_version) == (5, 3, T.API_VERSION)
    for name in ("horovod", "resources", "shared_memory", "env", "scheduler", "debug", "pause"):
        for doc in doc_examples(name):
            T.parse(completed(doc))


def test_doc_fragments_alone_are_refused_naming_the_field() -> None:
    """The doc's partial manifests, applied alone, say what they lack."""
    assert errors_of(doc_examples("horovod")[0]) == [
        "spec.worker.cmd: required: the program mpirun starts on the workers (unless runMode.debug is enabled)"
    ]
    assert errors_of(doc_examples("resources")[0]) == [
        "spec.worker.template.spec.containers: must have a container named mpi-worker (MPI runs in it)",
        "spec.worker.cmd: required: the program mpirun starts on the workers (unless runMode.debug is enabled)",
    ]


def all_children(obj: dict, opts: K.Options) -> list[dict]:
    job = apis.api_for(obj).parse(obj)
    docs = [K.service(job), K.config_map(job, (), opts), K.ssh_secret(job, *KEYS)]
    if (pg := PG.pod_group(job, opts)) is not None:
        docs.append(pg)
    return docs + [K.worker_pod(job, i, opts) for i in range(job.worker_replicas)] + [K.launcher_job(job, opts)]


DOC_CASES = {
    "t9k_random_walk": (lambda: random_walk(), K.Options()),
    "t9k_horovod": (lambda: completed(doc_examples("horovod")[0]), K.Options()),
    "t9k_shared_memory": (lambda: completed(doc_examples("shared_memory")[0]), K.Options()),
    "t9k_scheduler_volcano": (lambda: completed(doc_examples("scheduler")[0]), K.Options(gang_scheduling="volcano")),
    "t9k_debug_worker_spec": (lambda: completed(doc_examples("debug")[0]), K.Options()),
    "t9k_debug_defaults": (lambda: completed(doc_examples("debug")[1]), K.Options()),
}


@pytest.mark.parametrize("case", sorted(DOC_CASES))
def test_doc_examples_children_match_golden(case: str) -> None:
    make, opts = DOC_CASES[case]
    assert_golden(case, all_children(make(), opts))


# ---- lifecycle --------------------------------------------------------------------------------------------------------


def _summary(p) -> list[dict]:
    return [a.summary() for a in p.actions]


def test_lifecycle_golden() -> None:
    """The documentation's first example from creation to Succeeded, cleanUpWorkers included."""
    steps = []
    world = settle(random_walk())
    steps.append({"step": "workers created", "status": world.mpijob["status"]})
    p, world = step(workers_ready(world), 10)
    steps.append({"step": "workers ready: launcher created", "actions": _summary(p), "status": p.status})
    world.pods.append(launcher_pod(world, "Running"))
    p, world = step(world, 20)
    steps.append({"step": "running", "actions": _summary(p), "status": p.status})
    world = finish_launcher(world)
    world.pods[-1] = {**world.pods[-1], "status": {"phase": "Succeeded"}}
    p, world = step(world, 300)
    steps.append({"step": "succeeded", "actions": _summary(p), "status": p.status, "finished": p.finished})
    again = plan(world.mpijob, world)
    steps.append({"step": "settled", "actions": _summary(again), "status": again.status})
    assert_golden("t9k_status_lifecycle", steps)
    assert again.actions == [] and p.finished
    assert all(a.kind == "Pod" and "worker" in a.name for a in p.actions if a.action == "delete")


def test_failed_launcher_golden() -> None:
    world = settle(t9k(runPolicy={}))
    world = workers_ready(world)
    p, world = step(world, 10)
    world.pods.append(launcher_pod(world, "Failed"))
    world = finish_launcher(world, "Failed", "BackoffLimitExceeded")
    p, world = step(world, 60)
    assert_golden("t9k_status_failed", [{"actions": _summary(p), "status": p.status}])
    assert p.status["phase"] == "Failed" and p.finished
    assert not [a for a in p.actions if a.action == "delete"]  # no cleanUpWorkers: the workers stay


def test_pause_resume_golden() -> None:
    """The documentation's pause example 1: pause deletes every replica; resume recreates them with resumeSpecs."""
    obj = completed(doc_examples("pause")[0])
    obj["spec"]["runMode"]["pause"]["enabled"] = False
    obj["spec"]["worker"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    world = settle(obj)
    p, world = step(workers_ready(world), 10)
    world.pods.append(launcher_pod(world, "Running"))
    p, world = step(world, 20)
    steps = [{"step": "running", "status": p.status}]
    world.mpijob["spec"]["runMode"]["pause"]["enabled"] = True
    p, world = step(world, 30)
    steps.append({"step": "paused", "actions": _summary(p), "status": p.status})
    assert world.launcher is None and [q["metadata"]["name"] for q in world.pods] == ["mpi-example-launcher-abcde"]
    world.pods = []  # the launcher Job's pods went with it
    p, world = step(world, 40)
    steps.append({"step": "paused, all gone", "actions": _summary(p), "status": p.status})
    world.mpijob["spec"]["runMode"]["pause"]["enabled"] = False
    p, world = step(world, 50)
    steps.append({"step": "resuming", "actions": _summary(p), "status": p.status})
    worker = next(a.body for a in p.actions if a.action == "create" and a.kind == "Pod")
    p, world = step(workers_ready(world), 60)
    steps.append({"step": "workers ready again", "actions": _summary(p), "status": p.status})
    launcher = world.launcher
    world.pods.append(launcher_pod(world, "Running"))
    p, world = step(world, 70)
    steps.append({"step": "running again", "actions": _summary(p), "status": p.status})
    assert_golden("t9k_status_pause_resume", steps)
    assert [s["status"]["phase"] for s in steps] == ["Running", "Paused", "Paused", "Resuming", "Resuming", "Running"]
    # resumeSpecs: the worker skips its init containers and runs the given command; the launcher keeps mpirun.
    assert worker["spec"]["containers"][0]["command"] == ["/usr/bin/sshd"]
    assert "initContainers" not in worker["spec"]
    assert launcher["spec"]["template"]["spec"]["containers"][0]["command"][0] == "/usr/local/bin/mpirun"
    assert launcher["spec"]["template"]["spec"]["initContainers"]


def test_debug_mode_runs_no_training() -> None:
    """The documentation's debug example 2: every replica up with the default debug commands; the job stays Running."""
    world = settle(completed(doc_examples("debug")[1]))
    p, world = step(workers_ready(world), 10)
    launcher = next(a.body for a in p.actions if a.action == "create" and a.kind == "Job")
    assert launcher["spec"]["template"]["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    assert world.pods[0]["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd", "-D"]
    world.pods.append(launcher_pod(world, "Running"))
    p, world = step(world, 20)
    assert p.status["phase"] == "Running" and not p.finished


# ---- status shape ----------------------------------------------------------------------------------------------------


def test_status_has_the_documented_shape() -> None:
    """Our status's keys are the ones of the documentation's status examples (conditions, phase, tasks, aggregate)."""
    world = settle(random_walk())
    p, world = step(workers_ready(world), 10)
    world.pods.append(launcher_pod(world, "Running"))
    p, world = step(world, 20)
    ours = p.status
    documented = {}
    for name in ("status_failed", "status_tasks", "status_aggregate"):
        documented.update(doc_examples(name)[0]["status"])
    assert set(ours) == set(documented)
    assert {frozenset(c) for c in ours["conditions"]} == {frozenset(c) for c in documented["conditions"]}
    assert [t["type"] for t in ours["tasks"]] == [t["type"] for t in documented["tasks"]]
    for mine, theirs in zip(ours["tasks"], documented["tasks"]):
        assert set(mine) == set(theirs)
        assert {frozenset(s) for s in mine["status"]} == {frozenset(s) for s in theirs["status"]}
    assert list(ours["aggregate"]) == list(T9S.AGGREGATE_KEYS) and set(ours["aggregate"]) == set(
        documented["aggregate"]
    )
    assert ours["aggregate"]["running"] == 6 and ours["tasks"][1]["status"][0]["uid"] == "uid-mpi-example-worker-0"


def test_doc_status_example_reads_as_its_phase() -> None:
    """The documentation's Failed example (Completed False, Failed True) is Failed and finished; mpijob_info's phase agrees."""
    status = doc_examples("status_failed")[0]["status"]
    assert T9S.phase(status) == "Failed" and T9S.finished(status) and T9S.settled(status)


def test_restart_counts_and_unknown_pods() -> None:
    world = settle(random_walk())
    world = workers_ready(world)
    world.pods[0]["status"]["containerStatuses"] = [{"restartCount": 2}, {"restartCount": 1}]
    world.pods[1]["status"]["phase"] = "Unknown"
    p = plan(world.mpijob, world)
    assert p.status["tasks"][1]["restartCount"] == 3
    assert p.status["phase"] == "Unknown" and p.status["aggregate"]["unknown"] == 1


def test_a_failed_worker_is_a_replica_failure() -> None:
    world = settle(random_walk())
    world = workers_ready(world)
    world.pods[2]["status"] = {
        "phase": "Failed",
        "containerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 255}}}],
    }
    p = plan(world.mpijob, world)
    cond = next(c for c in p.status["conditions"] if c["type"] == "ReplicaFailure")
    assert cond["status"] == "True" and "mpi-example-worker-2 (Error, exit code 255)" in cond["message"]
    assert p.status["phase"] == "Pending" and not p.finished


def test_evicted_workers_fail_the_job() -> None:
    world = settle(random_walk())
    world = workers_ready(world)
    world.pods[0]["status"] = {"phase": "Failed", "reason": "Evicted"}
    p = plan(world.mpijob, world)
    assert p.status["phase"] == "Failed" and p.finished
    assert [a.name for a in p.actions if a.action == "delete"] == [f"mpi-example-worker-{i}" for i in range(5)]


def test_invalid_spec_fails_then_recovers() -> None:
    bad = t9k(mpiHome="usr/local")
    p = plan(bad)
    assert p.error == "Found validation errors: spec.mpiHome: must be an absolute path, got 'usr/local'"
    assert p.status["phase"] == "Failed" and p.finished and not T9S.settled(p.status)
    fixed = {**random_walk(), "status": p.status}
    p2 = plan(fixed)
    assert p2.status["phase"] == "Pending" and [c["type"] for c in p2.status["conditions"]] == ["Initialized"]
    assert ("create", "Pod", "mpi-example-worker-0") in kinds(p2)


def test_owner_references_name_the_t9k_object() -> None:
    job = T.parse(random_walk())
    assert K.owner_reference(job)["apiVersion"] == "batch.tensorstack.dev/v1beta1"
    assert K.worker_pod(job, 0, K.Options())["metadata"]["ownerReferences"][0]["uid"] == "uid-mpi-example"


# ---- fuzz -------------------------------------------------------------------------------------------------------------


def _rich() -> dict:
    obj = completed(doc_examples("scheduler")[0])
    obj["spec"]["runMode"] = {
        "debug": {"enabled": False, "replicaSpecs": [{"type": "worker", "skipInitContainer": True, "command": ["x"]}]},
        "pause": {
            "enabled": False,
            "resumeSpecs": [{"type": "launcher", "skipInitContainer": False, "command": ["y"], "args": ["z"]}],
        },
    }
    tmpl = obj["spec"]["worker"]["template"]
    tmpl["metadata"] = {"labels": {"a": "b"}, "annotations": {"c": "d"}}
    tmpl["spec"].update(volumes=[{"name": "v"}], initContainers=[{"name": "i"}], restartPolicy="OnFailure")
    tmpl["spec"]["containers"][0].update(env=[{"name": "A"}], volumeMounts=[], command=["x"], args=["y"])
    return obj


@pytest.mark.parametrize("opts", [K.Options(), K.Options(gang_scheduling="volcano")], ids=["plain", "gang"])
def test_reconcile_never_crashes_on_malformed_t9k_objects(opts: K.Options) -> None:
    """Any field replaced by any JSON value yields a plan (a Failed condition naming the field at worst)."""
    base = _rich()
    T.parse(base)
    for path, obj in malformed(base):
        try:
            T.parse(obj)
        except InvalidMPIJob as exc:
            assert all(e.path for e in exc.errors)
        result = plan(obj, opts=opts)
        assert result.status is not None
        assert result.status.get("phase") in T9S.PHASES or path[0] in ("apiVersion", "kind")
