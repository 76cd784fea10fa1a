"""`make bench`: the operator loop under load on the local cluster (kwok nodes).

1. the cost of one bare ansible-runner run (ansible.builtin.ping, the runner path the operator uses);
2. one MPIJob on an idle operator: creation -> all children, and -> Running;
3. BENCH_JOBS MPIJobs x BENCH_WORKERS workers created at once: the same latencies (p50/p95/max), wall time,
   reconciles/s, ansible-runner runs and mean batch size, and the operator's peak RSS;
4. then all those jobs finish at once: every launcher pod is told (a kwok annotation) to succeed, and the time
   to the Succeeded condition is measured (the operator writes the status and deletes the workers,
   cleanPodPolicy Running).
Launchers keep running until step 4 (BENCH_LAUNCHER_OUTCOME=succeed lets them end 2 s after they start, as
kwok's default for a Job's pod does: then step 3 also carries the completions).
CPU seconds of the operator, this script and each cluster component are printed for steps 3 and 4.
The operator runs as a subprocess, no leader election, watching only the bench's namespace (all namespaces with
BENCH_ALL_NAMESPACES=1); times are taken by this script's
own watches, from just before each create call to the first event that shows the object or condition.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubernetes import client  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from mpijob_operator.runner import BatchRunner  # noqa: E402
from tests.integration._fixtures.operator import (  # noqa: E402
    GROUP,
    PLURAL,
    VERSION,
    OperatorProcess,
    install_crd,
    new_mpijob,
)

JOBS = int(os.environ.get("BENCH_JOBS", "200"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "4"))
TIMEOUT = float(os.environ.get("BENCH_TIMEOUT", "600"))
OPERATOR_ARGS = os.environ.get("BENCH_OPERATOR_ARGS", "").split()
PREFIX = "bench-"
OUTCOME = os.environ.get("BENCH_LAUNCHER_OUTCOME", "run")
OUTCOME_ANNOTATION = "kwok.mpi.operator/outcome"


def mpijob(name: str, workers: int) -> dict[str, Any]:
    """The benchmark's job: the integration tests' small MPIJob, workers removed once it succeeds."""
    return new_mpijob(name, workers, runPolicy={"cleanPodPolicy": "Running"},
                      launcher_annotations={OUTCOME_ANNOTATION: OUTCOME})


class Tracker:
    """Watches children and MPIJobs in the bench namespaces; records when each job got what."""

    def __init__(self, api: client.ApiClient, workers: int):
        self.api = api
        self.workers = workers
        self.lock = threading.Lock()
        self.created: dict[tuple[str, str], float] = {}
        self.children: dict[tuple[str, str], set[str]] = {}
        self.all_children: dict[tuple[str, str], float] = {}
        self.running: dict[tuple[str, str], float] = {}
        self.succeeded: dict[tuple[str, str], float] = {}
        self.pod_phases: dict[tuple[str, str], dict[str, str]] = {}
        self.pods_up: dict[tuple[str, str], float] = {}
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def expected(self, name: str) -> set[str]:
        return {f"Service/{name}", f"ConfigMap/{name}-config", f"Secret/{name}-ssh", f"Job/{name}-launcher"} | {
            f"Pod/{name}-worker-{i}" for i in range(self.workers)}

    def start(self) -> None:
        core, batch = client.CoreV1Api(self.api), client.BatchV1Api(self.api)
        custom = client.CustomObjectsApi(self.api)
        sources = [
            ("Pod", core.list_pod_for_all_namespaces, {"label_selector": "training.kubeflow.org/operator-name"}),
            ("Service", core.list_service_for_all_namespaces, {"label_selector": "app"}),
            ("ConfigMap", core.list_config_map_for_all_namespaces, {"label_selector": "app"}),
            ("Secret", core.list_secret_for_all_namespaces, {"label_selector": "app"}),
            ("Job", batch.list_job_for_all_namespaces, {"label_selector": "app"}),
            ("MPIJob", lambda **kw: custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kw), {}),
        ]
        for kind, func, kw in sources:
            t = threading.Thread(target=self._watch, args=(kind, func, kw), daemon=True)
            t.start()
            self.threads.append(t)

    def _watch(self, kind: str, func: Any, kw: dict[str, Any]) -> None:
        rv = None
        while not self.stop.is_set():
            try:
                if rv is None:
                    listing = func(_preload_content=False, **kw)
                    data = json.loads(listing.data)
                    for obj in data.get("items") or []:
                        self.seen(kind, obj)
                    rv = data["metadata"]["resourceVersion"]
                resp = func(_preload_content=False, watch=True, resource_version=rv, allow_watch_bookmarks=True,
                            timeout_seconds=60, **kw)
                for line in resp:
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        rv = None
                        break
                    rv = ev["object"]["metadata"].get("resourceVersion", rv)
                    if ev["type"] in ("ADDED", "MODIFIED"):
                        self.seen(kind, ev["object"])
                    if self.stop.is_set():
                        break
            except Exception as exc:  # keep measuring: relist
                print(f"bench watch {kind}: {exc}", file=sys.stderr)
                rv = None
                time.sleep(0.5)

    def seen(self, kind: str, obj: dict[str, Any]) -> None:
        now = time.time()
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if not ns.startswith(PREFIX):
            return
        if kind == "MPIJob":
            key = (ns, meta["name"])
            conds = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}
            if conds.get("Running") == "True" or conds.get("Succeeded") == "True":
                with self.lock:
                    self.running.setdefault(key, now)
            if conds.get("Succeeded") == "True":
                with self.lock:
                    self.succeeded.setdefault(key, now)
            return
        if kind == "Pod":
            job = (meta.get("labels") or {}).get("training.kubeflow.org/job-name")
            if job:
                self.pod_seen((ns, job), meta["name"], meta.get("labels") or {}, obj, now)
        else:
            job = (meta.get("labels") or {}).get("app")
        if not job:
            return
        key = (ns, job)
        with self.lock:
            got = self.children.setdefault(key, set())
            got.add(f"{kind}/{meta['name']}")
            if key not in self.all_children and self.expected(job) <= got:
                self.all_children[key] = now


    def pod_seen(self, key: tuple[str, str], name: str, labels: dict[str, str], obj: dict[str, Any], now: float) -> None:
        """The cluster's share: every worker Running and the launcher pod started (Running or done)."""
        role = labels.get("training.kubeflow.org/job-role", "")
        phase = (obj.get("status") or {}).get("phase", "")
        with self.lock:
            phases = self.pod_phases.setdefault(key, {})
            phases[f"{role}/{name}"] = phase
            workers = [p for n, p in phases.items() if n.startswith("worker/")]
            launcher = [p for n, p in phases.items() if n.startswith("launcher/")]
            if (key not in self.pods_up and len(workers) >= self.workers and all(p == "Running" for p in workers)
                    and any(p in ("Running", "Succeeded") for p in launcher)):
                self.pods_up[key] = now


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))  # nearest rank
    return s[k]


