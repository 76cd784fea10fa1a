"""The MPIJob CRD on a real API server: both versions, the Kubeflow documentation's manifests, strict field validation, CEL rules,
defaults, printer columns, status and scale subresources."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from crd.gen import main as crd_main
from tests.integration._fixtures.install import MANIFESTS

pytestmark = pytest.mark.integration
GROUP, PLURAL = "kubeflow.org", "mpijobs"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def manifest(name: str) -> dict[str, Any]:
    return yaml.safe_load((MANIFESTS / name).read_text())


def minimal_job(name: str = "job", workers: int | None = 1) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "mpi", "image": "busybox"}]}}
    replicas: dict[str, Any] = {"Launcher": {"replicas": 1, "template": copy.deepcopy(pod)}}
    if workers is not None:
        replicas["Worker"] = {"replicas": workers, "template": copy.deepcopy(pod)}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {"mpiReplicaSpecs": replicas},
    }


@pytest.fixture
def custom(api_client: Any, operator_crd: None) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


def create(custom: Any, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    version = body["apiVersion"].split("/")[1]
    return custom.create_namespaced_custom_object(GROUP, version, namespace, PLURAL, body, field_validation="Strict")


def rejection(custom: Any, namespace: str, body: dict[str, Any]) -> str:
    """The API server's message when it rejects the create (fails the test when it accepts it)."""
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as info:
        create(custom, namespace, body)
    assert info.value.status in (400, 422), info.value
    return json.loads(info.value.body)["message"]


