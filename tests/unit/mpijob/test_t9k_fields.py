"""Every field of T9k's MPIJob (its documentation, and the CRD when there is one) has an effect tested here.

FIELDS maps each field to its test; test_every_field_is_covered fails when the documentation's list or the CRD has a
field nobody tests. Bad values are refused with an error naming the field.
"""

from __future__ import annotations

import sys

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import t9k as T
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import t9k_status as T9S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import InvalidMPIJob
from tests.support.paths import ROOT

from ._helpers import failure_policy_fields, finish_launcher, kinds, plan
from ._t9k import launcher_pod, random_walk, settle, step, t9k, workers_ready

CRD = ROOT / "roles" / "crds" / "files" / "mpijobs.batch.tensorstack.dev.yaml"


def errors_of(obj: dict) -> list[str]:
    with pytest.raises(InvalidMPIJob) as exc:
        T.parse(obj)
    return [str(e) for e in exc.value.errors]


def container(pod_or_template: dict) -> dict:
    spec = pod_or_template["spec"]
    return next(c for c in spec["containers"] if c["name"] == "mpi-worker")


def built(obj: dict, opts: K.Options | None = None) -> tuple[dict, dict]:
    """(worker-0 pod, launcher pod template) of an object."""
    job = T.parse(obj)
    return K.worker_pod(job, 0, opts or K.Options()), K.launcher_job(job, opts or K.Options())["spec"]["template"]


def test_worker() -> None:
    """The launcher is built from the worker template (T9k has no launcher spec)."""
    worker, launcher = built(random_walk())
    for key in ("image", "resources", "workingDir"):
        assert container(launcher)[key] == container(worker)[key]
    assert errors_of(t9k(worker=None))[0] == "spec.worker: required"


def test_worker_replicas() -> None:
    job = T.parse(t9k(worker={**random_walk()["spec"]["worker"], "replicas": 2}))
    assert job.worker_replicas == 2 and K.hostfile(job, K.Options()).count("\n") == 2
    assert (
        T.parse(
            t9k(worker={k: v for k, v in random_walk()["spec"]["worker"].items() if k != "replicas"})
        ).worker_replicas
        == 1
    )
    assert errors_of(t9k(worker={**random_walk()["spec"]["worker"], "replicas": 0})) == [
        "spec.worker.replicas: must be >= 1, got 0"
    ]


def test_worker_extra_mpi_args() -> None:
    """extraMPIArgs come after the mca options and before cmd; `-N n` sets the hostfile's slots."""
    worker = {**random_walk()["spec"]["worker"], "extraMPIArgs": ["--npernode", "2", "-x", "A"]}
    job = T.parse(t9k(worker=worker))
    command = container(K.launcher_job(job, K.Options())["spec"]["template"])["command"]
    assert command[-8:] == ["--npernode", "2", "-x", "A", "./random_walk", "20", "40", "2"]
    assert job.slots_per_worker == 2
    assert errors_of(t9k(worker={**worker, "extraMPIArgs": ["-N", 3]})) == [
        "spec.worker.extraMPIArgs[1]: must be a string, got 3"
    ]


def test_worker_cmd() -> None:
    _, launcher = built(random_walk())
    assert container(launcher)["command"][-4:] == ["./random_walk", "20", "40", "2"]
    assert errors_of(t9k(worker={**random_walk()["spec"]["worker"], "cmd": "./a.out"})) == [
        "spec.worker.cmd: must be a list of strings, got str",
        "spec.worker.cmd: required: the program mpirun starts on the workers (unless runMode.debug is enabled)",
    ]


