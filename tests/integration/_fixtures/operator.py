"""Fixtures of the operator loop: the MPIJob CRD installed, and the operator started as a real subprocess
(`python -m mpijob_operator`) against the test cluster; its log is printed when a test fails."""
from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.constants import GROUP, PLURAL, VERSION
from tests.integration._fixtures.cluster import wait_for

_ROOT = pathlib.Path(__file__).resolve().parents[3]
_CRD = _ROOT / "roles/crds/files/mpijobs.kubeflow.org.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> set[int]:
    """Live processes below `pid`, in any process group (ansible's worker makes a session of its own)."""
    parents = {}
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(p.name)] = int(fields[1])
    out, stack = set(), [pid]
    while stack:
        q = stack.pop()
        for child, parent in parents.items():
            if parent == q and child not in out:
                out.add(child)
                stack.append(child)
    return out


def alive(pids: set[int]) -> set[int]:
    """Those of `pids` that still run (not zombies)."""
    out = set()
    for pid in pids:
        try:
            if pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.add(pid)
        except OSError:
            continue
    return out


def cmdline(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class OperatorProcess:
    """One operator process; `metrics()` reads its /metrics, `logs()` its output so far."""

    def __init__(self, kubeconfig: str, work_dir: pathlib.Path, args: list[str], name: str = "operator",
                 root: pathlib.Path = _ROOT):
        self.root = root  # the source tree it runs from (another release's, in the upgrade test)
        self.port = _free_port()
        self.log_path = work_dir / f"{name}-{self.port}.log"
        self.args = ["--kubeconfig", kubeconfig, "--monitoring-port", str(self.port),
                     "--work-dir", str(work_dir / f"runner-{self.port}"), "--log-level", "info", *args]
        self.proc: subprocess.Popen | None = None

    def start(self) -> OperatorProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.root) + os.pathsep + env.get("PYTHONPATH", "")
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        if self.root != _ROOT:  # its runs use that tree's collection too
            env["ANSIBLE_COLLECTIONS_PATH"] = str(self.root / ".collections")
        with open(self.log_path, "ab") as out:
            # its own process group: kill_all() takes the runs in flight down with it, like a container dying
            self.proc = subprocess.Popen([sys.executable, "-m", "mpijob_operator", *self.args], cwd=self.root,
                                         stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        return self

    def runs_in_flight(self) -> int:
        """Processes in the operator's group besides itself: ansible-runner's ansible and module processes."""
        assert self.proc is not None
        count = 0
        for p in pathlib.Path("/proc").iterdir():
            if not p.name.isdigit() or int(p.name) == self.proc.pid:
                continue
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == self.proc.pid:  # state, ppid, pgrp
                count += 1
        return count

    def kill_all(self) -> None:
        """SIGKILL to the operator and everything it started."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=3) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def wait_ready(self, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"operator exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                if self.get("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"operator not ready in {timeout}s:\n{self.logs()}")

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        values = self.metric_values(name, labels)
        return values[0] if values else None

    def metric_values(self, name: str, labels: dict[str, str] | None = None) -> list[float]:
        """Every sample of the metric whose labels include `labels`."""
        from prometheus_client.parser import text_string_to_metric_families

        _, text = self.get("/metrics")
        return [s.value for family in text_string_to_metric_families(text) for s in family.samples
                if s.name == name and all(s.labels.get(k) == v for k, v in (labels or {}).items())]

    def idle(self) -> bool:
        """No job waits for a runner and every run it started has ended: what the events it received asked for, it
        has done. The positive signal a test waits for before it checks that the operator did *not* do something
        (the queue gauge is refreshed at each scrape; a run is counted in batch_size when it starts, in runner_runs
        when it ends)."""
        started = self.metric("mpi_operator_batch_size_count") or 0
        return self.metric("mpi_operator_queue_depth") == 0 and sum(
            self.metric_values("mpi_operator_runner_runs_total")) == started

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float = 30) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self.proc is not None:
                    os.killpg(self.proc.pid, signal.SIGKILL)  # leftovers of a killed operator
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def install_crd(api_client: Any, path: pathlib.Path = _CRD) -> None:
    """Creates or updates an MPIJob CRD from the collection's file (kubeflow.org's by default), and waits until it is
    served."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    body = yaml.safe_load(path.read_text())
    ext = client.ApiextensionsV1Api(api_client)
    name = body["metadata"]["name"]
    for attempt in range(5):  # 409: another worker, test session or install test wrote it in between
        try:
            try:
                current = ext.read_custom_resource_definition(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                ext.create_custom_resource_definition(body)
                break
            body["metadata"]["resourceVersion"] = current.metadata.resource_version
            ext.replace_custom_resource_definition(name, body)
            break
        except ApiException as exc:
            if exc.status == 409 and attempt < 4:
                continue
            raise
    custom = client.CustomObjectsApi(api_client)
    end = time.monotonic() + 30
    while True:
        try:
            storage = next(v["name"] for v in body["spec"]["versions"] if v["storage"])
            custom.list_cluster_custom_object(body["spec"]["group"], storage, body["spec"]["names"]["plural"], limit=1)
            return
        except ApiException:
            if time.monotonic() > end:
                raise
            time.sleep(0.3)


@pytest.fixture(scope="session")
def operator_crd(api_client: Any) -> None:
    install_crd(api_client)


@pytest.fixture
def operator_factory(kubeconfig: str, operator_crd: None, tmp_path: pathlib.Path,
                     request: pytest.FixtureRequest) -> Iterator[Callable[..., OperatorProcess]]:
    """Starts operators (`make_operator("--namespace", ns)`); stops them after the test and shows their logs
    when it failed."""
    started: list[OperatorProcess] = []

    def make(*args: str, name: str = "operator", ready: bool | float = True, root: pathlib.Path = _ROOT
             ) -> OperatorProcess:
        """`ready`: wait until it is ready (for that many seconds, if a number); `root`: the source tree it runs from."""
        op = OperatorProcess(kubeconfig, tmp_path, list(args), name=name, root=root).start()
        started.append(op)
        if ready:
            op.wait_ready(60 if ready is True else ready)
        return op

    yield make
    for op in started:
        op.stop()
    report = getattr(request.node, "rep_call", None)
    if report is None or report.failed:
        for op in started:
            sys.stderr.write(f"\n----- {op.log_path.name} -----\n{op.logs()[-20000:]}\n")


@pytest.fixture
def running_operator(operator_factory: Callable[..., OperatorProcess], namespace: str) -> OperatorProcess:
    """One operator watching only this test's namespace (the namespace-scoped mode), no leader election."""
    return operator_factory("--namespace", namespace, "--no-leader-elect")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


# ---- MPIJob helpers for the operator tests (plain functions: tests import them) ----------------------------

def new_mpijob(name: str, workers: int = 2, *, launcher_annotations: dict[str, str] | None = None,
               worker_annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A small MPIJob; `spec` keys are merged into .spec (runPolicy, launcherCreationPolicy ...)."""
    def template(role: str, annotations: dict[str, str] | None) -> dict[str, Any]:
        meta = {"annotations": annotations} if annotations else {}
        return {"metadata": meta, "spec": {"containers": [{"name": role, "image": "mpioperator/mpi-pi:openmpi"}]}}

    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "None"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template("launcher", launcher_annotations)},
                "Worker": {"replicas": workers, "template": template("worker", worker_annotations)},
            },
        },
    }
    for k, v in spec.items():
        if isinstance(v, dict) and isinstance(body["spec"].get(k), dict):
            body["spec"][k].update(v)
        else:
            body["spec"][k] = v
    return body


def create_mpijob(api_client: Any, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    from kubernetes import client

    return client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, body)


def get_mpijob(api_client: Any, namespace: str, name: str) -> dict[str, Any] | None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        return client.CustomObjectsApi(api_client).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL,
                                                                                name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def patch_mpijob(api_client: Any, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    from kubernetes import client

    return client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, patch)


def delete_mpijob(api_client: Any, namespace: str, name: str) -> None:
    from kubernetes import client

    client.CustomObjectsApi(api_client).delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def condition(job: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    for c in ((job or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def has_condition(job: dict[str, Any] | None, ctype: str, status: str = "True") -> bool:
    c = condition(job, ctype)
    return c is not None and c.get("status") == status


def wait_condition(api_client: Any, namespace: str, name: str, ctype: str, timeout: float = 60,
                   status: str = "True") -> dict[str, Any]:
    job: dict[str, Any] | None = None

    def check() -> bool:
        nonlocal job
        job = get_mpijob(api_client, namespace, name)
        return has_condition(job, ctype, status)

    try:
        wait_for(check, timeout, what=f"{namespace}/{name} {ctype}={status}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; status: {(job or {}).get('status')}") from None
    assert job is not None
    return job


def children(api_client: Any, namespace: str, name: str) -> dict[str, list[str]]:
    """Names of the job's children by kind (the Kubeflow names and labels)."""
    from kubernetes import client

    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    app = f"app={name}"
    pods = core.list_namespaced_pod(namespace, label_selector=f"training.kubeflow.org/job-name={name}").items
    return {
        "Service": [s.metadata.name for s in core.list_namespaced_service(namespace, label_selector=app).items],
        "ConfigMap": [c.metadata.name for c in core.list_namespaced_config_map(namespace, label_selector=app).items],
        "Secret": [s.metadata.name for s in core.list_namespaced_secret(namespace, label_selector=app).items],
        "Job": [j.metadata.name for j in batch.list_namespaced_job(namespace, label_selector=app).items],
        "Worker": sorted(p.metadata.name for p in pods
                         if (p.metadata.labels or {}).get("training.kubeflow.org/job-role") == "worker"
                         and not p.metadata.deletion_timestamp),
        "LauncherPod": [p.metadata.name for p in pods
                        if (p.metadata.labels or {}).get("training.kubeflow.org/job-role") == "launcher"],
    }


class Child(NamedTuple):
    kind: str
    name: str
    uid: str
    owner_kind: str | None  # of its controller
    owner_uid: str | None
    deleting: bool


def owned_children(api_client: Any, namespace: str) -> list[Child]:
    """Every object the operator creates in the namespace, for every job: worker and launcher pods, Services,
    ConfigMaps, Secrets, launcher Jobs."""
    from kubernetes import client

    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    out = []
    for kind, items in (
        ("Pod", core.list_namespaced_pod(namespace, label_selector="training.kubeflow.org/job-name").items),
        ("Service", core.list_namespaced_service(namespace, label_selector="app").items),
        ("ConfigMap", core.list_namespaced_config_map(namespace, label_selector="app").items),
        ("Secret", core.list_namespaced_secret(namespace, label_selector="app").items),
        ("Job", batch.list_namespaced_job(namespace, label_selector="app").items),
    ):
        for obj in items:
            refs = [r for r in obj.metadata.owner_references or [] if r.controller]
            out.append(Child(kind, obj.metadata.name, obj.metadata.uid, refs[0].kind if refs else None,
                             refs[0].uid if refs else None, bool(obj.metadata.deletion_timestamp)))
    return out


def expected_children(name: str, workers: int) -> dict[str, list[str]]:
    return {
        "Service": [name],
        "ConfigMap": [f"{name}-config"],
        "Secret": [f"{name}-ssh"],
        "Job": [f"{name}-launcher"],
        "Worker": sorted(f"{name}-worker-{i}" for i in range(workers)),
    }


def event_reasons(api_client: Any, namespace: str, name: str) -> set[str]:
    from kubernetes import client

    events = client.CoreV1Api(api_client).list_namespaced_event(
        namespace, field_selector=f"involvedObject.kind=MPIJob,involvedObject.name={name}").items
    return {e.reason for e in events}


def wait_event_reasons(api_client: Any, namespace: str, name: str, predicate: Callable[[set[str]], bool],
                       timeout: float = 10) -> set[str]:
    """The job's event reasons once predicate holds for them. The running operator writes a job's events after its
    status (a failed status write must not leave the event of a change that did not happen), so a test that has
    just seen a condition waits for its event."""

    def reasons() -> set[str] | None:
        found = event_reasons(api_client, namespace, name)
        return found if predicate(found) else None

    return wait_for(reasons, timeout, what=f"the events of MPIJob {namespace}/{name}")
