"""batch.test.bdap.com/v1 through the shared core: its README's example manifest, copied as is, reconciled from
creation to success, with golden children and status; every field of its CRD has a test here (FIELDS)."""

from __future__ import annotations

import copy

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import api_for, bdap
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import InvalidMPIJob
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Outcome
from tests.support.paths import ROOT

from ._bdap import NAME, NS, example, launcher, lifecycle, ready_workers, settle
from ._helpers import assert_golden, at, kinds, malformed, plan, set_phase, world_after

CRD = ROOT / "roles" / "crds" / "files" / "mpijobs.batch.test.bdap.com.yaml"


def test_readme_example_is_served_by_this_api() -> None:
    assert api_for(example()) is bdap.API
    assert bdap.API.api_version == "batch.test.bdap.com/v1"


def test_readme_example_children_and_status_match_golden() -> None:
    """What each step creates and the status it writes, for the README's example as written."""
    docs = []
    for step, p, _ in lifecycle():
        docs.append(
            {
                "step": step,
                "actions": [
                    {
                        "action": a.action,
                        "kind": a.kind,
                        "name": a.name,
                        **({"body": a.body} if a.action == "create" else {}),
                    }
                    for a in p.actions
                    if a.action != "event"
                ],
                "status": p.status,
            }
        )
    assert_golden("bdap_simple_train_cpu", docs)


def test_launcher_waits_until_every_worker_is_ready() -> None:
    world = settle(P.World(mpijob=example()))
    assert [a for a in kinds(plan(world.mpijob, world)) if a[2] == f"{NAME}-launcher"] == []
    world.pods = [set_phase(p, "Running", ready=i < 4) for i, p in enumerate(world.pods)]
    assert [a for a in kinds(plan(world.mpijob, world, now=at(20))) if a[2] == f"{NAME}-launcher"] == []
    world = ready_workers(world)
    # a Pod, not a Job: `kubectl logs simple-train-cpu-launcher` (the README) reads it
    assert ("create", "Pod", f"{NAME}-launcher") in kinds(plan(world.mpijob, world, now=at(30)))


