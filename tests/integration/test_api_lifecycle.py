"""The other two MPIJob APIs through the real operator on the local cluster (kwok nodes): T9k's
batch.tensorstack.dev/v1beta1 and the kubebuilder operator's batch.test.bdap.com/v1, each from its documented example,
created -> running -> succeeded/failed, T9k's pause/resume, debug and cleanUpWorkers, deletion, and one operator
reconciling a mix of the three APIs. Pods are simulated (docs/dev/local-cluster.md: annotations steer how they end)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from hack.lib.operator import OperatorProcess
from hack.lib.wait import wait_until
from tests.integration._fixtures.install import MANIFESTS
from tests.support.mpijob import children, create_mpijob, install_crd, new_mpijob
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration]

T9K, BDAP = ("batch.tensorstack.dev", "v1beta1"), ("batch.test.bdap.com", "v1")
OUTCOME, AFTER = "kwok.mpi.operator/outcome", "kwok.mpi.operator/outcome-after"
ALL_APIS = "kubeflow.org,batch.tensorstack.dev,batch.test.bdap.com"


@pytest.fixture(scope="module")
def api_crds(api_client: Any) -> None:
    for group in (T9K[0], BDAP[0]):
        install_crd(api_client, ROOT / f"roles/crds/files/mpijobs.{group}.yaml")


@pytest.fixture
def operator(operator_factory: Callable[..., OperatorProcess], api_crds: None, namespace: str) -> OperatorProcess:
    return operator_factory("--namespace", namespace, "--no-leader-elect", f"--apis={ALL_APIS}")


def custom(api_client: Any) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


def create(api_client: Any, namespace: str, api: tuple[str, str], body: dict) -> dict:
    return custom(api_client).create_namespaced_custom_object(*api, namespace, "mpijobs", body)


def get(api_client: Any, namespace: str, api: tuple[str, str], name: str) -> dict | None:
    from kubernetes.client.exceptions import ApiException

    try:
        return custom(api_client).get_namespaced_custom_object(*api, namespace, "mpijobs", name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def patch(api_client: Any, namespace: str, api: tuple[str, str], name: str, body: dict) -> dict:
    return custom(api_client).patch_namespaced_custom_object(*api, namespace, "mpijobs", name, body)


def wait_phase(
    api_client: Any, namespace: str, api: tuple[str, str], name: str, phase: str, timeout: float = 60
) -> dict:
    seen: dict = {}

    def check() -> bool:
        seen["job"] = get(api_client, namespace, api, name)
        return ((seen["job"] or {}).get("status") or {}).get("phase") == phase

    try:
        wait_until(check, timeout, what=f"{namespace}/{name} phase {phase}")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; status: {(seen.get('job') or {}).get('status')}") from None
    return seen["job"]


def pods(api_client: Any, namespace: str, name: str) -> list[Any]:
    from kubernetes import client

    found = (
        client.CoreV1Api(api_client)
        .list_namespaced_pod(namespace, label_selector=f"training.kubeflow.org/job-name={name}")
        .items
    )
    return [p for p in found if not p.metadata.deletion_timestamp]


def roles(api_client: Any, namespace: str, name: str) -> list[str]:
    return sorted(
        p.metadata.labels.get("training.kubeflow.org/job-role", "") for p in pods(api_client, namespace, name)
    )


def t9k_example(workers: int = 2, **annotations: str) -> dict:
    """T9k's documented first example as written (5 workers made 2 for kwok's sake), its pods steered by annotations."""
    job = yaml.safe_load((MANIFESTS / "t9k-mpi-example.yaml").read_text())
    job["spec"]["worker"]["replicas"] = workers
    if annotations:
        job["spec"]["worker"]["template"].setdefault("metadata", {})["annotations"] = dict(annotations)
    return job


def bdap_example(workers: int = 2, launcher: str = "succeed") -> dict:
    """The batch.test.bdap.com README's example as written (5 workers made 2), its launcher pod steered to `launcher`."""
    job = yaml.safe_load((MANIFESTS / "bdap-simple-train-cpu.yaml").read_text())
    del job["metadata"]["namespace"]
    job["spec"]["numWorkers"] = workers
    job["spec"]["launcherTemplate"].setdefault("metadata", {})["annotations"] = {OUTCOME: launcher, AFTER: "3s"}
    return job


