"""Seed 000's elastic Horovod job on real pods (examples/local/horovod-elastic.yaml): resized while it trains, with
kubectl patch, the mpijob module and kubectl scale. horovodrun picks the workers up from /etc/mpi/discover_hosts.sh,
which the operator rewrites as workers come and go; the training script's rank 0 prints every world size."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from tests.e2e.conftest import GROUP, JOBS_NAMESPACE, ROOT, Jobs, Outcome, _ansible_env, kubeconfig_path

# The first build of the image compiles Horovod (tens of minutes on a busy 2-core machine); later ones are cached.
# Opt-in (MPI_E2E_ELASTIC=1 make e2e) until issue 17 is closed: the first build compiles Horovod (about 30 min cold
# on a loaded 2-core machine) and the module + kubectl scale run passed 1 of 3 (docs/real-node.md).
pytestmark = [pytest.mark.realnode, pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.skipif(os.environ.get("MPI_E2E_ELASTIC") != "1",
                                 reason="elastic Horovod e2e is opt-in: MPI_E2E_ELASTIC=1 make e2e")]

EXAMPLE = ROOT / "examples/local/horovod-elastic.yaml"
# What elastic_train.py's rank 0 prints when training (re)starts, and at the end.
WORLD = re.compile(r"world size (\d+) \(epoch (\d+), batch (\d+)\): ([^\n]*)")
EPOCH = re.compile(r"epoch (\d+) done: world size (\d+)")
FINISHED = re.compile(r"training finished: (\d+) epochs, world size (\d+)")
EPOCHS = int(os.environ.get("MPI_E2E_ELASTIC_EPOCHS", "100"))
RESIZE_TIMEOUT_S = 240.0
JOB_TIMEOUT_S = 1200.0


@pytest.fixture(scope="session")
def horovod_image() -> str:
    """Builds (cached: the Horovod wheel and the image) and imports localhost/mpi-horovod:local."""
    started = time.monotonic()
    out = subprocess.run(["nice", "bash", str(ROOT / "hack/images/build.sh"), "--print", "horovod"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    print(f"\n{out[0]} ready in {time.monotonic() - started:.0f} s")
    return out[0]


def elastic_job(image: str) -> dict:
    """The example as users apply it, failing at the launcher's first error instead of retrying."""
    job = yaml.safe_load(EXAMPLE.read_text())
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["image"] == image
    args = launcher["args"]
    args[args.index("--epochs") + 1] = str(EPOCHS)
    job["spec"]["runPolicy"] = {"backoffLimit": 0}
    return job


def kubectl(*args: str) -> str:
    proc = subprocess.run(["kubectl", "--kubeconfig", kubeconfig_path(), "-n", JOBS_NAMESPACE, *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def mpijob_module(**params: object) -> dict:
    """One ad-hoc run of the mpi.operator.mpijob module; returns its result."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m", "mpi.operator.mpijob",
           "-a", json.dumps({"namespace": JOBS_NAMESPACE, **params}), "-o"]
    proc = subprocess.run(cmd, cwd=ROOT, env=_ansible_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.split("=>", 1)[1])


class Resizes:
    """Watches the launcher log of one running elastic job for the world sizes its rank 0 reports."""

    def __init__(self, jobs: Jobs, version: str, name: str) -> None:
        self.jobs, self.version, self.name, self.seen = jobs, version, name, 0

    def failed(self) -> bool:
        job = self.jobs.custom.get_namespaced_custom_object(GROUP, self.version, JOBS_NAMESPACE, "mpijobs", self.name)
        return any(c["type"] == "Failed" and c["status"] == "True" for c in job.get("status", {}).get("conditions", []))

    def next_world(self, size: int, timeout: float = RESIZE_TIMEOUT_S) -> list[str]:
        """Waits for a restart with `size` ranks reported after the last one seen; returns the ranks' hosts."""
        deadline = time.monotonic() + timeout
        log = ""
        while time.monotonic() < deadline:
            log = self.jobs.launcher_log_so_far(self.name)
            for match in list(WORLD.finditer(log))[self.seen:]:
                self.seen += 1
                if int(match[1]) == size:
                    return match[4].split()
            if FINISHED.search(log) or self.failed():
                break
            time.sleep(2)
        raise AssertionError(f"no 'world size {size}' in the launcher log of {self.name} in time:\n{log[-4000:]}\n"
                             f"{self.jobs.describe(self.name)}")


def check_resized_run(outcome: Outcome) -> None:
    """Succeeded, with the world sizes 2 -> 3 -> 1 in that order and epochs trained after each resize."""
    log = outcome.launcher_log
    assert outcome.condition("Succeeded"), (outcome.job.get("status"), log[-4000:])
    assert outcome.launcher_exit_code == 0
    sizes = [int(m[1]) for m in WORLD.finditer(log)]
    # 2 first, then 3, then 1 to the end (a resize may pass through an intermediate size, e.g. 3 -> 2 -> 1)
    assert sizes[0] == 2 and 3 in sizes and sizes[-1] == 1 and 1 not in sizes[: sizes.index(3)], sizes
    epoch_sizes = [int(m[2]) for m in EPOCH.finditer(log)]
    assert {2, 3, 1} <= set(epoch_sizes), epoch_sizes  # whole epochs trained at every size
    finished = FINISHED.search(log)
    assert finished and finished[1] == str(EPOCHS) and finished[2] == "1", log[-2000:]
    shown = [line for line in log.splitlines() if WORLD.search(line) or FINISHED.search(line)]
    print("\n" + "\n".join(shown) + f"\n{outcome.name}: Succeeded in {outcome.seconds:.0f} s")


def replicas_patch(n: int) -> str:
    return json.dumps({"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": n}}}})


def test_elastic_horovod_resized_with_kubectl_patch(jobs: Jobs, horovod_image: str) -> None:
    started = time.monotonic()
    version, name = jobs.start(elastic_job(horovod_image))
    watch = Resizes(jobs, version, name)
    assert sorted(watch.next_world(2)) == [f"{name}-worker-0", f"{name}-worker-1"]

    kubectl("patch", f"mpijobs.{version}.kubeflow.org", name, "--type", "merge", "-p", replicas_patch(3))
    assert sorted(watch.next_world(3)) == [f"{name}-worker-{i}" for i in range(3)]  # worker-2 joined

    kubectl("patch", f"mpijobs.{version}.kubeflow.org", name, "--type", "merge", "-p", replicas_patch(1))
    assert watch.next_world(1) == [f"{name}-worker-0"]  # training goes on with the survivor

    check_resized_run(jobs.wait(version, name, started, JOB_TIMEOUT_S))


def test_elastic_horovod_resized_with_the_module_and_kubectl_scale(jobs: Jobs, horovod_image: str) -> None:
    started = time.monotonic()
    version, name = jobs.start(elastic_job(horovod_image))
    watch = Resizes(jobs, version, name)
    assert len(watch.next_world(2)) == 2

    result = mpijob_module(name=name, workers=3)
    assert result["changed"] and result["summary"]["workers"] == 3, result
    assert sorted(watch.next_world(3)) == [f"{name}-worker-{i}" for i in range(3)]

    kubectl("scale", f"mpijobs.{version}.kubeflow.org", name, "--replicas", "1")
    assert watch.next_world(1) == [f"{name}-worker-0"]

    check_resized_run(jobs.wait(version, name, started, JOB_TIMEOUT_S))
