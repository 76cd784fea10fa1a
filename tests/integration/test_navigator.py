"""The execution environment of examples/ee, built by ansible-builder with podman (hack/build/ee.sh, `make ee`), and
the install, submit and sync playbooks run in it by `ansible-navigator run` against the local cluster, the way an
ansible-navigator user runs them: the collection's playbooks by name, a playbook of the user's own project, the
kubeconfig mounted into the EE and named by K8S_AUTH_KUBECONFIG, the cluster reached on the host's network."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest
import yaml
from kubernetes import client

from tests.integration._fixtures.install import INSTALL_NAMESPACE, local_cluster_vars
from tests.support.ansible import PlaybookRun, ansible_env, tool
from tests.support.mpijob import get_mpijob, has_condition
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("installs")]

# ansible-runner's event markers in a stdout that is not a terminal (ESC[K base64 ESC[<n>D), then colours.
_MARKERS = re.compile(r"\x1b\[K[A-Za-z0-9+/=]+\x1b\[\d+D|\x1b\[[0-9;]*[A-Za-z]")


@pytest.fixture(scope="module")
def ee_image() -> str:
    """The EE, built once per run (hack/build/ee.sh waits for a build already under way: its lock)."""
    if os.geteuid() != 0:
        pytest.skip("the EE's build needs root (podman, debootstrap for its base image)")
    proc = subprocess.run(
        ["bash", str(ROOT / "hack/build/ee.sh")], capture_output=True, text=True, timeout=1500, check=False
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture
def navigator(ee_image: str, kubeconfig: str, tmp_path: pathlib.Path) -> Callable[..., PlaybookRun]:
    """navigator(PLAYBOOK, variables, *args): docs/install.md's `ansible-navigator run` in the EE, from the user's
    project folder (the current directory: navigator mounts it), the kubeconfig's folder mounted at /kube; beside the
    page's flags only the container engine, no artifact, the log file and the variables (a file in the project)."""
    project, kube = tmp_path / "project", tmp_path / "kube"
    for folder in (project, kube):
        folder.mkdir()
        folder.chmod(0o755)  # the EE runs as user 1000
    shutil.copyfile(kubeconfig, kube / "config")
    (kube / "config").chmod(0o644)
    count = 0

    def run(playbook: str, variables: dict, *args: str) -> PlaybookRun:
        nonlocal count
        count += 1
        vars_file = project / f"vars-{count}.yml"
        vars_file.write_text(yaml.safe_dump(variables))
        vars_file.chmod(0o644)
        cmd = [tool("ansible-navigator"), "run", playbook, "--eei", ee_image, "--pp", "never", "--mode", "stdout"]
        cmd += ["--eev", f"{kube}:/kube", "--senv", "K8S_AUTH_KUBECONFIG=/kube/config", "--co=--net=host"]
        cmd += ["--ce", "podman", "--pae", "false", "--lf", str(tmp_path / f"navigator-{count}.log")]
        cmd += ["--senv", "ANSIBLE_NOCOLOR=1", "-e", f"@{vars_file.name}", *args]
        # A user's environment: no ANSIBLE_* of this checkout's (navigator hands them to the EE, where its paths
        # do not exist)
        env = {k: v for k, v in ansible_env(None).items() if not k.startswith("ANSIBLE_")}
        proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False)
        return PlaybookRun(cmd, proc.returncode, _MARKERS.sub("", proc.stdout + proc.stderr))

    run.project = project  # type: ignore[attr-defined]
    return run


@pytest.fixture
def sync_namespace(api_client: client.ApiClient, namespace: str) -> Iterator[str]:
    """A second namespace: the GitOps example's job is named pi, as submit's example is."""
    core = client.CoreV1Api(api_client)
    name = f"{namespace[:55]}-sync"
    core.create_namespace({"metadata": {"name": name, "labels": {"mpi.operator/test": "true"}}})
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def recap_line(run: PlaybookRun) -> str:
    """The PLAY RECAP line, printed too (the junit XML keeps it with the test's output)."""
    line = next(line for line in run.output.splitlines() if line.startswith("localhost ") and " ok=" in line)
    print(f"{run.args[2]}: {line}")
    return line


def test_install_submit_and_sync_run_in_the_ee_by_ansible_navigator(
    navigator: Callable[..., PlaybookRun],
    uninstalled: None,
    operator_crd: None,
    running_operator: object,
    api_client: client.ApiClient,
    namespace: str,
    sync_namespace: str,
    record_property: Callable[[str, object], None],
) -> None:
    project: pathlib.Path = navigator.project  # type: ignore[attr-defined]

    # The operator, installed by the collection's playbook by name (as docs/install.md runs it)
    install = navigator("mpi.operator.install", local_cluster_vars("")).expect_ok()
    assert install.recap["changed"] > 0 and install.recap["failed"] == 0
    record_property("install_recap", recap_line(install))
    deployment = client.AppsV1Api(api_client).read_namespaced_deployment("mpi-operator", INSTALL_NAMESPACE)
    assert deployment.status.available_replicas == 1

    # A job, submitted and waited for by the collection's submit playbook, driven by the operator
    # (the page's job file is the user's own: here the local cluster's pi, examples/local/pi.yaml)
    shutil.copyfile(ROOT / "examples/local/pi.yaml", project / "job.yaml")
    (project / "job.yaml").chmod(0o644)
    submit = navigator(
        "mpi.operator.submit", {"mpijob_namespace": namespace, "mpijob_poll_interval": 1}, "-e", "mpijob_src=job.yaml"
    ).expect_ok()
    record_property("submit_recap", recap_line(submit))
    assert f'"msg": "{namespace}/pi: Succeeded, workers' in submit.output, submit.output[-4000:]
    assert has_condition(get_mpijob(api_client, namespace, "pi"), "Succeeded")

    # The GitOps example, a playbook of the user's own project (a copy of examples/gitops), synced twice
    shutil.copytree(ROOT / "examples/gitops", project / "gitops")
    subprocess.run(["chmod", "-R", "a+rX", str(project / "gitops")], check=True)
    sync_vars = {"mpijob_sync_namespace": sync_namespace}
    sync = navigator("gitops/site.yml", sync_vars).expect_ok()
    assert sync.recap["changed"] == 1, sync.output[-4000:]
    record_property("sync_recap", recap_line(sync))
    job = get_mpijob(api_client, sync_namespace, "pi")
    assert job and job["metadata"]["labels"]["mpi.operator/sync-source"] == "example-jobs"
    navigator("gitops/site.yml", sync_vars).expect_unchanged()

    navigator("mpi.operator.uninstall", local_cluster_vars("")).expect_ok()
    assert not client.AppsV1Api(api_client).list_namespaced_deployment(INSTALL_NAMESPACE).items
