"""What the batch.test.bdap.com README and T9k's MPIJob documentation say that no other unit test asserted
(docs/apis.md, "Every field of its documentation, and its test", lists every documented field and behaviour with its
test; these close the gaps that list found)."""

from __future__ import annotations

import copy

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import t9k as T

from ._bdap import NAME, lifecycle
from ._helpers import at, kinds, plan, world_after
from ._t9k import completed, doc_examples, random_walk, settle, step, workers_ready

# ---- T9k (batch.tensorstack.dev) -------------------------------------------------------------------------------------


def _mpi_worker(pod_spec: dict) -> dict:
    return next(c for c in pod_spec["containers"] if c["name"] == "mpi-worker")


def _both(obj: dict) -> list[dict]:
    """The mpi-worker container of worker-0 and of the launcher."""
    job = T.parse(obj)
    return [
        _mpi_worker(K.worker_pod(job, 0, K.Options())["spec"]),
        _mpi_worker(K.launcher_job(job, K.Options())["spec"]["template"]["spec"]),
    ]


def test_t9k_env_example_reaches_both_roles() -> None:
    """The doc's env example: a value and a secretKeyRef, set in the worker template, are in every replica."""
    for container in _both(completed(doc_examples("env")[0])):
        env = {e["name"]: e for e in container["env"]}
        assert env["ENV_DIRECT"] == {"name": "ENV_DIRECT", "value": "env-value"}
        assert env["ENV_REFERENCED"] == {
            "name": "ENV_REFERENCED",
            "valueFrom": {"secretKeyRef": {"name": "secret-name", "key": "key-in-secret"}},
        }


def test_t9k_resources_example_reaches_both_roles() -> None:
    """The doc's resources example: requests 2 CPU / 2Gi, limits 4 CPU / 4Gi, on every replica."""
    for container in _both(completed(doc_examples("resources")[0])):
        assert container["resources"] == {
            "limits": {"cpu": 4, "memory": "4Gi"},
            "requests": {"cpu": 2, "memory": "2Gi"},
        }


def test_t9k_without_scheduler_uses_the_default_scheduler() -> None:
    """No spec.scheduler: Kubernetes' default scheduler (no schedulerName, no PodGroup) with the operator's default
    options (T9k: "not set: Kubernetes' default scheduler"). An operator started with --gang-scheduling gang-schedules
    every job, this one too (test_t9k.py::test_doc_examples_children_match_golden[t9k_scheduler_volcano])."""
    obj = random_walk()
    assert "scheduler" not in obj["spec"]
    p = plan(obj)
    pods = [a.body for a in p.actions if a.kind == "Pod"]
    assert len(pods) == 5 and all("schedulerName" not in pod["spec"] for pod in pods)
    assert not [a for a in p.actions if a.kind == "PodGroup"]


def test_t9k_launcher_starts_only_once_every_worker_is_ready() -> None:
    """T9k: "after the workers are ready, the launcher sends the start command"."""
    world = settle(random_walk())  # the workers are created, none Ready: no launcher however often it reconciles
    assert world.launcher is None and len(world.pods) == 5
    workers_ready(world)
    world.pods[4]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    p, world = step(world, 10)
    assert ("create", "Job", "mpi-example-launcher") not in kinds(p)
    p, _ = step(workers_ready(world), 20)
    assert ("create", "Job", "mpi-example-launcher") in kinds(p)


def test_t9k_restart_count_is_the_sum_over_the_roles_pods() -> None:
    """status.tasks[].restartCount: "the sum of the restarts of the replicas of one role"."""
    world = workers_ready(settle(random_walk()))
    world.pods[0]["status"]["containerStatuses"] = [{"restartCount": 2}]
    world.pods[3]["status"]["containerStatuses"] = [{"restartCount": 1}, {"restartCount": 4}]
    tasks = {t["type"]: t for t in plan(world.mpijob, world).status["tasks"]}
    assert tasks["worker"]["restartCount"] == 7


# ---- batch.test.bdap.com ---------------------------------------------------------------------------------------------


def test_bdap_launcher_template_edit_applies_once_the_launcher_pod_is_deleted() -> None:
    """The README: "if the Launcher is modified, then you need to manually delete the existing Launcher Pod to
    trigger the update". The edit alone leaves the running launcher; deleting its pod makes one from the new
    template."""
    *_, (_, _, world) = lifecycle()[:3]  # running: the launcher pod runs
    edited = copy.deepcopy(world.mpijob)
    edited["spec"]["launcherTemplate"]["spec"]["containers"][0]["image"] = "horovod-torch-cpu:local"
    world.mpijob = edited
    p = plan(world.mpijob, world, now=at(50))
    assert [a for a in kinds(p) if a[2] == f"{NAME}-launcher"] == []
    world = world_after(world, p)
    world.pods = [q for q in world.pods if q["metadata"]["name"] != f"{NAME}-launcher"]  # kubectl delete pod
    p = plan(world.mpijob, world, now=at(60))
    created = [a.body for a in p.actions if a.action == "create" and a.name == f"{NAME}-launcher"]
    assert [c["kind"] for c in created] == ["Pod"]
    assert created[0]["spec"]["containers"][0]["image"] == "horovod-torch-cpu:local"


def test_bdap_launcher_uses_every_worker() -> None:
    """The README: "the launcher pod will use all workers (numWorkers in spec)": the hostfile the launcher's
    $OMPI_MCA_orte_default_hostfile names lists them all, and the launcher mounts it there."""
    _, p, world = lifecycle()[1]
    pod = next(a.body for a in p.actions if a.action == "create" and a.name == f"{NAME}-launcher")
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    mounts = {m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert env["OMPI_MCA_orte_default_hostfile"].rsplit("/", 1)[0] in mounts
    hosts = [line.split()[0].split(".")[0] for line in world.config_map["data"]["hostfile"].splitlines()]
    assert hosts == [f"{NAME}-worker-{i}" for i in range(5)]