def test_status_phases_and_launcher_name() -> None:
    phases = [
        (step, p.status["phase"], p.status.get("readyWorkers"), p.status.get("launcher")) for step, p, _ in lifecycle()
    ]
    assert phases == [
        ("created", "Pending", 0, None),
        ("workers-ready", "Pending", 5, None),
        ("running", "Running", 5, f"{NAME}-launcher"),
        ("succeeded", "Succeeded", 5, f"{NAME}-launcher"),
    ]
    final = lifecycle()[-1][1].status
    assert final["completionTime"] == "2026-01-01T00:05:00Z" and final["startTime"] == "2026-01-01T00:00:00Z"
    assert [(c["type"], c["status"]) for c in final["conditions"]] == [
        ("Created", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
    assert set(final) <= {"phase", "readyWorkers", "launcher", "selector", "conditions", "startTime", "completionTime"}


def test_status_selector_selects_the_workers_alone() -> None:
    """status.selector is the scale subresource's labelSelectorPath (an HPA or `kubectl get --subresource=scale`)."""
    _, p, world = lifecycle()[2]
    selector = dict(term.split("=") for term in p.status["selector"].split(","))
    chosen = sorted(
        pod["metadata"]["name"]
        for pod in world.pods
        if selector.items() <= (pod["metadata"].get("labels") or {}).items()
    )
    assert chosen == [f"{NAME}-worker-{i}" for i in range(5)]
    assert f"{NAME}-launcher" in [pod["metadata"]["name"] for pod in world.pods]


def test_finished_job_is_settled_and_keeps_its_pods() -> None:
    """The original never deleted pods: the user deletes the job (and the children go with it)."""
    _, p, world = lifecycle()[-1]
    assert p.finished and not [a for a in p.actions if a.action == "delete"]
    assert plan(world.mpijob, world, now=at(400)).actions == []


def test_launcher_failure_fails_the_job() -> None:
    *_, (_, _, world) = lifecycle()[:3]
    p = plan(world.mpijob, world := launcher(world, "Failed", exit_code=2), now=at(100))
    assert p.status["phase"] == "Failed" and p.finished
    failed = S.get_condition(p.status, "Failed")
    assert failed["reason"] == "PodFailed" and failed["message"] == "launcher container exited with code 2"
    assert p.status["completionTime"] == "2026-01-01T00:01:40Z"


def test_reconcile_is_idempotent() -> None:
    world = settle(P.World(mpijob=example()))
    again = plan(world.mpijob, world, now=at(5))
    assert again.actions == [] and again.status == world.mpijob["status"]


def launcher_env(actions: list[P.Action]) -> dict:
    pod = next(a.body for a in actions if a.name == f"{NAME}-launcher" and a.action == "create")
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}


# ---- one test per spec field (FIELDS) --------------------------------------------------------------------------


def test_num_workers() -> None:
    p = plan(example())
    assert [a.name for a in p.actions if a.kind == "Pod"] == [f"{NAME}-worker-{i}" for i in range(5)]
    cm = next(a.body for a in p.actions if a.kind == "ConfigMap")
    assert cm["data"]["hostfile"].splitlines() == [f"{NAME}-worker-{i}.{NAME}.{NS}.svc slots=1" for i in range(5)]
    obj = example()
    obj["spec"]["numWorkers"] = 2
    world = settle(P.World(mpijob=example()))
    world.mpijob = {**obj, "status": world.mpijob["status"]}
    deleted = [a.name for a in plan(world.mpijob, world, now=at(9)).actions if a.action == "delete"]
    assert deleted == [f"{NAME}-worker-4", f"{NAME}-worker-3", f"{NAME}-worker-2"]


def test_launcher_template() -> None:
    *_, (_, p, _) = lifecycle()[:2]
    env = launcher_env(p.actions)
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"  # what the README's command reads
    body = next(a.body for a in p.actions if a.name == f"{NAME}-launcher")
    assert (body["kind"], body["metadata"]["name"]) == ("Pod", f"{NAME}-launcher")
    pod = body["spec"]
    assert (
        pod["containers"][0]["name"] == "horovod-master"
        and pod["containers"][0]["image"] == "farawaya/horovod-torch-cpu"
    )
    assert pod["containers"][0]["command"] == ["/bin/sh", "-c"]
    assert pod["restartPolicy"] == "Never"  # as the README writes it: one try, as the original's bare pod


def test_worker_template() -> None:
    pod = next(a.body for a in plan(example()).actions if a.kind == "Pod")
    container = pod["spec"]["containers"][0]
    assert container["name"] == "horovod-worker" and container["readinessProbe"]["exec"]["command"] == [
        "cat",
        "/ready.txt",
    ]
    assert (
        pod["spec"]["restartPolicy"] == "OnFailure"
    )  # unset in the README: a Pod's Always, as close as a job's pod gets
    test_editing_the_worker_template_rolls_the_workers_one_by_one()


def test_editing_the_worker_template_rolls_the_workers_one_by_one() -> None:
    """The original's README: "If the Worker is modified ... It will be automatically updated" (its workers were a
    StatefulSet). A worker is replaced only while every other one is Ready."""
    world = settle(ready_workers(settle(P.World(mpijob=example()))))
    edited = copy.deepcopy(world.mpijob)
    edited["spec"]["workerTemplate"]["spec"]["containers"][0]["image"] = "horovod-torch-cpu:local"
    world.mpijob = edited

    def deletes(p: P.Plan) -> list[str]:
        return [a.name for a in p.actions if a.action == "delete"]

    p = plan(world.mpijob, world, now=at(60))
    assert deletes(p) == [f"{NAME}-worker-0"] and p.actions[0].reason == "worker template changed"
    world = world_after(world, p)
    p = plan(world.mpijob, world, now=at(61))
    created = [a.body for a in p.actions if a.action == "create"]
    assert [c["metadata"]["name"] for c in created] == [f"{NAME}-worker-0"] and deletes(p) == []
    assert created[0]["spec"]["containers"][0]["image"] == "horovod-torch-cpu:local"
    world = world_after(world, p)
    assert deletes(plan(world.mpijob, world, now=at(62))) == []  # the new worker-0 is not Ready yet
    world.pods = [
        set_phase(q, "Running", ready=True) if q["metadata"]["name"] == f"{NAME}-worker-0" else q for q in world.pods
    ]
    assert deletes(plan(world.mpijob, world, now=at(63))) == [f"{NAME}-worker-1"]


def test_failure_policy() -> None:
    """Ours, at this API's top: spec.failurePolicy; its errors are named there."""
    obj = example()
    obj["spec"]["failurePolicy"] = {
        "maxRestarts": 2,
        "rules": [{"action": "Count", "onPodConditions": [{"type": "X"}]}],
    }
    job = bdap.parse(obj)
    assert job.run_policy.failure_policy.max_restarts == 2
    assert K.worker_pod(job, 0, K.Options())["spec"]["restartPolicy"] == "Never"
    obj["spec"]["failurePolicy"]["rules"][0]["action"] = "Retry"
    with pytest.raises(InvalidMPIJob) as info:
        bdap.parse(obj)
    assert str(info.value.errors[0]).startswith("spec.failurePolicy.rules[0].action: unsupported value 'Retry'")


FIELDS = {
    "spec.failurePolicy": test_failure_policy,
    "spec.numWorkers": test_num_workers,
    "spec.launcherTemplate": test_launcher_template,
    "spec.workerTemplate": test_worker_template,
}


def test_every_field_is_covered() -> None:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert {f"spec.{k}" for k in spec} == set(FIELDS)


# ---- errors name this API's fields --------------------------------------------------------------------------------


def _errors(mutate) -> list[str]:
    obj = example()
    mutate(obj["spec"])
    with pytest.raises(InvalidMPIJob) as info:
        bdap.parse(obj)
    return [str(e) for e in info.value.errors]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s.pop("numWorkers"), "spec.numWorkers: required"),
        (lambda s: s.update(numWorkers=0), "spec.numWorkers: must be >= 1"),
        (lambda s: s.update(numWorkers="5"), "spec.numWorkers: must be an integer, got '5'"),
        (lambda s: s.pop("launcherTemplate"), "spec.launcherTemplate: required"),
        (lambda s: s.pop("workerTemplate"), "spec.workerTemplate: required"),
        (
            lambda s: s["workerTemplate"]["spec"].update(containers=[]),
            "spec.workerTemplate.spec.containers: must define at least one container",
        ),
        (
            lambda s: s["launcherTemplate"]["spec"]["containers"][0].update(env={}),
            "spec.launcherTemplate.spec.containers[0].env: must be a list",
        ),
    ],
)
def test_errors_name_this_apis_fields(mutate, expected: str) -> None:
    assert expected in _errors(mutate)


