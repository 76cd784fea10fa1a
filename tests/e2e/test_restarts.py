"""A failure policy on the real node: the checkpointing example (examples/local/checkpoint-restart.yaml, mpi4py on
OpenMPI 4, its checkpoint on a claim bound to a local PersistentVolume) loses a rank mid-run; the operator restarts
the whole world, and the new world resumes at the step the old one had checkpointed and Succeeds."""

from __future__ import annotations

import re
import subprocess
import time
import uuid

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.paths import ROOT, kubectl_path

from .conftest import JOBS_NAMESPACE, kubeconfig_path

pytestmark = pytest.mark.e2e
EXAMPLE = ROOT / "examples/local/checkpoint-restart.yaml"
STEP = re.compile(r"^attempt (\d+): step (\d+)/(\d+) done", re.MULTILINE)
RESUMED = re.compile(r"^attempt (\d+): \d+ ranks, resuming at step (\d+)", re.MULTILINE)


def example(suffix: str) -> list[dict]:
    """The example's documents, named apart (its PersistentVolume's directory too) so that runs never share one."""
    docs = yaml.safe_load(EXAMPLE.read_text())["items"]
    name = f"checkpoint-restart-{suffix}"
    for doc in docs:
        doc["metadata"]["name"] = name
    pv, pvc, _cm, job = docs
    pv["spec"]["hostPath"]["path"] = f"/var/tmp/mpi-e2e-checkpoint-{suffix}"
    pvc["spec"]["volumeName"] = name
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    for volume in worker["volumes"]:
        if "configMap" in volume:
            volume["configMap"]["name"] = name
        else:
            volume["persistentVolumeClaim"]["claimName"] = name
    return docs


def test_a_killed_rank_restarts_the_world_which_resumes_from_its_checkpoint(api, jobs) -> None:
    core = client.CoreV1Api(api)
    suffix = uuid.uuid4().hex[:5]
    pv, pvc, cm, job = example(suffix)
    core.create_persistent_volume(pv)
    try:
        core.create_namespaced_persistent_volume_claim(JOBS_NAMESPACE, pvc)
        core.create_namespaced_config_map(JOBS_NAMESPACE, cm)
        started = time.monotonic()
        version, name = jobs.start(job)
        # rank 0 has checkpointed a few steps: kill the rank on the second worker
        last = 0

        def steps_done() -> int:
            found = [int(m[2]) for m in STEP.finditer(jobs.launcher_log_so_far(name))]
            return max(found, default=0)

        while (last := steps_done()) < 4:
            assert time.monotonic() - started < 180, f"no progress: {jobs.describe(name)}"
            time.sleep(1)
        before_kill = jobs.launcher_log_so_far(name)
        killed = subprocess.run(
            [
                kubectl_path(),
                "--kubeconfig",
                kubeconfig_path(),
                "-n",
                JOBS_NAMESPACE,
                "exec",
                f"{name}-worker-1",
                "--",
                "pkill",
                "-9",
                "-f",
                "train.py",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert killed.returncode == 0, killed.stderr
        killed_at = time.monotonic()
        done = jobs.wait(version, name, started, timeout=420)
        status = done.job["status"]
        assert done.condition("Succeeded"), (status, done.launcher_log)
        assert status["restartCount"] == 1 and status["restarts"] == {"program": 1, "disruption": 0}, status
        resumed = RESUMED.search(done.launcher_log)
        assert resumed and resumed[1] == "1", done.launcher_log
        # the new world starts where the old one's last checkpoint was (at least the step seen before the kill)
        assert int(resumed[2]) >= last, (last, done.launcher_log)
        steps = [(int(m[1]), int(m[2])) for m in STEP.finditer(done.launcher_log)]
        assert steps[0] == (1, int(resumed[2]) + 1) and steps[-1] == (1, 20), done.launcher_log
        print(
            f"\nrank killed after step {last}; restarted, resumed at step {resumed[2]}; "
            f"Succeeded {done.seconds - (killed_at - started):.0f} s after the kill ({done.seconds:.0f} s in all)"
        )
        # the launcher's log around the restart: attempt 0's last checkpoints, attempt 1's start
        ours = re.compile(r"^attempt \d+: .*$", re.MULTILINE)
        print("\n".join(["attempt 0's launcher:", *ours.findall(before_kill)[-2:]]))
        print("\n".join(["attempt 1's launcher:", *ours.findall(done.launcher_log)[:3]]))
    finally:
        for delete in (
            lambda: core.delete_namespaced_config_map(f"checkpoint-restart-{suffix}", JOBS_NAMESPACE),
            lambda: core.delete_namespaced_persistent_volume_claim(f"checkpoint-restart-{suffix}", JOBS_NAMESPACE),
            lambda: core.delete_persistent_volume(f"checkpoint-restart-{suffix}"),
        ):
            try:
                delete()
            except ApiException as err:
                if err.status != 404:
                    raise