def runner_baseline(runs: int = 3) -> float:
    with tempfile.TemporaryDirectory() as d:
        r = BatchRunner(d, slot=0, module="ansible.builtin.ping", module_args={"data": "pong"}, rotate_artifacts=1)
        times = [r.run([("bench", "baseline")]).duration for _ in range(runs)]
    return statistics.median(times)


def rss_tree_kib(pid: int) -> int:
    """RSS of the operator and every process below it (ansible-runner, ansible, the module)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            status = (p / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        ppid = int(fields.get("PPid", "0").strip())
        children.setdefault(ppid, []).append(int(p.name))
        rss[int(p.name)] = int(fields.get("VmRSS", "0 kB").split()[0]) if "VmRSS" in fields else 0
    total, stack = 0, [pid]
    while stack:
        q = stack.pop()
        total += rss.get(q, 0)
        stack.extend(children.get(q, []))
    return total


CLUSTER_PIDS = pathlib.Path(os.environ.get("MPI_OPERATOR_CACHE", pathlib.Path.home() / ".cache/mpi-operator")) / "cluster/pids"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = False) -> float:
    """CPU time of a process (user + system), with `children` also of its waited-for descendants."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / CLK_TCK


def cpu_snapshot(operator_pid: int) -> dict[str, float]:
    """CPU seconds so far of the operator (with its ansible-runner runs), this script and the local cluster's
    components (by their pid files; absent when the bench runs against another cluster)."""
    snap = {"operator incl. runner subprocesses": cpu_seconds(operator_pid, children=True),
            "bench client (this script)": cpu_seconds(os.getpid())}
    for name in ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"):
        try:
            snap[name] = cpu_seconds(int((CLUSTER_PIDS / f"{name}.pid").read_text().split()[0]))
        except (OSError, ValueError):
            continue
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in f.readline().split()[1:8])
    snap["machine total (all cores)"] = (user + nice + system + irq + softirq) / CLK_TCK
    return snap