def test_worker_template() -> None:
    """The worker runs the template as written but for mpi-worker's command and args (ignored, as T9k documents:
    it runs sshd); other containers are kept; a template without mpi-worker is refused."""
    obj = random_walk()
    tmpl = obj["spec"]["worker"]["template"]
    tmpl["spec"]["containers"][0].update(command=["python"], args=["train.py"])
    tmpl["spec"]["containers"].append({"name": "sidecar", "image": "busybox", "command": ["sleep", "inf"]})
    worker, launcher = built(obj)
    assert container(worker)["command"] == ["/usr/sbin/sshd", "-De"] and "args" not in container(worker)
    assert "args" not in container(launcher)
    assert worker["spec"]["containers"][1] == {"name": "sidecar", "image": "busybox", "command": ["sleep", "inf"]}
    tmpl["spec"]["containers"][0]["name"] = "main"
    assert errors_of(obj) == [
        "spec.worker.template.spec.containers: must have a container named mpi-worker (MPI runs in it)"
    ]
    tmpl["spec"]["containers"][0].update(name="mpi-worker", resources={"limits": {"cpu": "lots"}})
    assert errors_of(obj) == [
        "spec.worker.template.spec.containers[0].resources.limits.cpu: must be a quantity (e.g. 500m, 2Gi), got 'lots'"
    ]
    tmpl["spec"]["containers"][0]["resources"] = {}
    tmpl["spec"]["restartPolicy"] = "Always"
    assert errors_of(obj) == [
        "spec.worker.template.spec.restartPolicy: unsupported value 'Always': supported values: Never, OnFailure"
    ]
    tmpl["spec"]["restartPolicy"] = "OnFailure"
    worker, launcher = built(obj)
    # The launcher's is always Never: mpirun runs once (T9k has no retries), and its failed pod keeps the log.
    assert worker["spec"]["restartPolicy"] == "OnFailure" and launcher["spec"]["restartPolicy"] == "Never"


def test_mca() -> None:
    """One `--mca k v` per entry, sorted by key, after the hostfile."""
    _, launcher = built(t9k(mca={"pml": "ob1", "btl": "^openib"}))
    assert container(launcher)["command"][3:9] == ["--mca", "btl", "^openib", "--mca", "pml", "ob1"]
    assert errors_of(t9k(mca={"btl": 1})) == ["spec.mca.btl: must be a string, got 1"]
    assert errors_of(t9k(mca=["btl"])) == ["spec.mca: must be an object, got list"]


def test_mpi_home() -> None:
    _, launcher = built(t9k(mpiHome="/opt/openmpi/"))
    assert container(launcher)["command"][:3] == ["/opt/openmpi/bin/mpirun", "--hostfile", "/etc/mpi/hostfile"]
    _, launcher = built(t9k(mpiHome=None))
    assert container(launcher)["command"][0] == "mpirun"  # no mpiHome: mpirun from the image's PATH
    assert errors_of(t9k(mpiHome="usr/local")) == ["spec.mpiHome: must be an absolute path, got 'usr/local'"]


def test_ssh() -> None:
    worker, _ = built(t9k(ssh=None))
    assert container(worker)["command"] == ["/usr/sbin/sshd", "-De"]
    assert errors_of(t9k(ssh="sshd")) == ["spec.ssh: must be an object, got str"]


def test_ssh_sshd_path() -> None:
    worker, _ = built(t9k(ssh={"sshdPath": "/opt/ssh/sbin/sshd"}))
    assert container(worker)["command"] == ["/opt/ssh/sbin/sshd", "-De"]
    assert errors_of(t9k(ssh={"sshdPath": "sshd"})) == ["spec.ssh.sshdPath: must be an absolute path, got 'sshd'"]


def test_run_policy() -> None:
    assert T.parse(t9k(runPolicy=None)).run_policy.clean_pod_policy == "None"
    assert errors_of(t9k(runPolicy=[])) == ["spec.runPolicy: must be an object, got list"]


def _finished(obj: dict):
    world = settle(obj)
    _, world = step(workers_ready(world), 10)
    world.pods.append(launcher_pod(world, "Succeeded"))
    return plan(world.mpijob, finish_launcher(world))


def test_run_policy_clean_up_workers() -> None:
    """true: the finished job's workers are deleted, the launcher's pod (its log is the outcome) stays."""
    deleted = [n for a, _k, n in kinds(_finished(random_walk())) if a == "delete"]
    assert deleted == [f"mpi-example-worker-{i}" for i in range(5)]
    assert [a for a in kinds(_finished(t9k(runPolicy={"cleanUpWorkers": False}))) if a[0] == "delete"] == []
    assert errors_of(t9k(runPolicy={"cleanUpWorkers": "yes"})) == [
        "spec.runPolicy.cleanUpWorkers: must be a boolean, got 'yes'"
    ]


def test_scheduler() -> None:
    assert T.parse(t9k(scheduler={})).run_policy.scheduling_policy is None  # the default scheduler
    assert errors_of(t9k(scheduler=1)) == ["spec.scheduler: must be an object, got int"]


