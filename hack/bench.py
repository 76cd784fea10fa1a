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
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubernetes import client, config  # noqa: E402
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


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    config.load_kube_config(kubeconfig)
    api = client.ApiClient()
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    install_crd(api)
    delete_namespaces(core, wait=300)
    needed = (JOBS + 1) * (WORKERS + 1)
    slots = free_pod_slots(core)
    if slots < needed:
        print(f"WARNING: the schedulable nodes can take {slots} more pods, the bench needs {needed}: jobs will wait "
              "for capacity and the latencies measure that (make bench sizes the local cluster; MPI_CLUSTER_NODES)",
              file=sys.stderr)

    baseline = runner_baseline()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mpi-operator-bench-"))
    # one namespace, watched alone: a shared cluster's other MPIJobs are none of the bench's business
    ns = f"{PREFIX}{uuid.uuid4().hex[:6]}"
    create_namespace(core, ns)
    scope = [] if os.environ.get("BENCH_ALL_NAMESPACES") else ["--namespace", ns]
    op = OperatorProcess(kubeconfig, work, ["--no-leader-elect", *scope, *OPERATOR_ARGS],
                         name="bench-operator").start()
    tracker = Tracker(api, WORKERS)
    rss_peak_tree = 0
    sampling = threading.Event()

    def sample() -> None:
        nonlocal rss_peak_tree
        while not sampling.is_set():
            rss_peak_tree = max(rss_peak_tree, rss_tree_kib(op.proc.pid))
            sampling.wait(0.25)

    try:
        op.wait_ready()
        tracker.start()
        threading.Thread(target=sample, daemon=True).start()
        time.sleep(1)

        # -- one job, idle operator ----------------------------------------------------------
        ns1 = ns
        key1 = (ns1, "single")
        tracker.created[key1] = time.time()
        custom.create_namespaced_custom_object(GROUP, VERSION, ns1, PLURAL, mpijob("single", WORKERS))
        wait_until(lambda: key1 in tracker.running, 120, "the single job to run")
        single_children = tracker.all_children[key1] - tracker.created[key1]
        single_running = tracker.running[key1] - tracker.created[key1]
        time.sleep(2)  # let the loop settle before the bulk run

        # -- N jobs at once ------------------------------------------------------------------
        def counters() -> dict[str, float]:
            return {
                "reconciles": sum(op.metric("mpi_operator_reconciles_total", {"result": r}) or 0
                                  for r in ("ok", "retry", "error", "deleted")),
                "runs": op.metric("mpi_operator_batch_size_count") or 0,
                "batched": op.metric("mpi_operator_batch_size_sum") or 0,
            }

        before = counters()
        cpu_before = cpu_snapshot(op.proc.pid)
        keys = [(ns, f"job-{i:04d}") for i in range(JOBS)]
        start = time.time()

        def create(key: tuple[str, str]) -> None:
            tracker.created[key] = time.time()
            custom.create_namespaced_custom_object(GROUP, VERSION, key[0], PLURAL, mpijob(key[1], WORKERS))

        with cf.ThreadPoolExecutor(16) as pool:
            list(pool.map(create, keys))
        created_all = time.time() - start
        try:
            wait_until(lambda: all(k in tracker.running for k in keys), TIMEOUT, "every job to run")
        except TimeoutError as exc:
            print(f"WARNING: {exc}: {sum(k in tracker.running for k in keys)}/{JOBS} running", file=sys.stderr)
        wall = time.time() - start
        cpu_after = cpu_snapshot(op.proc.pid)
        time.sleep(1)
        after = counters()
        to_children = [tracker.all_children[k] - tracker.created[k] for k in keys if k in tracker.all_children]
        to_running = [tracker.running[k] - tracker.created[k] for k in keys if k in tracker.running]
        to_pods_up = [tracker.pods_up[k] - tracker.created[k] for k in keys if k in tracker.pods_up]
        # the operator's share of "Running": from the pods being up to the condition
        react = [max(0.0, tracker.running[k] - tracker.pods_up[k]) for k in keys
                 if k in tracker.running and k in tracker.pods_up]
        runs = after["runs"] - before["runs"]
        reconciles = after["reconciles"] - before["reconciles"]
        mean_batch = (after["batched"] - before["batched"]) / runs if runs else float("nan")

        # -- all of them finish at once ------------------------------------------------------
        done_wall, to_succeeded, finish_runs, finish_cpu = float("nan"), [], 0.0, {}
        if OUTCOME == "run":
            finish_before, cpu_before2 = counters(), cpu_snapshot(op.proc.pid)
            told = finish_all(core, ns, keys)
            try:
                wait_until(lambda: all(k in tracker.succeeded for k in keys), TIMEOUT, "every job to succeed")
            except TimeoutError as exc:
                print(f"WARNING: {exc}: {sum(k in tracker.succeeded for k in keys)}/{JOBS} succeeded",
                      file=sys.stderr)
            done_wall = time.time() - min(told.values(), default=time.time())
            cpu_after2 = cpu_snapshot(op.proc.pid)
            finish_cpu = {k: v - cpu_before2[k] for k, v in cpu_after2.items() if k in cpu_before2}
            to_succeeded = [tracker.succeeded[k] - told[k] for k in keys if k in tracker.succeeded and k in told]
            finish_runs = counters()["runs"] - finish_before["runs"]
        peak = peak_rss_kib(op.proc.pid)
    finally:
        sampling.set()
        tracker.stop.set()
        op.stop()
        delete_namespaces(core)

    row = "| {:<44} | {:>10} |"
    print()
    print(f"## make bench: {JOBS} MPIJobs x {WORKERS} workers, operator flags: "
          f"{' '.join(['--no-leader-elect', *scope, *OPERATOR_ARGS])}")
    print()
    print(row.format("measure", "value"))
    print(row.format("-" * 44, "-" * 10))
    print(row.format("bare ansible-runner run (ping, median of 3)", f"{baseline:.2f} s"))
    print(row.format("single job, idle: create -> all children", f"{single_children:.2f} s"))
    print(row.format("single job, idle: create -> Running", f"{single_running:.2f} s"))
    print(row.format("free pod slots on schedulable nodes / needed", f"{slots}/{needed}"))
    print(row.format(f"{JOBS} jobs created (client, 16 threads)", f"{created_all:.1f} s"))
    for label, values in (("create -> all children", to_children), ("create -> pods up (cluster side)", to_pods_up),
                          ("create -> Running", to_running), ("pods up -> Running (operator side)", react)):
        print(row.format(f"{label}: p50", f"{percentile(values, 50):.1f} s"))
        print(row.format(f"{label}: p95", f"{percentile(values, 95):.1f} s"))
        print(row.format(f"{label}: max", f"{max(values) if values else float('nan'):.1f} s"))
    print(row.format("jobs with all children / Running", f"{len(to_children)}/{len(to_running)} of {JOBS}"))
    print(row.format("total wall time (first create -> all Running)", f"{wall:.1f} s"))
    print(row.format("reconciles/s", f"{reconciles / wall:.1f}"))
    print(row.format("ansible-runner runs", f"{runs:.0f}"))
    print(row.format("mean batch size (jobs per run)", f"{mean_batch:.1f}"))
    print(row.format("load average (1 min) at the end", f"{os.getloadavg()[0]:.1f}"))
    print(row.format("operator peak RSS (VmHWM, Python process)", f"{peak / 1024:.0f} MiB"))
    print(row.format("peak RSS incl. runner subprocesses (sampled)", f"{rss_peak_tree / 1024:.0f} MiB"))
    if OUTCOME == "run":
        print(row.format("then all launchers succeed at once:", ""))
        print(row.format("launcher told -> Succeeded: p50", f"{percentile(to_succeeded, 50):.1f} s"))
        print(row.format("launcher told -> Succeeded: p95", f"{percentile(to_succeeded, 95):.1f} s"))
        print(row.format("launcher told -> Succeeded: max",
                         f"{max(to_succeeded) if to_succeeded else float('nan'):.1f} s"))
        print(row.format("jobs Succeeded", f"{len(to_succeeded)} of {JOBS}"))
        print(row.format("wall time (first told -> all Succeeded)", f"{done_wall:.1f} s"))
        print(row.format("ansible-runner runs", f"{finish_runs:.0f}"))
    print()
    print(f"CPU seconds, {os.cpu_count()} cores: from the first create to all Running ({wall:.0f} s wall)"
          + (f"; from the first launcher told to all Succeeded ({done_wall:.0f} s wall)" if finish_cpu else "") + ":")
    print()
    header = row.format("process", "to Running") + (" all Succeeded |" if finish_cpu else "")
    print(header)
    print(row.format("-" * 44, "-" * 10) + (" ------------- |" if finish_cpu else ""))
    for name, value in cpu_after.items():
        if name in cpu_before:
            extra = f" {finish_cpu.get(name, float('nan')):>13.1f} |" if finish_cpu else ""
            print(row.format(name, f"{value - cpu_before[name]:.1f}") + extra)
    ok = len(to_running) == JOBS and (OUTCOME != "run" or len(to_succeeded) == JOBS)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
