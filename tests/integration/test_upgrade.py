"""Upgrade from the previous release to this tree with playbooks/install.yml, as docs/upgrade.md tells users to:
the previous release (made from git: `git archive` of MPI_UPGRADE_FROM, else the newest tag, else main's a028a1a)
installs its CRD and Deployment and its operator runs jobs; then this tree's install.yml upgrades the CRD and the
Deployment and this tree's operator takes over. Running jobs keep running, no child is recreated (same UIDs), the
stored MPIJobs read in both API versions, and the previous operator still reconciles them afterwards (rollback).

The operator pods of an install run on simulated (kwok) nodes here, so each release's operator code runs as a local
process from its own tree (`python -m mpijob_operator` with that tree's collection), the way `make run` runs it."""

from __future__ import annotations

import io
import os
import pathlib
import subprocess
import tarfile
from collections.abc import Callable

import pytest
import yaml
from kubernetes import client

from hack.lib.operator import OperatorProcess
from hack.lib.wait import wait_until
from tests.integration._fixtures.install import local_cluster_vars
from tests.support.ansible import PlaybookRun, ansible_env, run_playbook
from tests.support.mpijob import has_condition, new_mpijob, owned_children, wait_condition
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FALLBACK_PREVIOUS = "a028a1a"  # main before issue 14 (install diagnostics, metrics Service, upgrade docs)
RUN = {"kwok.mpi.operator/outcome": "run"}  # a simulated pod that keeps running, even the launcher's
# Other test sessions on the shared cluster rewrite the MPIJob CRD with their copy (a client-side replace), which a
# server-side apply of another version conflicts with: both releases take the CRD over (a user, with one installer
# owning the CRD, needs no such flag).
ADOPT_CRD = {"mpi_operator_adopt_crd": True}


def previous_ref() -> str:
    if os.environ.get("MPI_UPGRADE_FROM"):
        return os.environ["MPI_UPGRADE_FROM"]
    tag = subprocess.run(["git", "-C", str(ROOT), "describe", "--tags", "--abbrev=0"], capture_output=True, text=True)
    return tag.stdout.strip() if tag.returncode == 0 else FALLBACK_PREVIOUS


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The previous release's tree (git archive), with a collections path: itself as mpi.operator, plus this
    checkout's kubernetes.core."""
    ref = previous_ref()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"previous release {ref} is not in this repository: {archive.stderr.decode().strip()}")
    tree = tmp_path_factory.mktemp("previous-release")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    collections = tree / ".collections/ansible_collections"
    (collections / "mpi").mkdir(parents=True)
    (collections / "mpi/operator").symlink_to(tree)
    (collections / "kubernetes").mkdir()
    (collections / "kubernetes/core").symlink_to(ROOT / ".collections/ansible_collections/kubernetes/core")
    (tree / "RELEASE").write_text(ref + "\n")
    return tree