# ---- batch.tensorstack.dev/v1beta1 (T9k) ---------------------------------------------------------------------------


def test_t9k_example_runs_succeeds_and_cleans_up_its_workers(
    operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    # The launcher is a copy of the worker template: its pod (a Job's) ends after 6 s; the workers run.
    create(api_client, namespace, T9K, t9k_example(**{AFTER: "6s"}))
    job = wait_phase(api_client, namespace, T9K, "mpi-example", "Running", 180)
    assert roles(api_client, namespace, "mpi-example") == ["launcher", "worker", "worker"]
    launcher = next(
        p
        for p in pods(api_client, namespace, "mpi-example")
        if p.metadata.labels["training.kubeflow.org/job-role"] == "launcher"
    )
    command = " ".join([*(launcher.spec.containers[0].command or []), *(launcher.spec.containers[0].args or [])])
    assert "/usr/local/bin/mpirun" in command and "--mca btl ^openib" in command and "./random_walk 20 40 2" in command
    assert job["status"]["aggregate"]["running"] >= 2
    job = wait_phase(api_client, namespace, T9K, "mpi-example", "Succeeded", 90)
    assert {c["type"]: c["status"] for c in job["status"]["conditions"]}["Completed"] == "True"
    # cleanUpWorkers: true: the workers go, the launcher (and its log) stays
    wait_until(lambda: roles(api_client, namespace, "mpi-example") == ["launcher"], 60, what="workers cleaned up")
    owner = children(api_client, namespace, "mpi-example")
    assert owner["Service"] == ["mpi-example"] and owner["Job"] == ["mpi-example-launcher"]


def test_t9k_failed_launcher_fails_the_job(operator: OperatorProcess, api_client: Any, namespace: str) -> None:
    """mpirun's non-zero exit is the job's end (T9k has no retry field: backoffLimit 0). The launcher shares the
    workers' template, so the test steers the launcher pod alone once it is there."""
    from kubernetes import client

    create(api_client, namespace, T9K, t9k_example(**{OUTCOME: "run"}))
    wait_phase(api_client, namespace, T9K, "mpi-example", "Running", 180)
    (launcher,) = [p for p in pods(api_client, namespace, "mpi-example") if "-launcher-" in p.metadata.name]
    client.CoreV1Api(api_client).patch_namespaced_pod(
        launcher.metadata.name, namespace, {"metadata": {"annotations": {OUTCOME: "fail", AFTER: "1s"}}}
    )
    job = wait_phase(api_client, namespace, T9K, "mpi-example", "Failed", 60)
    conditions = {c["type"]: c for c in job["status"]["conditions"]}
    assert conditions["Failed"]["status"] == "True" and conditions["Completed"]["status"] == "False"
    launchers = [p for p in pods(api_client, namespace, "mpi-example") if "-launcher-" in p.metadata.name]
    assert [p.metadata.name for p in launchers] == [launcher.metadata.name]  # not retried


def test_t9k_pause_deletes_the_replicas_and_resume_brings_them_back(
    operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    create(api_client, namespace, T9K, t9k_example(**{OUTCOME: "run"}))
    wait_phase(api_client, namespace, T9K, "mpi-example", "Running", 180)
    patch(api_client, namespace, T9K, "mpi-example", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    job = wait_phase(api_client, namespace, T9K, "mpi-example", "Paused", 60)
    left: list = []

    def gone() -> bool:
        left[:] = [(p.metadata.name, p.status.phase) for p in pods(api_client, namespace, "mpi-example")]
        return not left

    try:
        wait_until(gone, 60, what="every replica deleted")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}: left {left}") from None
    assert {c["type"]: c["status"] for c in job["status"]["conditions"]}["Paused"] == "True"
    patch(api_client, namespace, T9K, "mpi-example", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    wait_phase(api_client, namespace, T9K, "mpi-example", "Running", 180)
    assert roles(api_client, namespace, "mpi-example") == ["launcher", "worker", "worker"]


def test_t9k_debug_mode_brings_both_roles_up_without_training(
    operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    job = t9k_example(**{OUTCOME: "run"})
    job["spec"]["runMode"] = {"debug": {"enabled": True}}
    create(api_client, namespace, T9K, job)
    wait_phase(api_client, namespace, T9K, "mpi-example", "Running", 180)
    by_role = {
        p.metadata.labels["training.kubeflow.org/job-role"]: p for p in pods(api_client, namespace, "mpi-example")
    }
    launcher = by_role["launcher"].spec.containers[0]
    assert "mpirun" not in " ".join([*(launcher.command or []), *(launcher.args or [])])
    assert "sleep" in " ".join([*(launcher.command or []), *(launcher.args or [])])
    worker = by_role["worker"].spec.containers[0]
    assert "/usr/sbin/sshd" in " ".join([*(worker.command or []), *(worker.args or [])])


def test_deleting_a_t9k_job_removes_what_it_created(operator: OperatorProcess, api_client: Any, namespace: str) -> None:
    create(api_client, namespace, T9K, t9k_example(**{OUTCOME: "run"}))
    wait_phase(api_client, namespace, T9K, "mpi-example", "Running", 180)
    custom(api_client).delete_namespaced_custom_object(
        *T9K, namespace, "mpijobs", "mpi-example", body={"propagationPolicy": "Foreground"}
    )
    empty = {"Service": [], "ConfigMap": [], "Secret": [], "Job": [], "Worker": [], "LauncherPod": []}
    wait_until(
        lambda: {k: v for k, v in children(api_client, namespace, "mpi-example").items()} == empty,
        90,
        what="every child gone",
    )


# ---- batch.test.bdap.com/v1 ----------------------------------------------------------------------------------------


def test_bdap_example_launches_once_workers_are_ready_and_succeeds(
    operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    create(api_client, namespace, BDAP, bdap_example())
    job = wait_phase(api_client, namespace, BDAP, "simple-train-cpu", "Running", 180)
    assert job["status"]["readyWorkers"] == 2 and job["status"]["launcher"] == "simple-train-cpu-launcher"
    names = sorted(p.metadata.name for p in pods(api_client, namespace, "simple-train-cpu"))
    assert names == ["simple-train-cpu-launcher", "simple-train-cpu-worker-0", "simple-train-cpu-worker-1"]
    launcher = next(p for p in pods(api_client, namespace, "simple-train-cpu") if p.metadata.name.endswith("launcher"))
    env = {e.name: e.value for e in launcher.spec.containers[0].env or []}
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    wait_phase(api_client, namespace, BDAP, "simple-train-cpu", "Succeeded", 90)
    assert len(pods(api_client, namespace, "simple-train-cpu")) == 3  # the original keeps the pods


def test_bdap_failed_launcher_fails_the_job(operator: OperatorProcess, api_client: Any, namespace: str) -> None:
    create(api_client, namespace, BDAP, bdap_example(launcher="fail"))
    wait_phase(api_client, namespace, BDAP, "simple-train-cpu", "Failed", 120)


def test_bdap_scale_and_template_edit_roll_the_workers(
    operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    create(api_client, namespace, BDAP, bdap_example(launcher="run"))
    wait_phase(api_client, namespace, BDAP, "simple-train-cpu", "Running", 180)
    patch(api_client, namespace, BDAP, "simple-train-cpu", {"spec": {"numWorkers": 3}})
    wait_until(
        lambda: roles(api_client, namespace, "simple-train-cpu") == ["launcher", "worker", "worker", "worker"],
        60,
        what="a third worker",
    )
    before = {p.metadata.name: p.metadata.uid for p in pods(api_client, namespace, "simple-train-cpu")}
    template = copy.deepcopy(bdap_example()["spec"]["workerTemplate"])
    template.setdefault("metadata", {})["labels"] = {"rev": "2"}
    patch(api_client, namespace, BDAP, "simple-train-cpu", {"spec": {"workerTemplate": template}})

    def rolled() -> bool:
        now = {p.metadata.name: p for p in pods(api_client, namespace, "simple-train-cpu")}
        workers = [p for n, p in now.items() if "-worker-" in n]
        return len(workers) == 3 and all(
            p.metadata.uid != before[p.metadata.name] and (p.metadata.labels or {}).get("rev") == "2" for p in workers
        )

    wait_until(rolled, 120, what="every worker replaced from the new template")


def test_deleting_a_bdap_job_removes_what_it_created(
    operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    """The README: "all pods, configmaps, rbac will be automatically deleted" (the launcher's own ServiceAccount, Role
    and RoleBinding included)."""
    from kubernetes import client

    create(api_client, namespace, BDAP, bdap_example(launcher="run"))
    wait_phase(api_client, namespace, BDAP, "simple-train-cpu", "Running", 180)
    core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
    launcher_rbac = {
        "ServiceAccount": lambda: core.list_namespaced_service_account(namespace).items,
        "Role": lambda: rbac.list_namespaced_role(namespace).items,
        "RoleBinding": lambda: rbac.list_namespaced_role_binding(namespace).items,
    }

    def rbac_names() -> dict[str, list[str]]:
        return {
            kind: [o.metadata.name for o in list_() if o.metadata.name == "simple-train-cpu-launcher"]
            for kind, list_ in launcher_rbac.items()
        }

    assert all(names == ["simple-train-cpu-launcher"] for names in rbac_names().values()), rbac_names()
    custom(api_client).delete_namespaced_custom_object(
        *BDAP, namespace, "mpijobs", "simple-train-cpu", body={"propagationPolicy": "Foreground"}
    )
    empty = {"Service": [], "ConfigMap": [], "Secret": [], "Job": [], "Worker": [], "LauncherPod": []}
    wait_until(lambda: children(api_client, namespace, "simple-train-cpu") == empty, 90, what="every child gone")
    wait_until(lambda: all(not names for names in rbac_names().values()), 60, what="the launcher's RBAC gone")


# ---- kubectl scale (the scale subresource of both CRDs) --------------------------------------------------------------


def scale_of(kubectl: Any, namespace: str, resource: str) -> dict:
    proc = kubectl("get", resource, "-n", namespace, "--subresource=scale", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def scale_to(
    kubectl: Any, api_client: Any, namespace: str, api: tuple[str, str], name: str, replicas: int, launchers: int
) -> dict:
    """`kubectl scale` the job to `replicas` workers; waits for the pods and the scale subresource; returns the scale."""
    resource = f"mpijobs.{api[0]}/{name}"  # the full name: with several MPIJob CRDs, `mpijob` alone is T9k's
    proc = kubectl("scale", resource, "-n", namespace, f"--replicas={replicas}")
    assert proc.returncode == 0, proc.stderr
    want = ["launcher", *["worker"] * replicas]
    wait_until(lambda: roles(api_client, namespace, name) == want, 90, what=f"{replicas} workers")
    seen: dict = {}

    def read_back() -> bool:
        seen.update(scale_of(kubectl, namespace, resource))
        return seen["spec"].get("replicas") == replicas and seen["status"].get("replicas") == replicas + launchers

    try:
        wait_until(read_back, 60, what=f"the scale subresource reading {replicas} workers")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}: {seen}") from None
    return seen


@pytest.mark.parametrize(
    ("api", "job", "launchers"),
    [
        # T9k's status has no worker-only count: status.replicas is aggregate.running, the running launcher included.
        (T9K, lambda: t9k_example(**{OUTCOME: "run"}), 1),
        # batch.test.bdap.com: status.replicas is readyWorkers.
        (BDAP, lambda: bdap_example(launcher="run"), 0),
    ],
    ids=["t9k", "bdap"],
)
def test_kubectl_scale_changes_the_workers(
    operator: OperatorProcess,
    api_client: Any,
    namespace: str,
    kubectl: Any,
    api: tuple[str, str],
    job: Callable[[], dict],
    launchers: int,
) -> None:
    body = job()
    name = body["metadata"]["name"]
    create(api_client, namespace, api, body)
    wait_phase(api_client, namespace, api, name, "Running", 180)
    for replicas in (3, 1):
        scale = scale_to(kubectl, api_client, namespace, api, name, replicas, launchers)
        if api == T9K:  # T9k's status, in T9k's shape, has no selector
            assert "selector" not in scale["status"]
            continue
        # bdap's status (ours) carries the workers' selector: the scale's, as an HPA reads it
        workers = [f"pod/{name}-worker-{i}" for i in range(replicas)]

        def selected(selector: str = scale["status"]["selector"], workers: list = workers) -> bool:
            proc = kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name")
            assert proc.returncode == 0, proc.stderr
            return sorted(proc.stdout.split()) == workers  # a removed worker may be terminating for a moment

        wait_until(selected, 30, what=f"the scale's selector choosing {workers}")
    wait_phase(api_client, namespace, api, name, "Running", 60)


# ---- one operator, three APIs ------------------------------------------------------------------------------------


def test_one_batch_mixes_the_three_apis(operator: OperatorProcess, api_client: Any, namespace: str) -> None:
    kubeflow = new_mpijob("kf", workers=1, launcher_annotations={AFTER: "4s"})
    t9k = t9k_example(workers=1, **{AFTER: "4s"})
    t9k["metadata"]["name"] = "t9k"
    bdap = bdap_example(workers=1)
    bdap["metadata"]["name"] = "bdap"
    create_mpijob(api_client, namespace, kubeflow)
    create(api_client, namespace, T9K, t9k)
    create(api_client, namespace, BDAP, bdap)
    wait_phase(api_client, namespace, T9K, "t9k", "Succeeded", 90)
    wait_phase(api_client, namespace, BDAP, "bdap", "Succeeded", 90)
    wait_until(
        lambda: any(
            c["type"] == "Succeeded" and c["status"] == "True"
            for c in ((get(api_client, namespace, ("kubeflow.org", "v2beta1"), "kf") or {}).get("status") or {}).get(
                "conditions"
            )
            or []
        ),
        90,
        what="kf Succeeded",
    )
    sizes = operator.metric_values("mpi_operator_batch_size_sum")
    assert sizes, "batch sizes were measured"


# ---- the modules and submit.yml with the new APIs ------------------------------------------------------------------


def test_modules_submit_scale_pause_and_report_a_t9k_job(
    ansible_play: Any, operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    job = t9k_example(**{OUTCOME: "run"})
    job["metadata"]["namespace"] = namespace
    submit = {
        "name": "submit",
        "register": "r",
        "ignore_errors": True,
        "mpi.operator.mpijob": {"definition": job, "wait": True, "wait_for": "Running", "wait_timeout": 180},
    }
    run = ansible_play([submit])
    assert "submit" not in run.failed, run["submit"].get("msg")
    assert run["submit"]["summary"]["phase"] == "Running" and run["submit"]["summary"]["workers"] == 2
    named = {"name": "mpi-example", "namespace": namespace, "api_version": "batch.tensorstack.dev/v1beta1"}
    scale = {"name": "scale", "register": "r", "mpi.operator.mpijob": {**named, "workers": 3}}
    pause = {
        "name": "pause",
        "register": "r",
        "mpi.operator.mpijob": {**named, "suspend": True, "wait": True, "wait_for": "Suspended", "wait_timeout": 120},
    }
    info = {"name": "info", "register": "r", "mpi.operator.mpijob_info": {"namespace": namespace}}
    run = ansible_play([scale, pause, info])
    assert not run.failed, run.stdout[-3000:]
    assert run["scale"]["method"] == "patched" and run["scale"]["result"]["spec"]["worker"]["replicas"] == 3
    assert run["pause"]["summary"]["phase"] == "Paused"
    (listed,) = run["info"]["jobs"]  # every served API's jobs: this namespace has one, T9k's
    assert listed["summary"]["phase"] == "Paused" and listed["mpijob"]["apiVersion"] == "batch.tensorstack.dev/v1beta1"
    bdap = bdap_example()
    bdap["metadata"]["namespace"] = namespace
    refused = ansible_play(
        [
            {
                "name": "suspend bdap",
                "register": "r",
                "ignore_errors": True,
                "mpi.operator.mpijob": {"definition": bdap, "suspend": True},
            }
        ]
    )
    assert "cannot be suspended" in refused["suspend bdap"]["msg"]