def test_generated_crd_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("go") is None:
        pytest.skip("go is needed to read Kubernetes' OpenAPI document from the module cache")
    assert crd_main(["--check"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "name",
    [
        "tensorflow-mnist-elastic.v1.yaml",
        "tensorflow-mnist-elastic.v2beta1.yaml",
        "openmpi-helloworld.v1.yaml",
        "openmpi-helloworld.v2beta1.yaml",
    ],
)
def test_documented_manifests_are_accepted_by_kubectl(
    kubectl: Kubectl, namespace: str, operator_crd: None, name: str
) -> None:
    proc = kubectl("apply", "-n", namespace, "-f", str(MANIFESTS / name))
    assert proc.returncode == 0, proc.stderr
    assert "created" in proc.stdout
    # A second apply of the same manifest changes nothing.
    again = kubectl("apply", "-n", namespace, "-f", str(MANIFESTS / name))
    assert again.returncode == 0 and "unchanged" in again.stdout, again.stdout + again.stderr


def test_documented_manifests_are_accepted_by_the_python_client(custom: Any, namespace: str) -> None:
    for name in ("openmpi-helloworld.v1.yaml", "openmpi-helloworld.v2beta1.yaml"):
        body = manifest(name)
        body["metadata"]["name"] += "-" + body["apiVersion"].split("/")[1]
        created = create(custom, namespace, body)
        worker = created["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        assert worker["resources"]["requests"] == {"cpu": 0.1, "memory": "1Gi"}


def test_resources_request_typo_is_rejected_by_kubectl(kubectl: Kubectl, namespace: str, operator_crd: None) -> None:
    proc = kubectl("apply", "-n", namespace, "-f", str(MANIFESTS / "openmpi-helloworld-typo.v1.yaml"))
    assert proc.returncode != 0
    assert "resources.request" in proc.stderr, proc.stderr
    assert kubectl("get", "mpijobs.kubeflow.org", "openmpi-helloworld", "-n", namespace).returncode != 0


def test_resources_request_typo_is_rejected_by_the_python_client(custom: Any, namespace: str) -> None:
    message = rejection(custom, namespace, manifest("openmpi-helloworld-typo.v1.yaml"))
    assert 'unknown field "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].resources.request"' in message
    assert 'unknown field "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.request"' in message


def test_kubectl_explain_shows_the_spec(kubectl: Kubectl, operator_crd: None) -> None:
    proc = kubectl("explain", "mpijobs.spec", "--api-version=kubeflow.org/v2beta1")
    assert proc.returncode == 0, proc.stderr
    for field in ("mpiReplicaSpecs", "slotsPerWorker", "runPolicy", "sshAuthMountPath", "launcherCreationPolicy"):
        assert field in proc.stdout
    v1 = kubectl("explain", "mpijobs.spec.cleanPodPolicy", "--api-version=kubeflow.org/v1")
    assert v1.returncode == 0 and "Legacy" in v1.stdout, v1.stdout + v1.stderr


def test_defaults_are_those_of_the_kubeflow_operator(custom: Any, namespace: str) -> None:
    spec = create(custom, namespace, minimal_job())["spec"]
    assert spec["slotsPerWorker"] == 1
    assert spec["runLauncherAsWorker"] is False
    assert spec["sshAuthMountPath"] == "/root/.ssh"
    assert spec["launcherCreationPolicy"] == "AtStartup"
    assert spec["mpiImplementation"] == "OpenMPI"
    assert spec["runPolicy"]["suspend"] is False
    # No defaults are invented inside pod templates.
    assert spec["mpiReplicaSpecs"]["Worker"]["template"] == {
        "spec": {"containers": [{"name": "mpi", "image": "busybox"}]}
    }


def test_a_v1_object_read_as_v2beta1_keeps_its_legacy_fields(custom: Any, namespace: str) -> None:
    body = manifest("tensorflow-mnist-elastic.v1.yaml")
    body["spec"]["mainContainer"] = "mpi-launcher"
    create(custom, namespace, body)
    read = custom.get_namespaced_custom_object(GROUP, "v2beta1", namespace, PLURAL, "tensorflow-mnist-elastic")
    assert read["apiVersion"] == "kubeflow.org/v2beta1"
    assert read["spec"]["cleanPodPolicy"] == "Running"
    assert read["spec"]["mainContainer"] == "mpi-launcher"
    assert read["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2


def with_changes(change: Callable[[dict[str, Any]], Any], name: str = "job") -> dict[str, Any]:
    body = minimal_job(name)
    change(body)
    return body


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"]["Launcher"].update(replicas=2),
            "spec.mpiReplicaSpecs.Launcher.replicas must be 1",
            id="launcher-replicas",
        ),
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"]["Worker"].update(replicas=0),
            "spec.mpiReplicaSpecs.Worker.replicas must be set and at least 1",
            id="worker-replicas-0",
        ),
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"]["Worker"].pop("replicas"),
            "spec.mpiReplicaSpecs.Worker.replicas must be set and at least 1",
            id="worker-replicas-missing",
        ),
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"]["Worker"].update(restartPolicy="Always"),
            "restartPolicy must be Never or OnFailure",
            id="restart-policy-always",
        ),
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"]["Launcher"].update(restartPolicy="ExitCode"),
            "restartPolicy must be Never or OnFailure",
            id="restart-policy-exitcode",
        ),
        pytest.param(
            lambda b: b["spec"].update(runPolicy={"managedBy": "example.com/other"}),
            "spec.runPolicy.managedBy must be one of kubeflow.org/mpi-operator, kueue.x-k8s.io/multikueue",
            id="managed-by-value",
        ),
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"].pop("Launcher"),
            "spec.mpiReplicaSpecs.Launcher is required",
            id="launcher-missing",
        ),
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"].update(worker=b["spec"]["mpiReplicaSpecs"].pop("Worker")),
            "spec.mpiReplicaSpecs keys must be Launcher or Worker",
            id="replica-type-typo",
        ),
        pytest.param(
            lambda b: b["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"].update(containers=[]),
            "spec.mpiReplicaSpecs.Worker.template.spec.containers",
            id="no-containers",
        ),
        pytest.param(
            lambda b: b["spec"].update(launcherCreationPolicy="Eventually"),
            "spec.launcherCreationPolicy",
            id="launcher-creation-policy-enum",
        ),
        pytest.param(
            lambda b: b["spec"].update(mpiImplementation="LAM"),
            "spec.mpiImplementation",
            id="mpi-implementation-enum",
        ),
        pytest.param(
            lambda b: b["spec"].update(slotsPerWorker=-1),
            "spec.slotsPerWorker",
            id="slots-negative",
        ),
    ],
)
def test_cel_and_schema_rules_reject_invalid_jobs(
    custom: Any, namespace: str, change: Callable[[dict[str, Any]], Any], expected: str
) -> None:
    assert expected in rejection(custom, namespace, with_changes(change))


