"""Every spec field of the reference (mpi-operators-compared.md §1.2, §1.13) and of the CRD has an effect tested here.

FIELDS maps each field to the test that shows its effect; test_every_field_is_covered fails when the CRD
grows a field nobody tests.
"""

from __future__ import annotations

import sys

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import podgroup as PG
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import spec
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow
from tests.support.paths import ROOT

from ._helpers import at, failure_policy_fields, kinds, manifest, plan

CRD = ROOT / "roles" / "crds" / "files" / "mpijobs.kubeflow.org.yaml"


def build(obj: dict, opts: K.Options | None = None) -> tuple[spec.MPIJob, dict, dict]:
    """(model, worker-0 pod, launcher Job)."""
    opts = opts or K.Options()
    job = kubeflow.parse(obj)
    worker = K.worker_pod(job, 0, opts) if job.worker_replicas else {}
    return job, worker, K.launcher_job(job, opts)


def env(pod_spec: dict) -> dict:
    return {e["name"]: e.get("value") for e in pod_spec["containers"][0].get("env", [])}


def test_slots_per_worker() -> None:
    job, _, launcher = build(manifest(slotsPerWorker=8))
    assert K.hostfile(job, K.Options()).endswith("slots=8\n")
    assert env(launcher["spec"]["template"]["spec"])["OMPI_MCA_orte_set_default_slots"] == "8"


