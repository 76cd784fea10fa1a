"""The Helm chart's elastic Horovod job (tensorflow-mnist-elastic) on real pods (examples/local/horovod-elastic.yaml): resized while it trains, with
kubectl patch, the mpijob module and kubectl scale. horovodrun picks the workers up from /etc/mpi/discover_hosts.sh,
which the operator rewrites as workers come and go; the training script's rank 0 prints every world size."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest
import yaml

from tests.e2e.conftest import GROUP, JOBS_NAMESPACE, FinishedJob, Jobs, kubeconfig_path
from tests.support.ansible import ansible_env, run_module
from tests.support.paths import ROOT

# Part of `make e2e` and `make test` (their times: docs/dev/testing.md); MPI_E2E_ELASTIC=0 leaves them out. The first
# build of the image compiles Horovod, once.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(
        os.environ.get("MPI_E2E_ELASTIC") == "0", reason="MPI_E2E_ELASTIC=0: the elastic Horovod e2e tests are left out"
    ),
    pytest.mark.xdist_group("e2e-elastic"),
]  # its own worker and operator, beside the other e2e tests

EXAMPLE = ROOT / "examples/local/horovod-elastic.yaml"
# What elastic_train.py's rank 0 prints when training (re)starts, and at the end.
WORLD = re.compile(r"world size (\d+) \(epoch (\d+), batch (\d+)\): ([^\n]*)")
EPOCH = re.compile(r"epoch (\d+) done: world size (\d+)")
FINISHED = re.compile(r"training finished: (\d+) epochs, world size (\d+)")
T = TypeVar("T")
EPOCHS = int(os.environ.get("MPI_E2E_ELASTIC_EPOCHS", "100"))
RESIZE_TIMEOUT_S = 240.0
JOB_TIMEOUT_S = 1200.0


@pytest.fixture(scope="session")
def horovod_image() -> str:
    """Builds (cached: the Horovod wheel and the image) and imports localhost/mpi-horovod:local."""
    started = time.monotonic()
    out = subprocess.run(
        ["nice", "bash", str(ROOT / "hack/build/images/build.sh"), "--print", "horovod"],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.split()
    print(f"\n{out[0]} ready in {time.monotonic() - started:.0f} s")
    return out[0]


def elastic_job(image: str) -> dict:
    """The example as users apply it, failing at the launcher's first error instead of retrying."""
    job = yaml.safe_load(EXAMPLE.read_text())
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["image"] == image
    args = launcher["args"]
    args[args.index("--epochs") + 1] = str(EPOCHS)
    # The elastic driver's own log (hosts found, workers recorded, hosts blacklisted, resets) for a failed run's record.
    args[1:1] = ["--log-level", "INFO"]
    job["spec"]["runPolicy"] = {"backoffLimit": 0}
    return job


def kubectl(*args: str) -> str:
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig_path(), "-n", JOBS_NAMESPACE, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def mpijob_module(**params: object) -> dict:
    """One ad-hoc run of the mpi.operator.mpijob module; returns its result."""
    result = run_module("mpi.operator.mpijob", {"namespace": JOBS_NAMESPACE, **params}, ansible_env(kubeconfig_path()))
    assert not result["failed"], result
    return result


class Resizes:
    """Watches the launcher log of one running elastic job for the world sizes its rank 0 reports."""

    def __init__(self, jobs: Jobs, version: str, name: str) -> None:
        self.jobs, self.version, self.name = jobs, version, name
        self.seen, self.after = 0, 0  # world-size lines seen so far, and where the last one ends
        self.longest = (
            ""  # the longest launcher log seen: a restarted or deleted launcher container takes its log along
        )

    def failed(self) -> bool:
        job = self.jobs.custom.get_namespaced_custom_object(GROUP, self.version, JOBS_NAMESPACE, "mpijobs", self.name)
        return any(c["type"] == "Failed" and c["status"] == "True" for c in job.get("status", {}).get("conditions", []))

    def next_world(self, size: int, timeout: float = RESIZE_TIMEOUT_S) -> list[str]:
        """Waits for a restart with `size` ranks reported after the last one seen; returns the ranks' hosts."""

        def find(log: str) -> list[str] | None:
            for match in list(WORLD.finditer(log))[self.seen :]:
                self.seen, self.after = self.seen + 1, match.end()
                if int(match[1]) == size:
                    return match[4].split()
            return None

        return self.wait_for(f"'world size {size}'", find, timeout)

    def epoch_done(self, size: int, timeout: float = RESIZE_TIMEOUT_S) -> None:
        """Waits for a whole epoch trained at `size` ranks since the last restart seen: resizing sooner (a restart at
        an epoch's start, a quick operator) would leave no epoch at that size for check_resized_run to find."""
        self.wait_for(
            f"an epoch done at world size {size}",
            lambda log: next((m for m in EPOCH.finditer(log, self.after) if int(m[2]) == size), None),
            timeout,
        )

    def wait_for(self, what: str, find: Callable[[str], T | None], timeout: float) -> T:
        """Polls the launcher log until find() returns something; fails early once the job finished or failed."""
        deadline = time.monotonic() + timeout
        log = ""
        while time.monotonic() < deadline:
            log = self.jobs.launcher_log_so_far(self.name)
            self.longest = max(self.longest, log, key=len)
            found = find(log)
            if found is not None:
                return found
            if FINISHED.search(log) or self.failed():
                break
            time.sleep(2)
        raise AssertionError(
            f"no {what} in the launcher log of {self.name} in time:\n{log[-4000:]}\n"
            f"{self.jobs.describe(self.name)}\nthe longest launcher log seen:\n{self.longest[-20000:]}"
        )