def test_name_must_leave_room_for_worker_pod_names(custom: Any, namespace: str) -> None:
    # 54 characters + "-worker-9" = 63: the longest name that works with 10 workers.
    longest = "a" * 54
    body = minimal_job(longest, workers=10)
    create(custom, namespace, body)
    message = rejection(custom, namespace, minimal_job("b" * 54, workers=11))
    assert "metadata.name: Invalid value" in message and "too long for the number of workers" in message
    # A DNS subdomain that is no DNS-1035 label (a dot, a leading digit) cannot name worker pods either.
    for name in ("my.job", "1job"):
        assert "metadata.name in body should match '^[a-z][-a-z0-9]*$'" in rejection(
            custom, namespace, minimal_job(name)
        )


def test_managed_by_is_immutable(custom: Any, namespace: str) -> None:
    from kubernetes.client.exceptions import ApiException

    body = with_changes(lambda b: b["spec"].update(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    create(custom, namespace, body)
    for patch, expected in (
        ({"spec": {"runPolicy": {"managedBy": "kubeflow.org/mpi-operator"}}}, "managedBy is immutable"),
        ({"spec": {"runPolicy": {"managedBy": None}}}, "cannot be added or removed"),
    ):
        with pytest.raises(ApiException) as info:
            custom.patch_namespaced_custom_object(GROUP, "v2beta1", namespace, PLURAL, "job", patch)
        assert expected in info.value.body
    plain = minimal_job("plain")
    create(custom, namespace, plain)
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object(
            GROUP,
            "v2beta1",
            namespace,
            PLURAL,
            "plain",
            {"spec": {"runPolicy": {"managedBy": "kubeflow.org/mpi-operator"}}},
        )
    assert "cannot be added or removed" in info.value.body


def test_printer_columns_and_short_names(kubectl: Kubectl, custom: Any, namespace: str) -> None:
    create(custom, namespace, minimal_job(workers=3))
    custom.patch_namespaced_custom_object_status(
        GROUP,
        "v2beta1",
        namespace,
        PLURAL,
        "job",
        {
            "status": {
                "conditions": [{"type": "Created", "status": "True", "reason": "MPIJobCreated"}],
                "phase": "Created",
            }
        },
    )
    for short in ("mpij", "mj"):
        proc = kubectl("get", short, "-n", namespace)
        assert proc.returncode == 0, proc.stderr
        header, row = proc.stdout.splitlines()[:2]
        assert header.split() == ["NAME", "STATE", "WORKERS", "RESTARTS", "AGE"]
        assert row.split()[:3] == ["job", "Created", "3"]


def test_status_is_a_subresource(custom: Any, namespace: str) -> None:
    create(custom, namespace, minimal_job())
    # Status sent to the main resource is ignored...
    custom.patch_namespaced_custom_object(
        GROUP, "v2beta1", namespace, PLURAL, "job", {"status": {"startTime": "2026-01-01T00:00:00Z"}}
    )
    assert "status" not in custom.get_namespaced_custom_object(GROUP, "v2beta1", namespace, PLURAL, "job")
    # ...and validated on /status.
    status = {
        "conditions": [{"type": "Running", "status": "True", "reason": "MPIJobRunning", "message": "all running"}],
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 1, "selector": "app=job"}},
        "startTime": "2026-01-01T00:00:00Z",
    }
    out = custom.patch_namespaced_custom_object_status(GROUP, "v2beta1", namespace, PLURAL, "job", {"status": status})
    assert out["status"] == status


def test_kubectl_scale_sets_the_worker_replicas(kubectl: Kubectl, custom: Any, namespace: str) -> None:
    create(custom, namespace, minimal_job(workers=2))
    proc = kubectl("scale", "mpijobs.kubeflow.org/job", "--replicas=4", "-n", namespace)
    assert proc.returncode == 0, proc.stderr
    job = custom.get_namespaced_custom_object(GROUP, "v2beta1", namespace, PLURAL, "job")
    assert job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 4
    # The CEL rules hold for scaling too.
    bad = kubectl("scale", "mpijobs.kubeflow.org/job", "--replicas=0", "-n", namespace)
    assert bad.returncode != 0 and "Worker.replicas must be set and at least 1" in bad.stderr


# ---- the State column and v1 defaults, with the operator's own reconcile step ---------------------------------------

KWOK = {"nodeSelector": {"type": "kwok"}}  # simulated nodes: pods run; a Job's pods succeed unless told otherwise
NOWHERE = {"nodeSelector": {"type": "no-such-node"}}  # pods stay Pending


def placed(body: dict[str, Any], where: dict[str, Any], launcher_outcome: str = "") -> dict[str, Any]:
    body = copy.deepcopy(body)
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"].update(where)
    if launcher_outcome:
        launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
        launcher.setdefault("metadata", {})["annotations"] = {"kwok.mpi.operator/outcome": launcher_outcome}
    return body