def peak_rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def finish_all(core: client.CoreV1Api, ns: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """Tells every launcher pod of `keys` to succeed now (kwok's stage acts on the changed annotation);
    returns when each was told."""
    wanted = {name for _, name in keys}
    pods = [p for p in core.list_namespaced_pod(ns, label_selector="training.kubeflow.org/job-role=launcher").items
            if (p.metadata.labels or {}).get("training.kubeflow.org/job-name") in wanted]
    told: dict[tuple[str, str], float] = {}
    patch = {"metadata": {"annotations": {OUTCOME_ANNOTATION: "succeed",
                                          "kwok.mpi.operator/outcome-after": "100ms"}}}

    def tell(pod: Any) -> None:
        told[(ns, pod.metadata.labels["training.kubeflow.org/job-name"])] = time.time()
        core.patch_namespaced_pod(pod.metadata.name, ns, patch)

    with cf.ThreadPoolExecutor(16) as pool:
        list(pool.map(tell, pods))
    return told


def create_namespace(core: client.CoreV1Api, name: str) -> None:
    core.create_namespace({"metadata": {"name": name, "labels": {"mpi-operator-bench": "true"}}})


def delete_namespaces(core: client.CoreV1Api, wait: float = 0) -> None:
    """Deletes the bench's namespaces; with `wait`, until they are gone (a previous run's teardown, 1,000 pods
    and their Events garbage-collected, would otherwise load the cluster while this run measures)."""
    for ns in core.list_namespace(label_selector="mpi-operator-bench=true").items:
        try:
            core.delete_namespace(ns.metadata.name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    if wait:
        wait_until(lambda: not core.list_namespace(label_selector="mpi-operator-bench=true").items, wait,
                   "the previous bench namespaces to be deleted", interval=1.0)


def free_pod_slots(core: client.CoreV1Api) -> int:
    """Pods the untainted Ready nodes can still take (allocatable pods minus the pods bound to them)."""
    free = 0
    for node in core.list_node().items:
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        if not ready or node.spec.unschedulable or node.spec.taints:
            continue
        bound = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.metadata.name},"
                                                 "status.phase!=Succeeded,status.phase!=Failed").items
        free += int(node.status.allocatable.get("pods", "0")) - len(bound)
    return free


def wait_until(pred: Any, timeout: float, what: str, interval: float = 0.05) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Capacity:
    """Whether the cluster can take every pod of the run at once (else the latencies measure the queue)."""
    slots: int
    needed: int


@dataclass
class Single:
    """Phase 2: one job on an idle operator."""
    to_children: float
    to_running: float


@dataclass
class Bulk:
    """Phase 3: JOBS jobs created at once."""
    keys: list[tuple[str, str]]
    created_all: float
    wall: float
    to_children: list[float]
    to_pods_up: list[float]
    to_running: list[float]
    react: list[float]  # the operator's share of "Running": from the pods being up to the condition
    runs: float
    reconciles: float
    mean_batch: float
    cpu: dict[str, float]


@dataclass
class Finish:
    """Phase 4: every launcher told to succeed at once (only when the launchers keep running)."""
    wall: float = float("nan")
    to_succeeded: list[float] = field(default_factory=list)
    runs: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)


def prepare(api: client.ApiClient) -> Capacity:
    """The CRD, no namespace of a previous run left, and a warning when the nodes cannot take every pod."""
    core = client.CoreV1Api(api)
    install_crd(api)
    delete_namespaces(core, wait=300)
    capacity = Capacity(free_pod_slots(core), (JOBS + 1) * (WORKERS + 1))
    if capacity.slots < capacity.needed:
        print(f"WARNING: the schedulable nodes can take {capacity.slots} more pods, the bench needs {capacity.needed}: "
              "jobs will wait for capacity and the latencies measure that (make bench sizes the local cluster; "
              "MPI_CLUSTER_NODES)", file=sys.stderr)
    return capacity


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before[k] for k, v in after.items() if k in before}