def tree_playbook(tree: pathlib.Path, name: str, kubeconfig: str, work: pathlib.Path) -> PlaybookRun:
    """A playbook of `tree` with that tree's collection and the local cluster's install variables."""
    env = ansible_env(
        kubeconfig, ANSIBLE_CONFIG=str(tree / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(tree / ".collections")
    )
    return run_playbook(
        tree / "playbooks" / name,
        env,
        variables={**local_cluster_vars(kubeconfig), **ADOPT_CRD},
        vars_file=work / f"{tree.name}-{name}.json",
        cwd=tree,
    )


def child_uids(api: client.ApiClient, namespace: str) -> dict[str, str]:
    """kind/name -> uid of every child the jobs in `namespace` have."""
    return {f"{c.kind}/{c.name}": c.uid for c in owned_children(api, namespace) if not c.deleting}


def reconciled(op: OperatorProcess, jobs: int) -> Callable[[], bool]:
    """It reconciled the jobs and is idle: whatever it was going to do to their children, it has done."""
    return lambda: (op.metric("mpi_operator_reconciles_total", {"result": "ok"}) or 0) >= jobs and op.idle()


@pytest.mark.serial  # puts the previous release's CRD on the cluster: every concurrent test would meet its schema
def test_upgrade_from_the_previous_release_keeps_running_jobs(
    previous: pathlib.Path,
    kubeconfig: str,
    api_client: client.ApiClient,
    namespace: str,
    playbook: Callable[..., PlaybookRun],
    uninstalled: None,
    tmp_path: pathlib.Path,
    operator_factory: Callable[..., OperatorProcess],
) -> None:
    def operator(tree: pathlib.Path, name: str) -> OperatorProcess:
        return operator_factory("--namespace", namespace, "--no-leader-elect", name=name, root=tree, ready=90)

    custom = client.CustomObjectsApi(api_client)
    # The previous release: its CRD and Deployment, its operator, two jobs (v2beta1 and v1) running.
    tree_playbook(previous, "install.yml", kubeconfig, tmp_path).expect_ok()
    old = operator(previous, "previous")
    custom.create_namespaced_custom_object(
        "kubeflow.org", "v2beta1", namespace, "mpijobs", new_mpijob("alpha", workers=2, launcher_annotations=RUN)
    )
    v1 = yaml.safe_load((ROOT / "tests/integration/manifests/openmpi-helloworld.v1.yaml").read_text())
    for role in ("Launcher", "Worker"):
        v1["spec"]["mpiReplicaSpecs"][role]["template"].setdefault("metadata", {})["annotations"] = RUN
    v1["metadata"]["name"] = "beta"
    custom.create_namespaced_custom_object("kubeflow.org", "v1", namespace, "mpijobs", v1)
    for name in ("alpha", "beta"):
        wait_condition(api_client, namespace, name, "Running", 120)
    workers = 2 + v1["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    # Per job a Service, ConfigMap, Secret, launcher Job and its pod; and the workers.
    wait_until(lambda: len(child_uids(api_client, namespace)) == 2 * 5 + workers, 30, what="every child")
    before = child_uids(api_client, namespace)
    old.stop()

    # The upgrade: this tree's install.yml (CRD + Deployment), then this tree's operator.
    upgrade = playbook("install.yml", extra_vars=ADOPT_CRD).expect_ok()
    assert upgrade.recap["changed"] > 0
    for version in ("v1", "v2beta1"):
        stored = custom.list_namespaced_custom_object("kubeflow.org", version, namespace, "mpijobs")["items"]
        assert sorted(j["metadata"]["name"] for j in stored) == ["alpha", "beta"], version
        assert all(has_condition(j, "Running") for j in stored), version
    new = operator(ROOT, "current")
    wait_until(reconciled(new, 2), 90, what="both jobs reconciled by the upgraded operator")
    assert child_uids(api_client, namespace) == before
    for name in ("alpha", "beta"):
        job = custom.get_namespaced_custom_object("kubeflow.org", "v2beta1", namespace, "mpijobs", name)
        assert has_condition(job, "Running") and not has_condition(job, "Failed"), job.get("status")
    new.stop()

    # Rollback: the previous operator reads what the upgraded one wrote, and recreates nothing either.
    back = operator(previous, "previous-again")
    wait_until(reconciled(back, 2), 90, what="both jobs reconciled by the previous operator again")
    assert child_uids(api_client, namespace) == before
    back.stop()


def test_previous_release_tree_is_the_one_asked_for(previous: pathlib.Path) -> None:
    ref = (previous / "RELEASE").read_text().strip()
    want = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:roles/crds/files/mpijobs.kubeflow.org.yaml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (previous / "roles/crds/files/mpijobs.kubeflow.org.yaml").read_text() == want
    assert (previous / ".collections/ansible_collections/mpi/operator/playbooks/install.yml").exists()
    assert (previous / ".collections/ansible_collections/kubernetes/core/MANIFEST.json").exists()