def test_scheduler_t9k_scheduler() -> None:
    """No T9k Scheduler here: the job runs, and says so once, with a Warning event."""
    p = plan(t9k(scheduler={"t9kScheduler": {"queue": "default", "priority": 50}}))
    warnings = [a.body for a in p.actions if a.action == "event" and a.body["type"] == "Warning"]
    assert [w["reason"] for w in warnings] == ["FieldNotApplied"]
    assert "spec.scheduler.t9kScheduler: there is no T9k Scheduler here" in warnings[0]["message"]
    world = settle(t9k(scheduler={"t9kScheduler": {"queue": "default", "priority": 50}}))
    assert not [a for a in plan(world.mpijob, world).actions if a.action == "event"]


def test_scheduler_t9k_scheduler_queue() -> None:
    """The queue is the Volcano PodGroup's queue when the operator gang-schedules with Volcano."""
    p = plan(t9k(scheduler={"t9kScheduler": {"queue": "research"}}), opts=K.Options(gang_scheduling="volcano"))
    group = next(a.body for a in p.actions if a.kind == "PodGroup")
    assert group["spec"]["queue"] == "research" and group["spec"]["minMember"] == 5
    assert errors_of(t9k(scheduler={"t9kScheduler": {"queue": 1}})) == [
        "spec.scheduler.t9kScheduler.queue: must be a string, got 1"
    ]


def test_scheduler_t9k_scheduler_priority() -> None:
    """No equivalent: not applied, and the Warning says so."""
    p = plan(t9k(scheduler={"t9kScheduler": {"queue": "q", "priority": 50}}))
    message = next(a.body["message"] for a in p.actions if a.action == "event" and a.reason == "FieldNotApplied")
    assert "priority 50 has no equivalent and is not applied" in message
    worker = next(a.body for a in p.actions if a.kind == "Pod")
    assert "priority" not in worker["spec"] and "priorityClassName" not in worker["spec"]
    assert errors_of(t9k(scheduler={"t9kScheduler": {"priority": "high"}})) == [
        "spec.scheduler.t9kScheduler.priority: must be an integer, got 'high'"
    ]


def test_run_mode() -> None:
    assert not T.parse(t9k(runMode={})).suspended
    assert errors_of(t9k(runMode="debug")) == ["spec.runMode: must be an object, got str"]


def test_run_mode_debug() -> None:
    """Up, no training: the launcher runs `sleep inf`, the workers sshd -D; cmd is not needed."""
    worker_spec = {k: v for k, v in random_walk()["spec"]["worker"].items() if k != "cmd"}
    worker, launcher = built(t9k(worker=worker_spec, runMode={"debug": {"enabled": True}}))
    assert container(launcher)["command"] == ["sleep", "inf"]
    assert container(worker)["command"] == ["/usr/sbin/sshd", "-D"]
    assert errors_of(t9k(runMode={"debug": []})) == ["spec.runMode.debug: must be an object, got list"]


def test_run_mode_debug_enabled() -> None:
    _, launcher = built(
        t9k(runMode={"debug": {"enabled": False, "replicaSpecs": [{"type": "launcher", "command": ["bash"]}]}})
    )
    assert container(launcher)["command"][0] == "/usr/local/bin/mpirun"
    assert errors_of(t9k(runMode={"debug": {"enabled": "true"}})) == [
        "spec.runMode.debug.enabled: must be a boolean, got 'true'"
    ]


def _with_init(obj: dict) -> dict:
    obj["spec"]["worker"]["template"]["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    return obj


def test_run_mode_debug_replica_specs() -> None:
    """Per type: its command and skipInitContainer; types not listed keep the defaults."""
    obj = _with_init(
        t9k(
            runMode={
                "debug": {
                    "enabled": True,
                    "replicaSpecs": [{"type": "worker", "skipInitContainer": True, "command": ["sleep", "inf"]}],
                }
            }
        )
    )
    worker, launcher = built(obj)
    assert container(worker)["command"] == ["sleep", "inf"] and "initContainers" not in worker["spec"]
    assert container(launcher)["command"] == ["sleep", "inf"] and launcher["spec"]["initContainers"]
    assert errors_of(t9k(runMode={"debug": {"enabled": True, "replicaSpecs": {"type": "worker"}}})) == [
        "spec.runMode.debug.replicaSpecs: must be a list, got dict"
    ]


def test_run_mode_debug_replica_specs_type() -> None:
    assert errors_of(t9k(runMode={"debug": {"replicaSpecs": [{"type": "Worker"}]}})) == [
        "spec.runMode.debug.replicaSpecs[0].type: unsupported value 'Worker': supported values: launcher, worker"
    ]
    assert errors_of(t9k(runMode={"debug": {"replicaSpecs": [{"type": "worker"}, {"type": "worker"}]}})) == [
        "spec.runMode.debug.replicaSpecs[1].type: duplicate value 'worker'"
    ]


def test_run_mode_debug_replica_specs_skip_init_container() -> None:
    """Defaults to false: the init containers run."""
    obj = _with_init(t9k(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "worker"}]}}))
    worker, _ = built(obj)
    assert worker["spec"]["initContainers"] == [{"name": "fetch", "image": "busybox"}]
    assert errors_of(t9k(runMode={"debug": {"replicaSpecs": [{"type": "worker", "skipInitContainer": 1}]}})) == [
        "spec.runMode.debug.replicaSpecs[0].skipInitContainer: must be a boolean, got 1"
    ]