class Bench:
    """One run against the operator under test: its namespace, the operator subprocess, the watches and the RSS
    sampler; a method per measured phase."""

    def __init__(self, kubeconfig: str, api: client.ApiClient):
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        work = pathlib.Path(tempfile.mkdtemp(prefix="mpi-operator-bench-"))
        # one namespace, watched alone: a shared cluster's other MPIJobs are none of the bench's business
        self.ns = f"{PREFIX}{uuid.uuid4().hex[:6]}"
        create_namespace(self.core, self.ns)
        scope = [] if os.environ.get("BENCH_ALL_NAMESPACES") else ["--namespace", self.ns]
        self.flags = ["--no-leader-elect", *scope, *OPERATOR_ARGS]
        self.op = OperatorProcess(kubeconfig, work, self.flags, name="bench-operator").start()
        self.tracker = Tracker(api, WORKERS)
        self.rss_peak_tree = 0
        self.peak = 0
        self.sampling = threading.Event()

    def _sample(self) -> None:
        while not self.sampling.is_set():
            self.rss_peak_tree = max(self.rss_peak_tree, rss_tree_kib(self.op.proc.pid))
            self.sampling.wait(0.25)

    def start(self) -> None:
        self.op.wait_ready()
        self.tracker.start()
        threading.Thread(target=self._sample, daemon=True).start()
        time.sleep(1)

    def stop(self) -> None:
        self.sampling.set()
        self.tracker.stop.set()
        self.op.stop()
        delete_namespaces(self.core)

    def counters(self) -> dict[str, float]:
        op = self.op
        return {
            "reconciles": sum(op.metric("mpi_operator_reconciles_total", {"result": r}) or 0
                              for r in ("ok", "retry", "error", "deleted")),
            "runs": op.metric("mpi_operator_batch_size_count") or 0,
            "batched": op.metric("mpi_operator_batch_size_sum") or 0,
        }

    def create(self, key: tuple[str, str]) -> None:
        self.tracker.created[key] = time.time()
        self.custom.create_namespaced_custom_object(GROUP, VERSION, key[0], PLURAL, mpijob(key[1], WORKERS))

    def single(self) -> Single:
        tracker, key = self.tracker, (self.ns, "single")
        self.create(key)
        wait_until(lambda: key in tracker.running, 120, "the single job to run")
        result = Single(tracker.all_children[key] - tracker.created[key], tracker.running[key] - tracker.created[key])
        time.sleep(2)  # let the loop settle before the bulk run
        return result

    def bulk(self) -> Bulk:
        tracker = self.tracker
        before, cpu_before = self.counters(), cpu_snapshot(self.op.proc.pid)
        keys = [(self.ns, f"job-{i:04d}") for i in range(JOBS)]
        start = time.time()
        with cf.ThreadPoolExecutor(16) as pool:
            list(pool.map(self.create, keys))
        created_all = time.time() - start
        try:
            wait_until(lambda: all(k in tracker.running for k in keys), TIMEOUT, "every job to run")
        except TimeoutError as exc:
            print(f"WARNING: {exc}: {sum(k in tracker.running for k in keys)}/{JOBS} running", file=sys.stderr)
        wall = time.time() - start
        cpu = cpu_delta(cpu_before, cpu_snapshot(self.op.proc.pid))
        time.sleep(1)
        after = self.counters()
        runs = after["runs"] - before["runs"]
        return Bulk(
            keys=keys, created_all=created_all, wall=wall,
            to_children=[tracker.all_children[k] - tracker.created[k] for k in keys if k in tracker.all_children],
            to_pods_up=[tracker.pods_up[k] - tracker.created[k] for k in keys if k in tracker.pods_up],
            to_running=[tracker.running[k] - tracker.created[k] for k in keys if k in tracker.running],
            react=[max(0.0, tracker.running[k] - tracker.pods_up[k]) for k in keys
                   if k in tracker.running and k in tracker.pods_up],
            runs=runs, reconciles=after["reconciles"] - before["reconciles"],
            mean_batch=(after["batched"] - before["batched"]) / runs if runs else float("nan"), cpu=cpu)

    def finish(self, keys: list[tuple[str, str]]) -> Finish:
        tracker = self.tracker
        before, cpu_before = self.counters(), cpu_snapshot(self.op.proc.pid)
        told = finish_all(self.core, self.ns, keys)
        try:
            wait_until(lambda: all(k in tracker.succeeded for k in keys), TIMEOUT, "every job to succeed")
        except TimeoutError as exc:
            print(f"WARNING: {exc}: {sum(k in tracker.succeeded for k in keys)}/{JOBS} succeeded", file=sys.stderr)
        wall = time.time() - min(told.values(), default=time.time())
        return Finish(wall=wall, cpu=cpu_delta(cpu_before, cpu_snapshot(self.op.proc.pid)),
                      to_succeeded=[tracker.succeeded[k] - told[k] for k in keys
                                    if k in tracker.succeeded and k in told],
                      runs=self.counters()["runs"] - before["runs"])

    def run(self) -> tuple[Single, Bulk, Finish]:
        try:
            self.start()
            single = self.single()
            bulk = self.bulk()
            finish = self.finish(bulk.keys) if OUTCOME == "run" else Finish()
            self.peak = peak_rss_kib(self.op.proc.pid)
        finally:
            self.stop()
        return single, bulk, finish


