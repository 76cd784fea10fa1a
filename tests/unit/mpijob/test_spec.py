"""Parsing, defaulting and validation of v2beta1 and v1 MPIJobs; every error names its field."""

from __future__ import annotations

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import InvalidMPIJob

from ._helpers import malformed, manifest, plan


def errors_of(obj: dict) -> list[str]:
    with pytest.raises(InvalidMPIJob) as info:
        kubeflow.parse(obj)
    return [str(e) for e in info.value.errors]


def test_defaults_are_kubeflows() -> None:
    job = kubeflow.parse(manifest())
    assert job.slots_per_worker == 1
    assert job.ssh_auth_mount_path == "/root/.ssh"
    assert job.mpi_implementation == "OpenMPI"
    assert job.launcher_creation_policy == "AtStartup"
    assert job.run_policy.clean_pod_policy == "None"
    assert job.launcher.restart_policy == "OnFailure" and job.launcher.replicas == 1
    assert job.worker.restart_policy == "Never"
    assert job.run_launcher_as_worker is False and job.suspended is False


def test_model_is_immutable() -> None:
    job = kubeflow.parse(manifest())
    with pytest.raises(AttributeError):
        job.slots_per_worker = 3  # type: ignore[misc]


def test_worker_spec_without_replicas_is_rejected_in_v2beta1_and_defaults_to_one_in_v1() -> None:
    obj = manifest()
    del obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    assert errors_of(obj) == ["spec.mpiReplicaSpecs.Worker.replicas: must be >= 1"]
    obj["apiVersion"] = "kubeflow.org/v1"
    assert kubeflow.parse(obj).worker_replicas == 1


def test_missing_worker_spec_means_no_workers() -> None:
    assert kubeflow.parse(manifest(workers=None, runLauncherAsWorker=True)).worker_replicas == 0


def test_v1_legacy_fields() -> None:
    obj = manifest(cleanPodPolicy="All", mainContainer="mpi")
    obj["apiVersion"] = "kubeflow.org/v1"
    job = kubeflow.parse(obj)
    assert job.run_policy.clean_pod_policy == "All" and job.main_container == "mpi"
    obj["spec"]["runPolicy"] = {"cleanPodPolicy": "Running"}
    assert kubeflow.parse(obj).run_policy.clean_pod_policy == "Running"  # runPolicy wins