def test_run_mode_debug_replica_specs_command() -> None:
    _, launcher = built(
        t9k(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "launcher", "command": ["sleep", "3600"]}]}})
    )
    assert container(launcher)["command"] == ["sleep", "3600"]
    assert errors_of(t9k(runMode={"debug": {"replicaSpecs": [{"type": "launcher", "command": "sleep"}]}})) == [
        "spec.runMode.debug.replicaSpecs[0].command: must be a list of strings, got str"
    ]


def test_run_mode_pause() -> None:
    assert errors_of(t9k(runMode={"pause": True})) == ["spec.runMode.pause: must be an object, got bool"]


def test_run_mode_pause_enabled() -> None:
    """Paused: no replica is created (nor a launcher Job); a running job's replicas are deleted."""
    p = plan(t9k(runMode={"pause": {"enabled": True}}))
    assert [k for a, k, _n in kinds(p) if a == "create"] == ["Service", "ConfigMap", "Secret"]
    assert p.status["phase"] == "Paused"
    assert errors_of(t9k(runMode={"pause": {"enabled": 1}})) == ["spec.runMode.pause.enabled: must be a boolean, got 1"]


def _resumed(resume_specs: list) -> tuple[dict, dict]:
    """The worker pod and launcher Job made when a job paused at creation resumes."""
    obj = _with_init(t9k(runMode={"pause": {"enabled": True, "resumeSpecs": resume_specs}}))
    world = settle(obj)
    world.mpijob["spec"]["runMode"]["pause"]["enabled"] = False
    p, world = step(world, 10)
    worker = next(a.body for a in p.actions if a.kind == "Pod")
    assert p.status["phase"] == "Resuming"
    p, world = step(workers_ready(world), 20)
    return worker, next(a.body for a in p.actions if a.kind == "Job")["spec"]["template"]


def test_run_mode_pause_resume_specs() -> None:
    """Applied to the replicas made after a pause; types not listed run as before."""
    worker, launcher = _resumed([{"type": "worker", "command": ["/usr/bin/sshd"]}])
    assert container(worker)["command"] == ["/usr/bin/sshd"]
    assert container(launcher)["command"][0] == "/usr/local/bin/mpirun"
    worker, _ = _resumed([])
    assert container(worker)["command"] == ["/usr/sbin/sshd", "-De"]  # defaults: as before the pause
    assert errors_of(t9k(runMode={"pause": {"resumeSpecs": [1]}})) == [
        "spec.runMode.pause.resumeSpecs[0]: must be an object, got int"
    ]


def test_run_mode_pause_resume_specs_type() -> None:
    assert errors_of(t9k(runMode={"pause": {"resumeSpecs": [{"command": ["x"]}]}})) == [
        "spec.runMode.pause.resumeSpecs[0].type: unsupported value None: supported values: launcher, worker"
    ]


def test_run_mode_pause_resume_specs_skip_init_container() -> None:
    worker, launcher = _resumed([{"type": "launcher", "skipInitContainer": True}])
    assert "initContainers" not in launcher["spec"] and worker["spec"]["initContainers"]


def test_run_mode_pause_resume_specs_command() -> None:
    _, launcher = _resumed([{"type": "launcher", "command": ["/bin/sh", "-c"], "args": ["mpirun ./a.out"]}])
    assert (container(launcher)["command"], container(launcher)["args"]) == (["/bin/sh", "-c"], ["mpirun ./a.out"])


def test_run_mode_pause_resume_specs_args() -> None:
    worker, _ = _resumed([{"type": "worker", "args": ["-p", "2222"]}])
    assert (container(worker)["command"], container(worker)["args"]) == (["/usr/sbin/sshd", "-De"], ["-p", "2222"])
    assert errors_of(t9k(runMode={"pause": {"resumeSpecs": [{"type": "worker", "args": [1]}]}})) == [
        "spec.runMode.pause.resumeSpecs[0].args[0]: must be a string, got 1"
    ]