def test_invalid_job_is_failed_with_this_apis_status() -> None:
    obj = example()
    obj["spec"]["numWorkers"] = 0
    p = plan(obj)
    assert p.status["phase"] == "Failed" and p.finished
    assert S.get_condition(p.status, "Failed")["message"] == "Found validation errors: spec.numWorkers: must be >= 1"
    assert set(p.status) == {"phase", "conditions"}


def test_launcher_always_restart_policy_becomes_on_failure() -> None:
    """A bare pod's Always would rerun a finished launcher forever; a job's launcher restarts only on failure."""
    obj = example()
    obj["spec"]["launcherTemplate"]["spec"]["restartPolicy"] = "Always"
    job = bdap.parse(obj)
    assert job.launcher.restart_policy == "OnFailure"


def test_parse_does_not_change_the_object() -> None:
    obj = example()
    before = copy.deepcopy(obj)
    bdap.parse(obj)
    assert obj == before


def test_children_are_owned_by_the_bdap_job() -> None:
    """Deleting the job deletes everything: the garbage collector follows these references."""
    refs = [a.body["metadata"]["ownerReferences"][0] for a in plan(example()).actions if a.action == "create"]
    assert {(r["apiVersion"], r["kind"], r["uid"]) for r in refs} == {("batch.test.bdap.com/v1", "MPIJob", "uid-bdap")}


