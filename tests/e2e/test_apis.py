"""The other operators' MPIJobs on real pods. T9k's (batch.tensorstack.dev/v1beta1): its documentation's first
example with the tutorial's random walk program, the mpirun line the operator builds from extraMPIArgs, mca, mpiHome
and sshdPath; debug mode; pause and resume. batch.test.bdap.com/v1's: its README's example's horovodrun over
`kubectl exec` (workers without sshd), read with `kubectl logs <job>-launcher`."""

from __future__ import annotations

import copy
import re
import subprocess
import time
import uuid
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import api_for
from tests.e2e.conftest import (
    BUILT_IMAGES,
    JOBS_NAMESPACE,
    MANIFESTS,
    RANK_LINE,
    Jobs,
    kubeconfig_path,
    pin_local_images,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e")]

T9K_GROUP, T9K_VERSION = "batch.tensorstack.dev", "v1beta1"
BDAP_GROUP, BDAP_VERSION = "batch.test.bdap.com", "v1"
TIMEOUT_S = 300.0


class ApiJobs:
    """Runs one API's MPIJobs from manifests/ in JOBS_NAMESPACE under unique names; deletes them afterwards."""

    def __init__(self, api: client.ApiClient, jobs: Jobs, group: str = T9K_GROUP, version: str = T9K_VERSION) -> None:
        self.custom, self.core, self.jobs = client.CustomObjectsApi(api), client.CoreV1Api(api), jobs
        self.group, self.version = group, version
        self.created: list[str] = []

    def start(self, job: dict) -> str:
        job = copy.deepcopy(job)
        pin_local_images(job, BUILT_IMAGES)
        name = f"{job['metadata']['name']}-{uuid.uuid4().hex[:5]}"
        job["metadata"] = {"name": name, "namespace": JOBS_NAMESPACE}
        self.custom.create_namespaced_custom_object(self.group, self.version, JOBS_NAMESPACE, "mpijobs", job)
        self.created.append(name)
        return name

    def get(self, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(self.group, self.version, JOBS_NAMESPACE, "mpijobs", name)

    def patch(self, name: str, body: dict) -> None:
        self.custom.patch_namespaced_custom_object(self.group, self.version, JOBS_NAMESPACE, "mpijobs", name, body)

    def phase(self, name: str) -> str:
        job = self.get(name)
        return api_for(job).phase(job.get("status"))

    def wait_phase(self, name: str, *phases: str, timeout: float = TIMEOUT_S) -> str:
        end = time.monotonic() + timeout
        while (phase := self.phase(name)) not in phases:
            if time.monotonic() > end:
                raise AssertionError(
                    f"{name} is {phase}, not {'/'.join(phases)} after {timeout:.0f} s: "
                    f"{self.get(name).get('status')}\n{self.jobs.describe(name)}"
                )
            time.sleep(0.5)
        return phase

    def pods(self, name: str) -> dict[str, list[Any]]:
        """The job's live pods by role."""
        found = self.core.list_namespaced_pod(JOBS_NAMESPACE, label_selector=f"training.kubeflow.org/job-name={name}")
        by_role: dict[str, list[Any]] = {}
        for pod in found.items:
            if not pod.metadata.deletion_timestamp:
                by_role.setdefault(pod.metadata.labels["training.kubeflow.org/job-role"], []).append(pod)
        return by_role

    def exec(self, pod: str, *command: str) -> str:
        from kubernetes.stream import stream

        return stream(
            self.core.connect_get_namespaced_pod_exec,
            pod,
            JOBS_NAMESPACE,
            command=list(command),
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )

    def delete_all(self) -> None:
        for name in self.created:
            try:
                self.custom.delete_namespaced_custom_object(
                    self.group, self.version, JOBS_NAMESPACE, "mpijobs", name, propagation_policy="Background"
                )
            except ApiException as err:
                if err.status != 404:
                    raise


@pytest.fixture
def t9k(api: client.ApiClient, jobs: Jobs) -> Any:
    runner = ApiJobs(api, jobs)
    yield runner
    runner.delete_all()


def example() -> dict:
    return yaml.safe_load((MANIFESTS / "t9k-random-walk.yaml").read_text())


def test_t9k_random_walk_runs_ranks_on_every_worker(t9k: ApiJobs) -> None:
    name = t9k.start(example())
    phase = t9k.wait_phase(name, "Succeeded", "Failed")
    log, code = t9k.jobs.launcher(name)
    assert phase == "Succeeded" and code == 0, (t9k.get(name).get("status"), log)
    command = t9k.pods(name)["launcher"][0].spec.containers[0].command
    assert command[:1] == ["/usr/local/bin/mpirun"], command
    assert "--mca btl ^openib" in " ".join(command) and command[-4:] == ["./random_walk", "20", "40", "2"], command
    # -N 3 per worker, 2 workers: 6 ranks, 3 on each worker, none on the launcher.
    hosts = [m[3] for m in RANK_LINE.finditer(log)]
    assert sorted(hosts) == sorted([f"{name}-worker-0"] * 3 + [f"{name}-worker-1"] * 3), log
    assert "random walk done: 12 of 12 walkers finished" in log, log
    # cleanUpWorkers: true: the workers are gone, the launcher and its log stay.
    end = time.monotonic() + 60
    while t9k.pods(name).get("worker") and time.monotonic() < end:
        time.sleep(0.5)
    assert not t9k.pods(name).get("worker") and t9k.pods(name).get("launcher")
    status = t9k.get(name)["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Completed"] == "True", status


def test_debug_mode_leaves_both_roles_up_without_training(t9k: ApiJobs) -> None:
    job = example()
    job["spec"]["runMode"] = {"debug": {"enabled": True}}
    name = t9k.start(job)
    t9k.wait_phase(name, "Running")
    end = time.monotonic() + 60
    while len([p for p in t9k.pods(name).get("worker", []) if p.status.phase == "Running"]) < 2:
        assert time.monotonic() < end, t9k.jobs.describe(name)
        time.sleep(0.5)
    launcher = t9k.pods(name)["launcher"][0]
    while launcher.status.phase != "Running":
        assert time.monotonic() < end, t9k.jobs.describe(name)
        time.sleep(0.5)
        launcher = t9k.pods(name)["launcher"][0]
    # No training process anywhere: the launcher sleeps, the workers run sshd only; a person can exec in and try.
    procs = t9k.exec(launcher.metadata.name, "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
    assert "sleep" in procs and "mpirun" not in procs and "random_walk" not in procs, procs
    for worker in t9k.pods(name)["worker"]:
        procs = t9k.exec(worker.metadata.name, "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
        assert "sshd" in procs and "random_walk" not in procs, procs
    tried = t9k.exec(
        launcher.metadata.name,
        "sh",
        "-c",
        "cd /usr/local/code && /usr/local/bin/mpirun --allow-run-as-root -N 1 ./random_walk 20 40 2",
    )
    assert "random walk done: 4 of 4 walkers finished" in tried, tried  # the environment works by hand
    time.sleep(5)
    assert t9k.phase(name) == "Running"  # debug mode never ends by itself


def test_pause_deletes_every_replica_and_resume_completes(t9k: ApiJobs) -> None:
    job = example()
    # Long enough to be paused while it runs; each rank then runs the program.
    job["spec"]["worker"]["cmd"] = ["sh", "-c", "sleep 30 && exec ./random_walk 20 40 2"]
    name = t9k.start(job)
    t9k.wait_phase(name, "Running")
    t9k.patch(name, {"spec": {"runMode": {"pause": {"enabled": True}}}})
    t9k.wait_phase(name, "Paused", timeout=60)
    end = time.monotonic() + 120
    while t9k.pods(name):
        assert time.monotonic() < end, f"replicas left after the pause: {t9k.jobs.describe(name)}"
        time.sleep(0.5)
    t9k.patch(name, {"spec": {"runMode": {"pause": {"enabled": False}}}})
    assert t9k.wait_phase(name, "Succeeded", "Failed") == "Succeeded", t9k.get(name).get("status")
    log, code = t9k.jobs.launcher(name)
    assert code == 0 and "random walk done: 12 of 12 walkers finished" in log, log


# -- batch.test.bdap.com/v1 ---------------------------------------------------------------------------------------


@pytest.fixture
def bdap(api: client.ApiClient, jobs: Jobs) -> Any:
    runner = ApiJobs(api, jobs, BDAP_GROUP, BDAP_VERSION)
    yield runner
    runner.delete_all()


def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig_path(), "-n", JOBS_NAMESPACE, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.needs_build("horovod")
def test_bdap_horovodrun_over_kubectl_exec_and_kubectl_logs_of_the_launcher(bdap: ApiJobs) -> None:
    """The README's example: the workers run `sleep infinity` (no sshd); the launcher starts only once both are Ready
    (their readiness probe waits 30 s), and its unchanged `horovodrun -np 2 --hostfile
    $OMPI_MCA_orte_default_hostfile python main.py` checks and starts the workers through `kubectl exec` (kubectl
    from the delivery image, the job's own ServiceAccount). `kubectl logs <job>-launcher` shows a rank on each."""
    job = yaml.safe_load((MANIFESTS / "bdap-simple-train-cpu.yaml").read_text())
    name = bdap.start(job)
    phase = bdap.wait_phase(name, "Succeeded", "Failed", timeout=TIMEOUT_S + 60)
    logs = kubectl("logs", f"{name}-launcher")
    assert phase == "Succeeded" and logs.returncode == 0, (
        bdap.get(name).get("status"),
        logs.stdout[-6000:],
        logs.stderr,
        bdap.jobs.describe(name),
    )
    # horovodrun's mpirun tags each rank's line: "[1,<rank>]<stdout>:rank R of 2 on host H".
    # mpirun tags each chunk of a rank's output, and over `kubectl exec` a line's newline may come in a chunk of its
    # own: "...on host <worker-1>[1,1]<stdout>:" then a line break (seen once in CI). A host name has no "[".
    hosts = sorted(m[3] for m in re.finditer(r"rank (\d+) of (\d+) on host ([A-Za-z0-9.-]+)", logs.stdout))
    assert hosts == [f"{name}-worker-0", f"{name}-worker-1"], logs.stdout[-6000:]
    assert "training done" in logs.stdout, logs.stdout[-6000:]
    launcher = bdap.core.read_namespaced_pod(f"{name}-launcher", JOBS_NAMESPACE)
    assert launcher.spec.service_account_name == f"{name}-launcher"
    # kubectl-delivery, then the launch gate (which waits only until the workers' names resolve: no sshd here)
    assert [c.name for c in launcher.spec.init_containers] == ["kubectl-delivery", "launch-gate"]
    status = bdap.get(name)["status"]
    assert status["launcher"] == f"{name}-launcher" and status["phase"] == "Succeeded", status