def test_legacy_fields_are_read_from_v2beta1_too() -> None:
    assert kubeflow.parse(manifest(cleanPodPolicy="Running")).run_policy.clean_pod_policy == "Running"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda s: s["mpiReplicaSpecs"]["Worker"].update(replicas=0),
            "spec.mpiReplicaSpecs.Worker.replicas: must be >= 1",
        ),
        (
            lambda s: s["mpiReplicaSpecs"]["Worker"].update(replicas="two"),
            "spec.mpiReplicaSpecs.Worker.replicas: must be an integer, got 'two'",
        ),
        (
            lambda s: s["mpiReplicaSpecs"]["Launcher"].update(replicas=2),
            "spec.mpiReplicaSpecs.Launcher.replicas: must be 1, got 2",
        ),
        (lambda s: s["mpiReplicaSpecs"].pop("Launcher"), "spec.mpiReplicaSpecs.Launcher: required"),
        (lambda s: s.pop("mpiReplicaSpecs"), "spec.mpiReplicaSpecs: required"),
        (lambda s: s["mpiReplicaSpecs"].update(PS={}), "spec.mpiReplicaSpecs.PS: unsupported replica type"),
        (
            lambda s: s["mpiReplicaSpecs"]["Worker"].update(restartPolicy="ExitCode"),
            "spec.mpiReplicaSpecs.Worker.restartPolicy: unsupported value 'ExitCode'",
        ),
        (
            lambda s: s["mpiReplicaSpecs"]["Launcher"]["template"]["spec"].update(containers=[]),
            "spec.mpiReplicaSpecs.Launcher.template.spec.containers: must define at least one container",
        ),
        (
            lambda s: s["mpiReplicaSpecs"]["Worker"].update(template="nope"),
            "spec.mpiReplicaSpecs.Worker.template: must be an object, got str",
        ),
        (lambda s: s.update(slotsPerWorker=-1), "spec.slotsPerWorker: must be >= 0, got -1"),
        (lambda s: s.update(slotsPerWorker=True), "spec.slotsPerWorker: must be an integer, got True"),
        (lambda s: s.update(runLauncherAsWorker="yes"), "spec.runLauncherAsWorker: must be a boolean, got 'yes'"),
        (lambda s: s.update(sshAuthMountPath=5), "spec.sshAuthMountPath: must be a string, got 5"),
        (lambda s: s.update(mpiImplementation="MVAPICH"), "spec.mpiImplementation: unsupported value 'MVAPICH'"),
        (lambda s: s.update(launcherCreationPolicy="Later"), "spec.launcherCreationPolicy: unsupported value 'Later'"),
        (
            lambda s: s.update(runPolicy={"cleanPodPolicy": "Some"}),
            "spec.runPolicy.cleanPodPolicy: unsupported value 'Some'",
        ),
        (lambda s: s.update(cleanPodPolicy="Some"), "spec.cleanPodPolicy: unsupported value 'Some'"),
        (
            lambda s: s.update(runPolicy={"ttlSecondsAfterFinished": -5}),
            "spec.runPolicy.ttlSecondsAfterFinished: must be >= 0, got -5",
        ),
        (
            lambda s: s.update(runPolicy={"activeDeadlineSeconds": -1}),
            "spec.runPolicy.activeDeadlineSeconds: must be >= 0",
        ),
        (lambda s: s.update(runPolicy={"backoffLimit": -1}), "spec.runPolicy.backoffLimit: must be >= 0"),
        (lambda s: s.update(runPolicy={"suspend": "true"}), "spec.runPolicy.suspend: must be a boolean"),
        (lambda s: s.update(runPolicy={"managedBy": "me"}), "spec.runPolicy.managedBy: unsupported value 'me'"),
        (
            lambda s: s.update(runPolicy={"schedulingPolicy": {"minAvailable": -1}}),
            "spec.runPolicy.schedulingPolicy.minAvailable: must be >= 0",
        ),
        (
            lambda s: s.update(runPolicy={"schedulingPolicy": {"minResources": {"cpu": "lots"}}}),
            "spec.runPolicy.schedulingPolicy.minResources.cpu: must be a quantity",
        ),
        (
            lambda s: s.update(runPolicy={"schedulingPolicy": {"scheduleTimeoutSeconds": "1m"}}),
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: must be an integer",
        ),
        (
            lambda s: s.update(runPolicy={"schedulingPolicy": {"queue": 3}}),
            "spec.runPolicy.schedulingPolicy.queue: must be a string",
        ),
        (
            lambda s: s.update(runPolicy={"schedulingPolicy": {"priorityClass": []}}),
            "spec.runPolicy.schedulingPolicy.priorityClass: must be a string",
        ),
        (lambda s: s.update(mainContainer=1), "spec.mainContainer: must be a string"),
        (
            lambda s: s["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(env={"A": "1"}),
            "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].env: must be a list",
        ),
    ],
)
def test_validation_errors_name_the_field(mutate, expected: str) -> None:
    obj = manifest()
    mutate(obj["spec"])
    errors = errors_of(obj)
    assert any(e.startswith(expected) for e in errors), errors


def test_name_must_make_valid_worker_hostnames() -> None:
    errors = errors_of(manifest(name="A" + "b" * 10))
    assert errors[0].startswith("metadata.name: will not be able to create pod and service with invalid DNS label")
    errors = errors_of(manifest(name="x" * 55, workers=100))
    assert "metadata.name" in errors[0] and f"{'x' * 55}-worker-99" in errors[0]


def test_all_errors_are_reported_at_once() -> None:
    obj = manifest(slotsPerWorker=-1, mpiImplementation="X")
    assert len(errors_of(obj)) == 2


def test_not_an_object() -> None:
    assert errors_of({"metadata": {"name": "a"}, "spec": []})[0] == "spec: must be an object, got list"


def _rich() -> dict:
    base = manifest(
        runPolicy={"schedulingPolicy": {"minAvailable": 1, "minResources": {"cpu": "1"}}},
        sshAuthMountPath="/root/.ssh",
        mainContainer="launcher",
    )
    worker = base["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    worker["metadata"] = {"labels": {"a": "b"}, "annotations": {"c": "d"}}
    worker["spec"].update(
        dnsConfig={"searches": ["x"]},
        volumes=[{"name": "v"}],
        hostNetwork=True,
        priorityClassName="p",
        nodeSelector={"a": "b"},
    )
    worker["spec"]["containers"][0].update(
        env=[{"name": "A"}], volumeMounts=[], resources={"requests": {"cpu": "1"}}, command=["x"], args=["y"]
    )
    return base


@pytest.mark.parametrize("opts", [K.Options(), K.Options(gang_scheduling="volcano")], ids=["plain", "gang"])
def test_reconcile_never_crashes_on_malformed_objects(opts: K.Options) -> None:
    """Any field replaced by any JSON value yields a plan (a Failed condition naming the field at worst)."""
    for _path, obj in malformed(_rich()):
        try:
            kubeflow.parse(obj)
        except InvalidMPIJob as exc:
            assert all(e.path for e in exc.errors)
        result = plan(obj, opts=opts)
        assert result.status is not None