@pytest.mark.parametrize("opts", [K.Options(), K.Options(gang_scheduling="volcano")], ids=["plain", "gang"])
def test_reconcile_never_crashes_on_malformed_bdap_objects(opts: K.Options) -> None:
    """Any field of the README's example replaced by any JSON value yields a plan (a Failed condition naming the field
    at worst), and every error names a field of this API, never one of the kubeflow.org job it is read as."""
    for path, obj in malformed(example()):
        try:
            bdap.parse(obj)
        except InvalidMPIJob as exc:
            assert all(e.path and "mpiReplicaSpecs" not in e.path for e in exc.errors), exc.errors
        result = plan(obj, opts=opts)
        assert result.status is not None
        assert result.status.get("phase") in ("Pending", "Running", "Succeeded", "Failed") or path[0] in (
            "apiVersion",
            "kind",
        )


# ---- the kubectl exec transport (the original's kubexec.sh): workers need no sshd ------------------------------------


def launcher_spec(opts: K.Options | None = None) -> dict:
    """The launcher pod the plan creates once the workers are Ready."""
    world = ready_workers(settle(P.World(mpijob=example())))
    p = plan(world.mpijob, world, opts=opts)
    (pod,) = [a.body for a in p.actions if a.action == "create" and a.kind == "Pod" and a.name == f"{NAME}-launcher"]
    return pod["spec"]


def test_the_launcher_starts_mpi_with_kubectl_exec_under_its_own_service_account() -> None:
    first = plan(example())
    created = [(a.kind, a.name) for a in first.actions if a.action == "create"]
    assert [k for k in created if k[0] in ("ServiceAccount", "Role", "RoleBinding")] == [
        ("ServiceAccount", f"{NAME}-launcher"),
        ("Role", f"{NAME}-launcher"),
        ("RoleBinding", f"{NAME}-launcher"),
    ]
    role = next(a.body for a in first.actions if a.kind == "Role")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]},
    ]
    script = next(a.body for a in first.actions if a.kind == "ConfigMap")["data"]["kubexec.sh"]
    assert 'exec kubectl exec "$host" --container horovod-worker -- /bin/sh -c "$*"' in script
    assert "host=${1%%.*}" in script  # the hostfile's FQDN cut to the pod name
    spec = launcher_spec()
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert env["OMPI_MCA_plm_rsh_agent"] == env["PRTE_MCA_plm_ssh_agent"] == "/etc/mpi/kubexec.sh"
    assert spec["serviceAccountName"] == f"{NAME}-launcher" and "initContainers" not in spec
    items = next(v for v in spec["volumes"] if v["name"] == "mpi-job-config")["configMap"]["items"]
    assert {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555} in items


def test_a_kubectl_delivery_image_puts_kubectl_in_opt_kube() -> None:
    opts = K.Options(kubectl_delivery_image="localhost/kubectl-delivery:1")
    spec = launcher_spec(opts)
    (init,) = spec["initContainers"]
    assert init["image"] == "localhost/kubectl-delivery:1" and init["args"] == ["/opt/kube"]
    assert {"name": "mpi-kubectl", "mountPath": "/opt/kube"} in spec["containers"][0]["volumeMounts"]
    script = next(a.body for a in plan(example(), opts=opts).actions if a.kind == "ConfigMap")["data"]["kubexec.sh"]
    assert "exec /opt/kube/kubectl exec" in script


def test_existing_launcher_rbac_is_not_created_again_and_a_foreign_one_is_refused() -> None:
    world = settle(P.World(mpijob=example()))
    assert set(world.launcher_rbac) == {"ServiceAccount", "Role", "RoleBinding"}
    assert not [a for a in plan(world.mpijob, world).actions if a.kind in world.launcher_rbac]
    foreign = copy.deepcopy(world)
    foreign.launcher_rbac["Role"]["metadata"]["ownerReferences"] = []
    p = plan(foreign.mpijob, foreign)
    assert p.outcome is Outcome.RETRY and "Role" in (p.error or "")


def test_kubeflow_jobs_keep_ssh() -> None:
    obj = example()
    kubeflow = bdap.as_kubeflow(obj)
    p = plan(kubeflow)
    assert not [a for a in p.actions if a.kind in ("ServiceAccount", "Role", "RoleBinding")]
    assert "kubexec.sh" not in next(a.body for a in p.actions if a.kind == "ConfigMap")["data"]