def check_resized_run(done: FinishedJob) -> None:
    """Succeeded, with the world sizes 2 -> 3 -> 1 in that order and epochs trained after each resize."""
    log = done.launcher_log
    assert done.condition("Succeeded"), (done.job.get("status"), log[-4000:])
    assert done.launcher_exit_code == 0
    sizes = [int(m[1]) for m in WORLD.finditer(log)]
    # 2 first, then 3, then 1 to the end (a resize may pass through an intermediate size, e.g. 3 -> 2 -> 1)
    assert sizes[0] == 2 and 3 in sizes and sizes[-1] == 1 and 1 not in sizes[: sizes.index(3)], sizes
    epoch_sizes = [int(m[2]) for m in EPOCH.finditer(log)]
    assert {2, 3, 1} <= set(epoch_sizes), epoch_sizes  # whole epochs trained at every size
    finished = FINISHED.search(log)
    assert finished and finished[1] == str(EPOCHS) and finished[2] == "1", log[-2000:]
    shown = [line for line in log.splitlines() if WORLD.search(line) or FINISHED.search(line)]
    print("\n" + "\n".join(shown) + f"\n{done.name}: Succeeded in {done.seconds:.0f} s")


def diagnostics(name: str) -> str:
    """What a failed run leaves to look at, taken before the job is deleted: every pod's log (the launcher's carries
    horovodrun's and every rank's output), `kubectl describe` of the job and its pods, and the namespace's events."""
    selector = f"training.kubeflow.org/job-name={name}"
    parts = []
    for command in (
        ["get", "pods", "-l", selector, "-o", "wide"],
        ["describe", "mpijobs.kubeflow.org", name],
        ["describe", "pods", "-l", selector],
        ["logs", "-l", selector, "--all-containers", "--prefix", "--tail", "-1", "--max-log-requests", "10"],
        ["logs", "-l", selector, "--all-containers", "--prefix", "--previous", "--tail", "-1"],
        ["get", "events", "--sort-by", ".lastTimestamp"],
    ):
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig_path(), "-n", JOBS_NAMESPACE, *command],
            capture_output=True,
            text=True,
            timeout=60,
        )
        parts.append(f"$ kubectl {' '.join(command)}\n{proc.stdout}{proc.stderr}")
    return "\n".join(parts)


@contextmanager
def kept_on_failure(name: str) -> Iterator[None]:
    """On a failure, writes diagnostics() to $MPI_E2E_ARTIFACTS (default /tmp)/<job>.txt and prints it."""
    try:
        yield
    except BaseException:
        text = diagnostics(name)
        path = pathlib.Path(os.environ.get("MPI_E2E_ARTIFACTS", "/tmp")) / f"{name}.txt"
        path.write_text(text)
        print(f"\ndiagnostics of {name} (also in {path}):\n{text[-20000:]}")
        raise


def replicas_patch(n: int) -> str:
    return json.dumps({"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": n}}}})


def test_elastic_horovod_resized_by_the_module_kubectl_patch_and_kubectl_scale(jobs: Jobs, horovod_image: str) -> None:
    """One training job, resized three ways while it trains: up by the mpijob module, down by a `kubectl patch` of
    the replicas, down again by `kubectl scale` (the scale subresource). Each resize restarts training at the new
    world size, with the hosts of the workers that exist, and whole epochs trained at every size."""
    started = time.monotonic()
    version, name = jobs.start(elastic_job(horovod_image))
    watch = Resizes(jobs, version, name)
    with kept_on_failure(name):
        assert sorted(watch.next_world(2)) == [f"{name}-worker-0", f"{name}-worker-1"]
        watch.epoch_done(2)

        result = mpijob_module(name=name, workers=3)
        assert result["changed"] and result["summary"]["workers"] == 3, result
        assert sorted(watch.next_world(3)) == [f"{name}-worker-{i}" for i in range(3)]  # worker-2 joined
        watch.epoch_done(3)

        kubectl("patch", f"mpijobs.{version}.kubeflow.org", name, "--type", "merge", "-p", replicas_patch(2))
        assert sorted(watch.next_world(2)) == [f"{name}-worker-0", f"{name}-worker-1"]  # worker-2 left
        watch.epoch_done(2)

        kubectl("scale", f"mpijobs.{version}.kubeflow.org", name, "--replicas", "1")
        assert watch.next_world(1) == [f"{name}-worker-0"]  # training goes on with the survivor

        check_resized_run(jobs.wait(version, name, started, JOB_TIMEOUT_S))
