"""The switch from the Kubeflow MPI Operator to ours under running jobs, and back (playbooks/migrate.yml,
docs/migrate.md), on the local cluster: the Kubeflow operator v0.8.2 installed by its own manifest with its pod on the
real node, five jobs whose pods kwok runs and one real `mpirun` job on the real node. Each switch keeps every child
(same uids), restarts no pod, loses no job and takes no status backwards; the jobs finish under whichever operator
runs when they are told to.

The cluster is shared with the other tests: this Kubeflow install watches one namespace and has a namespace of its own
(its cluster-scoped names suffixed, as kustomize would), and its CRD is not applied (the cluster's stays this
collection's). The whole CRD takeover, at scale, is `make migrate-scale` (docs/dev/migrate-scale.md)."""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from hack.lib.images import REAL_NODE_SELECTOR, built_image
from hack.lib.migration import (
    Snapshot,
    compare,
    create_jobs,
    install_kubeflow,
    job_phase,
    kwok_job,
    list_jobs,
    real_job,
    run_migrate,
    snapshot,
    tell_kwok,
    tell_real,
)
from hack.lib.wait import wait_until
from tests.e2e.conftest import kubeconfig_path
from tests.support.locks import installs_locked
from tests.support.paths import kubectl_path

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("migrate")]

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
OPERATOR_NS = "mpi-migrate-op" + (f"-{_WORKER}" if _WORKER else "")
JOBS_NS = "mpi-migrate-jobs" + (f"-{_WORKER}" if _WORKER else "")
KWOK_JOBS = [f"kw-{i}" for i in range(5)]
REAL = "real-pi"


def _ensure_namespace(core: client.CoreV1Api, name: str) -> None:
    try:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    except ApiException as err:
        if err.status != 409:
            raise


def _delete_cluster_objects(api: client.ApiClient) -> None:
    """The Kubeflow install's cluster-scoped objects (the manifest's names with the namespace as suffix)."""
    rbac = client.RbacAuthorizationV1Api(api)
    for name in ("mpi-operator", "kubeflow-mpijobs-admin", "kubeflow-mpijobs-edit", "kubeflow-mpijobs-view"):
        for delete in (rbac.delete_cluster_role, rbac.delete_cluster_role_binding):
            try:
                delete(f"{name}-{OPERATOR_NS}")
            except ApiException as err:
                if err.status != 404:
                    raise


@pytest.fixture
def kubeflow_world(api: client.ApiClient) -> Iterator[client.CoreV1Api]:
    """The Kubeflow operator (its manifest, its pod on the real node) watching JOBS_NS; removed afterwards with the
    namespaces. Holds the install lock throughout: no other install may run beside it (an operator of all namespaces
    would make the switch refuse, rightly)."""
    core = client.CoreV1Api(api)
    with installs_locked():
        for ns in (OPERATOR_NS, JOBS_NS):
            try:
                core.delete_namespace(ns)
            except ApiException as err:
                if err.status != 404:
                    raise
        wait_until(
            lambda: not [n for n in core.list_namespace().items if n.metadata.name in (OPERATOR_NS, JOBS_NS)],
            180,
            "an earlier run's namespaces gone",
            interval=1,
        )
        _ensure_namespace(core, JOBS_NS)
        install_kubeflow(kubeconfig_path(), kubectl_path(), namespace=OPERATOR_NS, watch_namespace=JOBS_NS, crd=False)
        try:
            yield core
        finally:
            for ns in (JOBS_NS, OPERATOR_NS):
                core.delete_namespace(ns, propagation_policy="Background")
            _delete_cluster_objects(api)


def _phases(api: client.ApiClient) -> dict[str, str]:
    return {j["metadata"]["name"]: job_phase(j) for j in list_jobs(api, JOBS_NS)}


def _assert_kept(api: client.ApiClient, before: Snapshot, what: str) -> Snapshot:
    after = snapshot(api, [JOBS_NS])
    found = compare(before, after)
    assert found == {"recreated": [], "gone": [], "restarted": [], "lost": [], "backwards": []}, f"{what}: {found}"
    return after