def _running():
    world = settle(random_walk())
    _, world = step(workers_ready(world), 10)
    world.pods.append(launcher_pod(world, "Running"))
    return step(world, 20)


def test_status_conditions() -> None:
    p, _ = _running()
    assert [(c["type"], c["status"]) for c in p.status["conditions"]] == [
        ("Initialized", "True"),
        ("Running", "True"),
        ("ReplicaFailure", "False"),
    ]


def test_status_phase() -> None:
    p, _ = _running()
    assert p.status["phase"] == "Running"
    assert T9S.phase({}) == "Pending"


def test_status_tasks() -> None:
    p, _ = _running()
    launcher, worker = p.status["tasks"]
    assert launcher == {
        "type": "launcher",
        "restartCount": 0,
        "status": [
            {"phase": "Running", "name": "mpi-example-launcher-abcde", "uid": "uid-launcher-pod", "containers": []}
        ],
    }
    assert [s["name"] for s in worker["status"]] == [f"mpi-example-worker-{i}" for i in range(5)]


def test_status_aggregate() -> None:
    p = plan(random_walk())
    assert p.status["aggregate"] == {
        "creating": 5,
        "pending": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "deleted": 0,
        "unknown": 0,
    }


def test_run_policy_failure_policy() -> None:
    """T9k's runPolicy.failurePolicy, every field; a failed launcher restarts the world and status says so in T9k's
    shape (Running False, its reason; restartCount, restarts)."""
    policy = {
        "maxRestarts": 1,
        "maxDisruptionRestarts": 3,
        "nodeLostSeconds": 30,
        "workerFailure": "RestartWorld",
        "rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "mpi-worker", "operator": "NotIn", "values": [1]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ],
    }
    obj = t9k(runPolicy={"failurePolicy": policy})
    fp = T.parse(obj).run_policy.failure_policy
    assert (fp.max_restarts, fp.max_disruption_restarts, fp.node_lost_seconds, len(fp.rules)) == (1, 3, 30, 2)
    world = settle(obj)
    world = workers_ready(world)
    world = settle(world.mpijob, world)
    pod = launcher_pod(world, "Failed")
    pod["status"]["containerStatuses"] = [{"name": "mpi-worker", "state": {"terminated": {"exitCode": 1}}}]
    world.pods.append(pod)
    p = plan(world.mpijob, world)
    st = p.status
    assert st["restartCount"] == 1 and st["restarts"] == {"program": 1, "disruption": 0}
    running = next(c for c in st["conditions"] if c["type"] == "Running")
    assert running["status"] == "False" and running["reason"] == "MPIJobProgramFailure" and st["phase"] == "Pending"
    assert {a.name for a in p.actions if a.action == "delete"} >= {"mpi-example-worker-0", "mpi-example-launcher"}


def test_status_record() -> None:
    """Ours: the record of the launcher pod a pause deletes (record.py), kept through the statuses after it."""
    world = settle(random_walk())
    _, world = step(workers_ready(world), 10)
    world.pods.append(launcher_pod(world, "Running"))
    _, world = step(world, 20)
    world.mpijob = t9k(runMode={"pause": {"enabled": True}}) | {"status": world.mpijob.get("status")}
    p, world = step(world, 30)
    assert kinds(p)[: kinds(p).index(("delete", "Job", "mpi-example-launcher"))][-1] == (
        "record",
        "ConfigMap",
        "mpi-example-record",
    )
    assert p.status["record"] == {
        "configMap": "mpi-example-record",
        "pods": 1,
        "lastUpdateTime": "2026-01-01T00:00:30Z",
    }
    p, _ = step(world, 40)
    assert p.status["record"]["configMap"] == "mpi-example-record"  # the next status keeps it