def test_run_launcher_as_worker() -> None:
    job, worker, launcher = build(manifest(runLauncherAsWorker=True))
    assert K.hostfile(job, K.Options()).startswith("pi-launcher.pi.ns.svc slots=1\n")
    assert worker["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"
    assert launcher["spec"]["template"]["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "0"
    assert "NVIDIA_VISIBLE_DEVICES" not in env(launcher["spec"]["template"]["spec"])
    assert K.service(job)["spec"]["publishNotReadyAddresses"] is True


def test_ssh_auth_mount_path() -> None:
    _, worker, launcher = build(manifest(sshAuthMountPath="/home/mpiuser/.ssh"))
    for pod_spec in (worker["spec"], launcher["spec"]["template"]["spec"]):
        assert {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"} in pod_spec["containers"][0]["volumeMounts"]


def test_launcher_creation_policy() -> None:
    assert ("create", "Job", "pi-launcher") not in kinds(plan(manifest(launcherCreationPolicy="WaitForWorkersReady")))
    assert ("create", "Job", "pi-launcher") in kinds(plan(manifest(launcherCreationPolicy="AtStartup")))


@pytest.mark.parametrize(
    ("impl", "var"),
    [("OpenMPI", "OMPI_MCA_orte_default_hostfile"), ("Intel", "I_MPI_HYDRA_HOST_FILE"), ("MPICH", "HYDRA_HOST_FILE")],
)
def test_mpi_implementation(impl: str, var: str) -> None:
    _, _, launcher = build(manifest(mpiImplementation=impl))
    assert env(launcher["spec"]["template"]["spec"])[var] == "/etc/mpi/hostfile"


def test_main_container() -> None:
    obj = manifest(mainContainer="mpi")
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].append({"name": "mpi", "image": "x"})
    _, worker, _ = build(obj)
    assert "env" not in worker["spec"]["containers"][0] and env({"containers": worker["spec"]["containers"][1:]})


def test_clean_pod_policy_legacy_top_level() -> None:
    assert kubeflow.parse(manifest(cleanPodPolicy="All")).run_policy.clean_pod_policy == "All"


def test_run_policy_clean_pod_policy() -> None:
    assert kubeflow.parse(manifest(runPolicy={"cleanPodPolicy": "Running"})).run_policy.clean_pod_policy == "Running"
    # the effect on pods is covered by test_plan.test_clean_pod_policy_*


def test_run_policy_job_limits() -> None:
    _, _, launcher = build(
        manifest(runPolicy={"backoffLimit": 2, "activeDeadlineSeconds": 30, "ttlSecondsAfterFinished": 5})
    )
    assert (
        launcher["spec"]["backoffLimit"],
        launcher["spec"]["activeDeadlineSeconds"],
        launcher["spec"]["ttlSecondsAfterFinished"],
    ) == (2, 30, 5)


def test_run_policy_suspend() -> None:
    _, _, launcher = build(manifest(runPolicy={"suspend": True}))
    assert launcher["spec"]["suspend"] is True


def test_run_policy_managed_by() -> None:
    assert plan(manifest(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})).actions == []
    assert plan(manifest(runPolicy={"managedBy": "kubeflow.org/mpi-operator"})).actions


def test_scheduling_policy() -> None:
    obj = manifest(
        runPolicy={
            "schedulingPolicy": {
                "minAvailable": 2,
                "queue": "q",
                "priorityClass": "pc",
                "minResources": {"cpu": "3"},
                "scheduleTimeoutSeconds": 9,
            }
        }
    )
    job = kubeflow.parse(obj)
    volcano = PG.pod_group(job, K.Options(gang_scheduling="volcano"))
    plugins = PG.pod_group(job, K.Options(gang_scheduling="sched"))
    assert volcano["spec"] == {"minMember": 2, "queue": "q", "priorityClassName": "pc", "minResources": {"cpu": "3"}}
    assert plugins["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 9, "minResources": {"cpu": "3"}}


def test_replica_specs() -> None:
    obj = manifest(workers=3)
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {"gpu": "yes"}
    job, worker, _ = build(obj)
    assert job.worker_replicas == 3 and K.hostfile(job, K.Options()).count("\n") == 3
    assert worker["spec"]["restartPolicy"] == "OnFailure" and worker["spec"]["nodeSelector"] == {"gpu": "yes"}


def test_run_policy_ttl_deletes_the_mpijob() -> None:
    obj = manifest(runPolicy={"ttlSecondsAfterFinished": 0})
    obj["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}], "completionTime": "2026-01-01T00:00:00Z"}
    assert kinds(plan(obj, now=at(1)))[-1] == ("delete-mpijob", "MPIJob", "pi")


def test_run_policy_failure_policy() -> None:
    """Every field of the policy is read; a worker's failure restarts the world (test_restart.py: the rest)."""
    policy = {
        "maxRestarts": 2,
        "maxDisruptionRestarts": 3,
        "nodeLostSeconds": 30,
        "workerFailure": "RestartWorld",
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}],
    }
    fp = kubeflow.parse(manifest(runPolicy={"failurePolicy": policy})).run_policy.failure_policy
    assert (fp.max_restarts, fp.max_disruption_restarts, fp.node_lost_seconds, fp.worker_failure) == (
        2,
        3,
        30,
        "RestartWorld",
    )
    assert fp.rules == (spec.FailureRule("FailJob", spec.ExitCodes("In", (42,))),)
    _, _, launcher = build(manifest(runPolicy={"failurePolicy": policy}))
    assert launcher["spec"]["backoffLimit"] == 0 and launcher["metadata"]["labels"]["mpi.operator/attempt"] == "0"


FIELDS = {
    "spec.slotsPerWorker": test_slots_per_worker,
    "spec.runLauncherAsWorker": test_run_launcher_as_worker,
    "spec.sshAuthMountPath": test_ssh_auth_mount_path,
    "spec.launcherCreationPolicy": test_launcher_creation_policy,
    "spec.mpiImplementation": test_mpi_implementation,
    "spec.mainContainer": test_main_container,
    "spec.cleanPodPolicy": test_clean_pod_policy_legacy_top_level,
    "spec.runPolicy": test_run_policy_job_limits,
    "spec.runPolicy.cleanPodPolicy": test_run_policy_clean_pod_policy,
    "spec.runPolicy.ttlSecondsAfterFinished": test_run_policy_ttl_deletes_the_mpijob,
    "spec.runPolicy.activeDeadlineSeconds": test_run_policy_job_limits,
    "spec.runPolicy.backoffLimit": test_run_policy_job_limits,
    "spec.runPolicy.suspend": test_run_policy_suspend,
    "spec.runPolicy.managedBy": test_run_policy_managed_by,
    **dict.fromkeys(failure_policy_fields("spec.runPolicy.failurePolicy", False), test_run_policy_failure_policy),
    "spec.runPolicy.schedulingPolicy": test_scheduling_policy,
    "spec.runPolicy.schedulingPolicy.minAvailable": test_scheduling_policy,
    "spec.runPolicy.schedulingPolicy.queue": test_scheduling_policy,
    "spec.runPolicy.schedulingPolicy.minResources": test_scheduling_policy,
    "spec.runPolicy.schedulingPolicy.priorityClass": test_scheduling_policy,
    "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds": test_scheduling_policy,
    "spec.mpiReplicaSpecs": test_replica_specs,
    "spec.mpiReplicaSpecs.*.replicas": test_replica_specs,
    "spec.mpiReplicaSpecs.*.restartPolicy": test_replica_specs,
    "spec.mpiReplicaSpecs.*.template": test_replica_specs,
}


def _crd_fields(schema: dict, path: str):
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if not props and isinstance(extra, dict) and extra.get("properties"):
        yield from _crd_fields(extra, path + ".*")
        return
    for key, sub in props.items():
        yield f"{path}.{key}"
        if key != "template":  # the pod template is Kubernetes' schema, passed through
            yield from _crd_fields(sub, f"{path}.{key}")


def test_every_field_is_covered() -> None:
    assert all(callable(t) and t.__module__ == __name__ for t in FIELDS.values())
    if CRD.exists():
        crd = yaml.safe_load(CRD.read_text())
        for version in crd["spec"]["versions"]:
            fields = set(_crd_fields(version["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec"))
            assert fields <= set(FIELDS), f"{version['name']}: untested fields {sorted(fields - set(FIELDS))}"
    module = sys.modules[__name__]
    assert all(getattr(module, t.__name__) is t for t in FIELDS.values())