def test_switch_to_ours_and_back(
    api: client.ApiClient, kubeflow_world: client.CoreV1Api, tmp_path: pathlib.Path
) -> None:
    core = kubeflow_world
    apps = client.AppsV1Api(api)
    repository, tag = built_image("operator")
    openmpi = ":".join(built_image("openmpi4"))
    wait_until(
        lambda: (apps.read_namespaced_deployment("mpi-operator", OPERATOR_NS).status.available_replicas or 0) >= 1,
        180,
        "the Kubeflow operator available",
        interval=1,
    )
    create_jobs(api, JOBS_NS, [kwok_job(n) for n in KWOK_JOBS] + [real_job(REAL, openmpi)])
    wait_until(
        lambda: set(_phases(api).values()) == {"Running"} and len(_phases(api)) == 6,
        240,
        "the Kubeflow operator running every job",
        interval=1,
    )
    ours = {
        "mpi_operator_image_repository": repository,
        "mpi_operator_image_tag": tag,
        "mpi_operator_image_pull_policy": "Never",
        "mpi_operator_wait_timeout": 180,
    }

    # The preview: the plan, and nothing changed.
    preview = run_migrate(kubeconfig_path(), ours, tmp_path, "--check", "--diff")
    assert preview.returncode == 0, preview.output[-6000:]
    plan = "\n".join(preview.plan())
    assert f"found   Deployment {OPERATOR_NS}/mpi-operator (Kubeflow MPI Operator" in plan
    assert f"watching namespace {JOBS_NS}" in plan
    assert f"setting mpi_operator_node_selector={json.dumps(REAL_NODE_SELECTOR)}" in plan
    assert f"delete Deployment {OPERATOR_NS}/mpi-operator, ServiceAccount {OPERATOR_NS}/mpi-operator" in plan
    assert apps.read_namespaced_deployment("mpi-operator", OPERATOR_NS).spec.replicas == 1
    before = snapshot(api, [JOBS_NS])
    assert len(before.children) == 6 * 4 + 6 * 3  # Service, ConfigMap, Secret, launcher Job; 2 workers, a launcher

    # To ours: the same children, every job reconciled by ours (status.phase).
    switch = run_migrate(kubeconfig_path(), ours, tmp_path)
    assert switch.returncode == 0, switch.output[-8000:]
    assert "went" in switch.output and "without an operator" in switch.output
    deployment = apps.read_namespaced_deployment("mpi-operator", OPERATOR_NS)
    assert deployment.metadata.labels["app.kubernetes.io/managed-by"] == "mpi.operator"
    assert deployment.spec.template.spec.node_selector == REAL_NODE_SELECTOR  # carried from Kubeflow's Deployment
    assert all((j.get("status") or {}).get("phase") == "Running" for j in list_jobs(api, JOBS_NS))
    after = _assert_kept(api, before, "the switch to ours")
    assert core.read_namespaced_config_map("mpi-operator-migration", OPERATOR_NS).data["replicas"] == "1"

    # Two jobs finish under ours.
    tell_kwok(api, JOBS_NS, KWOK_JOBS[:2])
    wait_until(
        lambda: [_phases(api)[n] for n in KWOK_JOBS[:2]] == ["Succeeded", "Succeeded"], 120, "ours finishing two jobs"
    )
    after = snapshot(api, [JOBS_NS])

    # Back to Kubeflow's: its Deployment from the saved objects, the same children again.
    # Which of ours goes back: other tests' installs of ours run beside this one (as a cluster with more than one
    # would have them), and the switch refuses to guess.
    back = run_migrate(
        kubeconfig_path(), {"mpi_operator_migrate_to": "kubeflow", "mpi_operator_namespace_name": OPERATOR_NS}, tmp_path
    )
    assert back.returncode == 0, back.output[-8000:]
    deployment = apps.read_namespaced_deployment("mpi-operator", OPERATOR_NS)
    assert deployment.metadata.labels.get("kustomize.component") == "mpi-operator"
    assert deployment.spec.template.spec.containers[0].image.startswith("localhost/kubeflow-operator:")
    _assert_kept(api, after, "the switch back")

    # The rest finish under Kubeflow's: the kwok ones when told, the real one's mpirun once its ranks may compute.
    tell_kwok(api, JOBS_NS, KWOK_JOBS[2:])
    tell_real(kubeconfig_path(), kubectl_path(), JOBS_NS, REAL)
    wait_until(lambda: set(_phases(api).values()) == {"Succeeded"}, 240, "every job Succeeded under Kubeflow's")
    selector = f"training.kubeflow.org/job-name={REAL},training.kubeflow.org/job-role=launcher"
    launcher = core.list_namespaced_pod(JOBS_NS, label_selector=selector).items[0]
    log = core.read_namespaced_pod_log(launcher.metadata.name, JOBS_NS)
    assert log.count(f"on host {REAL}-worker-") == 4, log