def state_column(kubectl: Kubectl, namespace: str, name: str) -> str:
    """STATE as `kubectl get mpijob` prints it: the API server's table (the CRD's printer columns), not ours."""
    proc = kubectl("get", "mpijobs.kubeflow.org", name, "-n", namespace)
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.splitlines()[:2]
    return row[header.index("STATE") : header.index("WORKERS")].strip()  # by position: an unset value is blank


def _condition(job: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in (job.get("status") or {}).get("conditions") or [] if c["type"] == ctype), {})


@pytest.mark.parametrize(
    ("state", "change", "until"),
    [
        # Kubeflow's column (the last condition's type) said Running for this one: Running=False comes last.
        ("Suspended", lambda b: b["spec"].update(runPolicy={"suspend": True}), "Suspended"),
        ("Created", lambda b: placed(b, NOWHERE), "Created"),
        ("Running", lambda b: placed(b, KWOK, launcher_outcome="run"), "Running"),
        ("Succeeded", lambda b: placed(b, KWOK), "Succeeded"),
        ("Failed", lambda b: placed(b, KWOK, launcher_outcome="fail"), "Failed"),
    ],
)
def test_state_column_is_right_in_every_state(
    state: str,
    change: Callable[[dict[str, Any]], Any],
    until: str,
    reconcile: Any,
    custom: Any,
    kubectl: Kubectl,
    namespace: str,
) -> None:
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob import submit as mpijob_submit

    body = minimal_job("job", workers=2)
    changed = change(body)
    body = changed if isinstance(changed, dict) else body
    if state == "Failed":
        body["spec"]["runPolicy"] = {"backoffLimit": 0}
    create(custom, namespace, body)
    assert state_column(kubectl, namespace, "job") == ""  # not seen by the operator yet (mpijob_info: Pending)
    deadline = time.monotonic() + 90
    while True:
        reconcile([{"namespace": namespace, "name": "job"}])
        job = custom.get_namespaced_custom_object(GROUP, "v2beta1", namespace, PLURAL, "job")
        if _condition(job, until).get("status") == "True" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert _condition(job, until).get("status") == "True", job.get("status")
    assert state_column(kubectl, namespace, "job") == state
    assert job["status"]["phase"] == state
    assert mpijob_submit.summary(job, datetime.now(UTC))["phase"] == state  # mpijob_info agrees with the column


def test_v1_manifest_without_worker_replicas_applies_and_runs_one_worker(
    kubectl: Kubectl, reconcile: Any, custom: Any, namespace: str
) -> None:
    """kubeflow.org/v1 defaulted every replica count to 1: such a manifest applies as it is (the v1 schema's default)
    and runs one worker; the same manifest as v2beta1 is still rejected, as Kubeflow's v2beta1 does."""
    body = placed(minimal_job("legacy", workers=None), NOWHERE)
    body["apiVersion"] = "kubeflow.org/v1"
    body["spec"]["mpiReplicaSpecs"]["Launcher"].pop("replicas")
    body["spec"]["mpiReplicaSpecs"]["Worker"] = copy.deepcopy(body["spec"]["mpiReplicaSpecs"]["Launcher"])
    proc = kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(body))
    assert proc.returncode == 0, proc.stderr
    stored = custom.get_namespaced_custom_object(GROUP, "v2beta1", namespace, PLURAL, "legacy")
    assert {k: v["replicas"] for k, v in stored["spec"]["mpiReplicaSpecs"].items()} == {"Launcher": 1, "Worker": 1}
    run = reconcile([{"namespace": namespace, "name": "legacy"}])
    assert run.job("legacy")["error"] is None, run.result
    from kubernetes import client

    pods = client.CoreV1Api(custom.api_client).list_namespaced_pod(
        namespace, label_selector="training.kubeflow.org/job-name=legacy,training.kubeflow.org/job-role=worker"
    )
    assert [p.metadata.name for p in pods.items] == ["legacy-worker-0"]

    as_v2beta1 = {**body, "apiVersion": "kubeflow.org/v2beta1", "metadata": {"name": "modern"}}
    proc = kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(as_v2beta1))
    assert proc.returncode != 0
    assert "spec.mpiReplicaSpecs.Worker.replicas must be set and at least 1" in proc.stderr