ROW = "| {:<44} | {:>10} |"


def print_spread(label: str, values: list[float]) -> None:
    print(ROW.format(f"{label}: p50", f"{percentile(values, 50):.1f} s"))
    print(ROW.format(f"{label}: p95", f"{percentile(values, 95):.1f} s"))
    print(ROW.format(f"{label}: max", f"{max(values) if values else float('nan'):.1f} s"))


def report(bench: Bench, capacity: Capacity, baseline: float, single: Single, bulk: Bulk, finish: Finish) -> None:
    row = ROW
    print()
    print(f"## make bench: {JOBS} MPIJobs x {WORKERS} workers, operator flags: {' '.join(bench.flags)}")
    print()
    print(row.format("measure", "value"))
    print(row.format("-" * 44, "-" * 10))
    print(row.format("bare ansible-runner run (ping, median of 3)", f"{baseline:.2f} s"))
    print(row.format("single job, idle: create -> all children", f"{single.to_children:.2f} s"))
    print(row.format("single job, idle: create -> Running", f"{single.to_running:.2f} s"))
    print(row.format("free pod slots on schedulable nodes / needed", f"{capacity.slots}/{capacity.needed}"))
    print(row.format(f"{JOBS} jobs created (client, 16 threads)", f"{bulk.created_all:.1f} s"))
    for label, values in (("create -> all children", bulk.to_children),
                          ("create -> pods up (cluster side)", bulk.to_pods_up),
                          ("create -> Running", bulk.to_running), ("pods up -> Running (operator side)", bulk.react)):
        print_spread(label, values)
    print(row.format("jobs with all children / Running", f"{len(bulk.to_children)}/{len(bulk.to_running)} of {JOBS}"))
    print(row.format("total wall time (first create -> all Running)", f"{bulk.wall:.1f} s"))
    print(row.format("reconciles/s", f"{bulk.reconciles / bulk.wall:.1f}"))
    print(row.format("ansible-runner runs", f"{bulk.runs:.0f}"))
    print(row.format("mean batch size (jobs per run)", f"{bulk.mean_batch:.1f}"))
    print(row.format("load average (1 min) at the end", f"{os.getloadavg()[0]:.1f}"))
    print(row.format("operator peak RSS (VmHWM, Python process)", f"{bench.peak / 1024:.0f} MiB"))
    print(row.format("peak RSS incl. runner subprocesses (sampled)", f"{bench.rss_peak_tree / 1024:.0f} MiB"))
    if OUTCOME == "run":
        print(row.format("then all launchers succeed at once:", ""))
        print_spread("launcher told -> Succeeded", finish.to_succeeded)
        print(row.format("jobs Succeeded", f"{len(finish.to_succeeded)} of {JOBS}"))
        print(row.format("wall time (first told -> all Succeeded)", f"{finish.wall:.1f} s"))
        print(row.format("ansible-runner runs", f"{finish.runs:.0f}"))
    print()
    print(f"CPU seconds, {os.cpu_count()} cores: from the first create to all Running ({bulk.wall:.0f} s wall)"
          + (f"; from the first launcher told to all Succeeded ({finish.wall:.0f} s wall)" if finish.cpu else "")
          + ":")
    print()
    print(row.format("process", "to Running") + (" all Succeeded |" if finish.cpu else ""))
    print(row.format("-" * 44, "-" * 10) + (" ------------- |" if finish.cpu else ""))
    for name, value in bulk.cpu.items():
        extra = f" {finish.cpu.get(name, float('nan')):>13.1f} |" if finish.cpu else ""
        print(row.format(name, f"{value:.1f}") + extra)


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    # The shell's auth, as the modules and the operator connect (importable once mpijob_operator is imported).
    from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import api_client

    api = api_client({"kubeconfig": kubeconfig})
    capacity = prepare(api)
    baseline = runner_baseline()
    bench = Bench(kubeconfig, api)
    single, bulk, finish = bench.run()
    report(bench, capacity, baseline, single, bulk, finish)
    ok = len(bulk.to_running) == JOBS and (OUTCOME != "run" or len(finish.to_succeeded) == JOBS)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