FIELDS = {
    "spec.worker": test_worker,
    "spec.worker.replicas": test_worker_replicas,
    "spec.worker.extraMPIArgs": test_worker_extra_mpi_args,
    "spec.worker.cmd": test_worker_cmd,
    "spec.worker.template": test_worker_template,
    "spec.mca": test_mca,
    "spec.mpiHome": test_mpi_home,
    "spec.ssh": test_ssh,
    "spec.ssh.sshdPath": test_ssh_sshd_path,
    "spec.runPolicy": test_run_policy,
    "spec.runPolicy.cleanUpWorkers": test_run_policy_clean_up_workers,
    **dict.fromkeys(failure_policy_fields("spec.runPolicy.failurePolicy", True), test_run_policy_failure_policy),
    "spec.scheduler": test_scheduler,
    "spec.scheduler.t9kScheduler": test_scheduler_t9k_scheduler,
    "spec.scheduler.t9kScheduler.queue": test_scheduler_t9k_scheduler_queue,
    "spec.scheduler.t9kScheduler.priority": test_scheduler_t9k_scheduler_priority,
    "spec.runMode": test_run_mode,
    "spec.runMode.debug": test_run_mode_debug,
    "spec.runMode.debug.enabled": test_run_mode_debug_enabled,
    "spec.runMode.debug.replicaSpecs": test_run_mode_debug_replica_specs,
    "spec.runMode.debug.replicaSpecs.type": test_run_mode_debug_replica_specs_type,
    "spec.runMode.debug.replicaSpecs.skipInitContainer": test_run_mode_debug_replica_specs_skip_init_container,
    "spec.runMode.debug.replicaSpecs.command": test_run_mode_debug_replica_specs_command,
    "spec.runMode.pause": test_run_mode_pause,
    "spec.runMode.pause.enabled": test_run_mode_pause_enabled,
    "spec.runMode.pause.resumeSpecs": test_run_mode_pause_resume_specs,
    "spec.runMode.pause.resumeSpecs.type": test_run_mode_pause_resume_specs_type,
    "spec.runMode.pause.resumeSpecs.skipInitContainer": test_run_mode_pause_resume_specs_skip_init_container,
    "spec.runMode.pause.resumeSpecs.command": test_run_mode_pause_resume_specs_command,
    "spec.runMode.pause.resumeSpecs.args": test_run_mode_pause_resume_specs_args,
    "status.conditions": test_status_conditions,
    "status.phase": test_status_phase,
    "status.tasks": test_status_tasks,
    "status.aggregate": test_status_aggregate,
    "status.restartCount": test_run_policy_failure_policy,
    "status.restarts": test_run_policy_failure_policy,
    "status.record": test_status_record,
}

# Every field T9k's documentation names (its examples and its field lists).
DOC_FIELDS = {
    "spec.worker.replicas",
    "spec.worker.extraMPIArgs",
    "spec.worker.cmd",
    "spec.worker.template",
    "spec.mca",
    "spec.mpiHome",
    "spec.ssh.sshdPath",
    "spec.runPolicy.cleanUpWorkers",
    "spec.scheduler.t9kScheduler",
    "spec.scheduler.t9kScheduler.queue",
    "spec.scheduler.t9kScheduler.priority",
    "spec.runMode.debug.enabled",
    "spec.runMode.debug.replicaSpecs",
    "spec.runMode.debug.replicaSpecs.type",
    "spec.runMode.debug.replicaSpecs.skipInitContainer",
    "spec.runMode.debug.replicaSpecs.command",
    "spec.runMode.pause.enabled",
    "spec.runMode.pause.resumeSpecs",
    "spec.runMode.pause.resumeSpecs.type",
    "spec.runMode.pause.resumeSpecs.skipInitContainer",
    "spec.runMode.pause.resumeSpecs.command",
    "spec.runMode.pause.resumeSpecs.args",
    "status.conditions",
    "status.phase",
    "status.tasks",
    "status.aggregate",
}


def _crd_fields(schema: dict, path: str):
    """Field paths of an openAPIV3Schema (array items under their list's path); the pod template is Kubernetes'."""
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema = schema["items"]
    for key, sub in (schema.get("properties") or {}).items():
        yield f"{path}.{key}"
        if key != "template":
            yield from _crd_fields(sub, f"{path}.{key}")


def test_every_field_is_covered() -> None:
    assert all(callable(t) and t.__module__ == __name__ for t in FIELDS.values())
    assert set(FIELDS) >= DOC_FIELDS
    if CRD.exists():
        crd = yaml.safe_load(CRD.read_text())
        for version in crd["spec"]["versions"]:
            props = version["schema"]["openAPIV3Schema"]["properties"]
            fields = set(_crd_fields(props["spec"], "spec"))
            fields |= {f"status.{k}" for k in (props.get("status") or {}).get("properties") or {}}
            assert fields <= set(FIELDS), f"{version['name']}: untested fields {sorted(fields - set(FIELDS))}"
    module = sys.modules[__name__]
    assert all(getattr(module, t.__name__) is t for t in FIELDS.values())
