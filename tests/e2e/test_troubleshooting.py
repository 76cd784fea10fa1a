"""docs/troubleshooting.md's symptoms, each made for real on the local cluster (the real node where a pod must run),
and what the user sees: the lines `playbooks/submit.yml` prints. Each assertion's text is quoted on the page, so the
page and the product cannot drift apart (test_the_page_quotes_what_the_runs_print)."""

from __future__ import annotations

import copy
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from hack.lib.images import REAL_NODE_SELECTOR, REAL_NODE_TOLERATION, STAND_INS, stand_in
from tests.e2e.conftest import JOBS_NAMESPACE, kubeconfig_path
from tests.support.ansible import ansible_env, run_playbook
from tests.support.paths import ROOT, kubectl_path

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e")]

PAGE = ROOT / "docs/troubleshooting.md"
# What each symptom's run must print; the page quotes each of these (its "What you see" blocks).
SEEN = {
    "resources": ["(waiting: too-big-worker-0 unschedulable: 0/", "Insufficient cpu"],
    "image": ["(waiting: bad-image-worker-0 ", 'failed to pull and unpack image "localhost/no-such-image:1"'],
    "root": ["(gone, kept in ConfigMap as-root-record)", "--allow-run-as-root"],
    "ssh-keys": ["(waiting: keys-for-root-worker-0 failed: Error, exit code"],
    "dns": [
        "(waiting: no-dns-launcher-",
        " launch gate: 2 of 2 workers did not answer in 20 s: no-dns-worker-0 (does not resolve), no-dns-worker-1 (does"
        " not resolve); starting the launcher anyway)",
    ],
}


def base(name: str, image: str) -> dict[str, Any]:
    pod = {
        "nodeSelector": REAL_NODE_SELECTOR,
        "tolerations": [REAL_NODE_TOLERATION],
        "containers": [{"name": "main", "image": image}],
    }
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"backoffLimit": 0, "cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": copy.deepcopy(pod)}},
                "Worker": {"replicas": 2, "template": {"spec": copy.deepcopy(pod)}},
            },
        },
    }


def submit(job: dict, tmp_path: pathlib.Path, timeout: int, before_delete: Callable[[], None] | None = None) -> str:
    """submit.yml as a user runs it, waiting at most `timeout` s; what it printed, with the job deleted after
    (`before_delete` called first)."""
    src = tmp_path / f"{job['metadata']['name']}.yaml"
    src.write_text(yaml.safe_dump(job))
    common = ["-e", f"mpijob_namespace={JOBS_NAMESPACE}", "-e", f"ansible_python_interpreter={sys.executable}"]
    env = ansible_env(kubeconfig_path())
    playbook = ROOT / "playbooks/submit.yml"
    try:
        run = run_playbook(
            playbook, env, "-e", f"mpijob_src={src}", "-e", f"mpijob_wait_timeout={timeout}", *common, timeout=600
        )
        print(f"\n---- {src.name}\n{run.output[-5000:]}")
        assert run.returncode != 0, "the job was meant to fail or time out"
        return run.output
    finally:
        if before_delete is not None:
            before_delete()
        run_playbook(playbook, env, "-e", f"mpijob_src={src}", "-e", "mpijob_state=absent", *common).expect_ok()


def launcher_args(job: dict, args: list[str]) -> dict:
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"] = args
    return job


def test_workers_that_fit_no_node(operator: None, tmp_path: pathlib.Path) -> None:
    job = launcher_args(base("too-big", "localhost/mpi-openmpi4:local"), ["mpirun", "-np", "2", "/opt/mpi/pi"])
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"requests": {"cpu": "64"}}
    out = submit(job, tmp_path, 20)
    for seen in SEEN["resources"]:
        assert seen in out, out[-4000:]


def test_a_worker_image_that_cannot_be_pulled(operator: None, tmp_path: pathlib.Path) -> None:
    job = launcher_args(base("bad-image", "localhost/mpi-openmpi4:local"), ["mpirun", "-np", "2", "/opt/mpi/pi"])
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "localhost/no-such-image:1"
    out = submit(job, tmp_path, 30)
    for seen in SEEN["image"]:
        assert seen in out, out[-4000:]


def test_mpirun_as_root(operator: None, tmp_path: pathlib.Path) -> None:
    job = launcher_args(base("as-root", "localhost/mpi-openmpi4:local"), ["mpirun", "-np", "2", "/opt/mpi/pi"])
    out = submit(job, tmp_path, 180)
    for seen in SEEN["root"]:
        assert seen in out, out[-4000:]


def test_a_non_root_image_with_the_keys_where_root_looks(operator: None, tmp_path: pathlib.Path) -> None:
    """Kubeflow's pi example without its sshAuthMountPath: its pods run as mpiuser, the keys are mounted in /root/.ssh."""
    for reference in STAND_INS:
        stand_in(reference)
    job = yaml.safe_load((ROOT / "examples/v2beta1/pi.yaml").read_text())
    del job["spec"]["sshAuthMountPath"]
    job["metadata"]["name"] = "keys-for-root"
    for role in ("Launcher", "Worker"):
        spec = job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]
        spec.update(nodeSelector=REAL_NODE_SELECTOR, tolerations=[REAL_NODE_TOLERATION])
    job["spec"].setdefault("runPolicy", {})["backoffLimit"] = 0
    out = submit(job, tmp_path, 30)
    for seen in SEEN["ssh-keys"]:
        assert seen in out, out[-4000:]


def test_a_launcher_that_cannot_resolve_its_workers(operator: None, tmp_path: pathlib.Path) -> None:
    """The launcher's pod on the node's resolver (dnsPolicy: Default, as a template copied from a hostNetwork pod has
    it): the workers' names, cluster DNS names, do not resolve there. The launch gate waits its timeout (here 20 s),
    then the launcher starts anyway; the job stays Running. What says why: the gate's log and the launcher's."""
    job = launcher_args(
        base("no-dns", "localhost/mpi-openmpi4:local"), ["mpirun", "--allow-run-as-root", "-np", "2", "/opt/mpi/pi"]
    )
    job["metadata"]["annotations"] = {"mpi.operator/launch-gate-timeout": "20"}
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["dnsPolicy"] = "Default"
    logs: dict[str, str] = {}

    def read_logs() -> None:
        kubectl = [kubectl_path(), "--kubeconfig", kubeconfig_path(), "-n", JOBS_NAMESPACE]
        pod = subprocess.run(
            [*kubectl, "get", "pods", "-l", "training.kubeflow.org/job-role=launcher", "-o", "name"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        ).stdout.split()
        for container in ("launch-gate", "main"):
            logs[container] = subprocess.run(
                [*kubectl, "logs", *pod[:1], "-c", container], capture_output=True, text=True, check=False, timeout=60
            ).stdout
            print(f"---- {container}\n{logs[container]}")

    out = submit(job, tmp_path, 60, before_delete=read_logs)
    assert "no-dns: Running, workers 2/2 running" in out, out[-4000:]
    for seen in SEEN["dns"]:
        assert seen in out, out[-4000:]
    assert "no-dns-worker-0 (does not resolve)" in logs["launch-gate"], logs
