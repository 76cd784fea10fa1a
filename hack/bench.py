"""`make bench`: the operator loop under load on the local cluster (kwok nodes).

1. the cost of one bare ansible-runner run (ansible.builtin.ping, the runner path the operator uses);
2. one MPIJob on an idle operator: creation -> all children, and -> Running;
3. BENCH_JOBS MPIJobs x BENCH_WORKERS workers created at once: the same latencies (p50/p95/max), wall time,
   reconciles/s, batches, mean batch size and ansible-runner runs started, and the operator's peak RSS;
4. then all those jobs finish at once: every launcher pod is told (a kwok annotation) to succeed, and the time
   to the Succeeded condition is measured, split into the cluster's share (to the launcher Job's Complete) and the
   operator's (from it); then the time until every job's workers are marked for deletion (cleanPodPolicy Running),
   which ends this step's CPU and request window (an operator that cleans up later is charged for it). The step
   starts once the machine is quiet (BENCH_SETTLE_CORES, 0.5 busy cores, for a second; BENCH_SETTLE_MAX 30 s).
Launchers keep running until step 4 (BENCH_LAUNCHER_OUTCOME=succeed lets them end 2 s after they start, as
kwok's default for a Job's pod does: then step 3 also carries the completions).
CPU seconds of the operator, this script and each cluster component are printed for steps 3 and 4.
The operator runs as a subprocess, no leader election, watching only the bench's namespace (all namespaces with
BENCH_ALL_NAMESPACES=1); times are taken by this script's
own watches, from just before each create call to the first event that shows the object or condition.

BENCH_PEERS=kubeflow then runs steps 2-4 again, in fresh namespaces on the same cluster, against the Kubeflow MPI
Operator v0.8.2 (hack/drivers/kubeflow.py: the binary hack/kubeflow.sh builds, out of cluster, watching
only the bench's namespace and holding its lease there) at its defaults, then tuned (client QPS/burst 1000/2000 and
its work queue's rate limit/burst 1000/2000), and prints one table with the ratios peer / ours. One operator at a
time: each is stopped (and must have exited) and its namespace deleted before the next starts. A peer's wait for all
Running and for all Succeeded is bounded by BENCH_PEER_TIMEOUT (300 s): at its defaults it may not get there.
BENCH_PEERS=kubeflow-tuned runs only the tuned one (a long run, e.g. BENCH_JOBS=1000, where the defaults cannot keep up).
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import pathlib
import re
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

from hack.drivers.kubeflow import KubeflowProcess, kubeflow_operator_binary  # noqa: E402
from hack.drivers.mpijob import GROUP, PLURAL, VERSION, install_crd, new_mpijob  # noqa: E402
from hack.drivers.operator import OperatorProcess  # noqa: E402
from hack.drivers.paths import cache  # noqa: E402
from mpijob_operator.runner import BatchRunner  # noqa: E402

JOBS = int(os.environ.get("BENCH_JOBS", "200"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "4"))
SINGLE_RUNS = max(1, int(os.environ.get("BENCH_SINGLE_RUNS", "5")))  # single jobs on the idle operator, one at a time
# Before step 4, the machine settles (below SETTLE_CORES busy cores for a second, SETTLE_MAX s at most): the cluster's
# backlog of step 3 (pod statuses, endpoints, events) would otherwise weigh on the operator that got there first.
SETTLE_CORES = float(os.environ.get("BENCH_SETTLE_CORES", "0.5"))
SETTLE_MAX = float(os.environ.get("BENCH_SETTLE_MAX", "30"))
TIMEOUT = float(os.environ.get("BENCH_TIMEOUT", "600"))
OPERATOR_ARGS = os.environ.get("BENCH_OPERATOR_ARGS", "").split()
PREFIX = "bench-"
OUTCOME = os.environ.get("BENCH_LAUNCHER_OUTCOME", "run")
OUTCOME_ANNOTATION = "kwok.mpi.operator/outcome"
PEERS = [p for p in os.environ.get("BENCH_PEERS", "").replace(",", " ").split() if p]
PEER_TIMEOUT = float(os.environ.get("BENCH_PEER_TIMEOUT", "300"))
# "Kubeflow tuned": its client's QPS/burst (defaults 5/10) and its work queue's token bucket (defaults 10/100), the
# flags of cmd/mpi-operator/app/options/options.go in v0.8.2.
KUBEFLOW_TUNED = ["--kube-api-qps", "1000", "--kube-api-burst", "2000",
                  "--controller-queue-rate-limit", "1000", "--controller-queue-burst", "2000"]


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
        self.launcher_done: dict[tuple[str, str], float] = {}  # the launcher Job Complete (the cluster's share)
        self.workers_deleting: dict[tuple[str, str], set[str]] = {}  # worker pods marked for deletion, or gone
        self.cleaned: dict[tuple[str, str], float] = {}  # when the last of a job's workers was
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
                    if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.seen(kind, ev["object"], gone=ev["type"] == "DELETED")
                    if self.stop.is_set():
                        break
            except Exception as exc:  # keep measuring: relist
                print(f"bench watch {kind}: {exc}", file=sys.stderr)
                rv = None
                time.sleep(0.5)

    def seen(self, kind: str, obj: dict[str, Any], gone: bool = False) -> None:
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
                self.pod_seen((ns, job), meta["name"], meta.get("labels") or {}, obj, now, gone)
        else:
            job = (meta.get("labels") or {}).get("app")
        if not job or gone:
            return
        if kind == "Job" and any(c.get("type") == "Complete" and c.get("status") == "True"
                                 for c in (obj.get("status") or {}).get("conditions") or []):
            with self.lock:
                self.launcher_done.setdefault((ns, job), now)
        key = (ns, job)
        with self.lock:
            got = self.children.setdefault(key, set())
            got.add(f"{kind}/{meta['name']}")
            if key not in self.all_children and self.expected(job) <= got:
                self.all_children[key] = now


    def pod_seen(self, key: tuple[str, str], name: str, labels: dict[str, str], obj: dict[str, Any], now: float,
                 gone: bool = False) -> None:
        """The cluster's share: every worker Running and the launcher pod started (Running or done). And the
        clean-up: every worker marked for deletion."""
        role = labels.get("training.kubeflow.org/job-role", "")
        phase = (obj.get("status") or {}).get("phase", "")
        with self.lock:
            if role == "worker" and (gone or obj["metadata"].get("deletionTimestamp")):
                deleting = self.workers_deleting.setdefault(key, set())
                deleting.add(name)
                if len(deleting) >= self.workers:
                    self.cleaned.setdefault(key, now)
            if gone:
                return
            phases = self.pod_phases.setdefault(key, {})
            phases[f"{role}/{name}"] = phase
            workers = [p for n, p in phases.items() if n.startswith("worker/")]
            launcher = [p for n, p in phases.items() if n.startswith("launcher/")]
            if (key not in self.pods_up and len(workers) >= self.workers and all(p == "Running" for p in workers)
                    and any(p in ("Running", "Succeeded") for p in launcher)):
                self.pods_up[key] = now


def _namespace_scoped(args: list[str]) -> bool:
    """Whether an operator's command line limits it to one namespace (Go's and argparse's spellings)."""
    for i, arg in enumerate(args):
        if arg in ("-namespace", "--namespace"):
            return i + 1 < len(args) and args[i + 1] != ""
        if arg.startswith(("-namespace=", "--namespace=")):
            return arg.split("=", 1)[1] != ""
    return False


def cluster_wide_operators() -> dict[int, str]:
    """MPIJob operators on this machine, in or out of a container, that watch every namespace, the bench's too
    (this operator as `python -m mpijob_operator`, Kubeflow's binary `mpi-operator`): pid -> command line."""
    found = {}
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            args = (p / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
        except OSError:
            continue
        operator = "mpijob_operator" in args or (args and os.path.basename(args[0]) == "mpi-operator")
        if operator and not _namespace_scoped(args):
            found[int(p.name)] = " ".join(args)[:300]
    return found


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


CLUSTER_PIDS = cache() / "cluster/pids"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = False) -> float:
    """CPU time of a process (user + system); with `children`, of the whole tree below it: every live descendant's
    own, and (in each live process's cutime/cstime) that of every descendant which has ended and been waited for. A
    long-lived child (the warm run serving batches) is counted as it goes, not only once it ends."""
    if not children:
        stat = _stat(pid)
        return (stat[1] + stat[2]) / CLK_TCK if stat else float("nan")
    stats = {}
    for p in pathlib.Path("/proc").iterdir():
        if p.name.isdigit():
            stat = _stat(int(p.name))
            if stat:
                stats[int(p.name)] = stat
    if pid not in stats:
        return float("nan")
    below: dict[int, list[int]] = {}
    for q, stat in stats.items():
        below.setdefault(stat[0], []).append(q)
    ticks, stack = 0, [pid]
    while stack:
        q = stack.pop()
        ticks += sum(stats[q][1:])
        stack.extend(below.get(q, []))
    return ticks / CLK_TCK


def _stat(pid: int) -> tuple[int, int, int, int, int] | None:
    """(ppid, utime, stime, cutime, cstime) in clock ticks, or None for a process that is gone."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[11]), int(fields[12]), int(fields[13]), int(fields[14])


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


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU ticks of the machine so far, every core."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:8]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def settle() -> float:
    """Waits until the machine is quiet (see SETTLE_CORES); returns the seconds it took."""
    start = time.monotonic()
    before = machine_busy()
    while time.monotonic() - start < SETTLE_MAX:
        time.sleep(1.0)
        after = machine_busy()
        busy = (after[0] - before[0]) / max(1, after[1] - before[1]) * (os.cpu_count() or 1)
        if busy < SETTLE_CORES:
            break
        before = after
    return time.monotonic() - start


_REQUEST_LINE = re.compile(r'^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$', re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def api_requests(kubeconfig: str) -> dict[str, float]:
    """The API server's request counts so far (every client's), by "VERB resource[/subresource]"; {} when its
    /metrics cannot be read. The difference between two operators' runs is what each operator asked for."""
    from ansible_collections.mpi.operator.plugins.module_utils.kube.rest import connect

    try:
        status, _reason, data = connect({"kubeconfig": kubeconfig}).raw("GET", "/metrics", accept="text/plain")
        text = data.decode() if status == 200 else ""
    except Exception:  # a cluster that does not let us read its metrics: no rows
        return {}
    out: dict[str, float] = {}
    for labels, value in _REQUEST_LINE.findall(text):
        lab = dict(_LABEL.findall(labels))
        key = f"{lab.get('verb', '?')} {lab.get('resource', '?')}" + (f"/{lab['subresource']}" if lab.get("subresource") else "")
        out[key] = out.get(key, 0.0) + float(value)
    return out


def requests_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}


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
    """Phase 2: one job on an idle operator, SINGLE_RUNS times, one after the other: the median and the slowest."""
    to_children: float
    to_running: float
    children_max: float = float("nan")
    running_max: float = float("nan")


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
    runs: float  # batches
    starts: float  # ansible-runner runs started (warm: serving batches; cold: one batch)
    reconciles: float
    mean_batch: float
    cpu: dict[str, float]
    requests: dict[str, float] = field(default_factory=dict)  # API requests of every client, by verb and resource


@dataclass
class Finish:
    """Phase 4: every launcher told to succeed at once (only when the launchers keep running)."""
    wall: float = float("nan")
    to_succeeded: list[float] = field(default_factory=list)
    to_launcher_done: list[float] = field(default_factory=list)  # the cluster's share: kwok, the Job controller
    react: list[float] = field(default_factory=list)  # the operator's share: from the launcher Job Complete
    to_cleaned: list[float] = field(default_factory=list)  # to the last of the job's workers marked for deletion
    window: float = float("nan")  # first told -> all Succeeded and cleaned up: the CPU and requests window
    settled: float = float("nan")  # seconds the machine took to be quiet before the launchers were told
    runs: float = 0.0
    starts: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)
    requests: dict[str, float] = field(default_factory=dict)


def prepare(api: client.ApiClient) -> Capacity:
    """The CRD, no namespace of a previous run left, and a warning when the nodes cannot take every pod."""
    core = client.CoreV1Api(api)
    install_crd(api)
    delete_namespaces(core, wait=300)
    capacity = Capacity(free_pod_slots(core), (JOBS + SINGLE_RUNS) * (WORKERS + 1))
    if capacity.slots < capacity.needed:
        print(f"WARNING: the schedulable nodes can take {capacity.slots} more pods, the bench needs {capacity.needed}: "
              "jobs will wait for capacity and the latencies measure that (make bench sizes the local cluster; "
              "MPI_CLUSTER_NODES)", file=sys.stderr)
    return capacity


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before[k] for k, v in after.items() if k in before}


class Ours:
    """This operator: `python -m mpijob_operator` as a subprocess, its ansible-runner runs below it."""

    name = "mpi.operator"
    timeout = TIMEOUT

    def __init__(self) -> None:
        self.op: OperatorProcess | None = None
        self.flags: list[str] = []

    def start(self, kubeconfig: str, ns: str, work: pathlib.Path) -> int:
        scope = [] if os.environ.get("BENCH_ALL_NAMESPACES") else ["--namespace", ns]
        self.flags = ["--no-leader-elect", *scope, *OPERATOR_ARGS]
        self.op = OperatorProcess(kubeconfig, work, self.flags, name="bench-operator").start()
        assert self.op.proc is not None
        return self.op.proc.pid

    def wait_ready(self) -> None:
        assert self.op is not None
        self.op.wait_ready()

    def stop(self) -> bool:
        """Stops it and whatever run of its process group is left; True once all of it has exited."""
        assert self.op is not None and self.op.proc is not None
        self.op.stop()
        self.op.stop()  # on an exited operator: SIGKILL to the leftovers of its group
        return self.op.proc.poll() is not None and self.op.runs_in_flight() == 0

    def counters(self) -> dict[str, float]:
        op = self.op
        assert op is not None
        return {
            "reconciles": sum(op.metric("mpi_operator_reconciles_total", {"result": r}) or 0
                              for r in ("ok", "retry", "error", "deleted")),
            "runs": op.metric("mpi_operator_batch_size_count") or 0,
            "batched": op.metric("mpi_operator_batch_size_sum") or 0,
            "starts": sum(op.metric("mpi_operator_runner_starts_total", {"kind": k}) or 0 for k in ("warm", "cold")),
        }


class Kubeflow:
    """The Kubeflow MPI Operator binary, out of cluster, watching the bench's namespace (its lease there too)."""

    timeout = PEER_TIMEOUT

    def __init__(self, name: str, binary: str, args: list[str]):
        self.name, self.binary, self.args = name, binary, args
        self.peer: KubeflowProcess | None = None
        self.flags: list[str] = []

    def start(self, kubeconfig: str, ns: str, work: pathlib.Path) -> int:
        self.peer = KubeflowProcess(self.binary, kubeconfig, ns, self.args, work / "kubeflow.log").start()
        self.flags = self.peer.args[1:]
        assert self.peer.proc is not None
        return self.peer.proc.pid

    def wait_ready(self) -> None:
        assert self.peer is not None
        self.peer.wait_ready()

    def stop(self) -> bool:
        assert self.peer is not None and self.peer.proc is not None
        self.peer.stop()
        return self.peer.proc.poll() is not None

    def counters(self) -> dict[str, float]:
        return {}  # no runs or batches to count


def latencies(done: dict[tuple[str, str], float], start: dict[tuple[str, str], float],
              keys: list[tuple[str, str]]) -> list[float]:
    """Per job, from `start` to `done`; infinite for a job that did not get there (a percentile that falls on one
    is printed as "> wall time")."""
    return [done[k] - start[k] if k in done and k in start else math.inf for k in keys]


def reached(values: list[float]) -> int:
    return sum(math.isfinite(v) for v in values)


class Bench:
    """One run against one operator (`subject`): its namespace, the operator process, the watches and the RSS
    sampler; a method per measured phase."""

    def __init__(self, kubeconfig: str, api: client.ApiClient, subject: Ours | Kubeflow):
        self.kubeconfig = kubeconfig
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.subject = subject
        work = pathlib.Path(tempfile.mkdtemp(prefix="mpi-operator-bench-"))
        # one namespace, watched alone: a shared cluster's other MPIJobs are none of the bench's business
        self.ns = f"{PREFIX}{uuid.uuid4().hex[:6]}"
        create_namespace(self.core, self.ns)
        self.pid = subject.start(kubeconfig, self.ns, work)
        self.tracker = Tracker(api, WORKERS)
        self.rss_peak_tree = 0
        self.peak = 0
        self.status_writers: dict[str, int] = {}
        self.intruders: dict[int, str] = {}  # other operators that watched every namespace meanwhile
        self.sampling = threading.Event()

    def _sample(self) -> None:
        ticks = 0
        while not self.sampling.is_set():
            self.rss_peak_tree = max(self.rss_peak_tree, rss_tree_kib(self.pid))
            if ticks % 8 == 0:
                self.intruders.update({k: v for k, v in cluster_wide_operators().items() if k != self.pid})
            ticks += 1
            self.sampling.wait(0.25)

    def start(self) -> None:
        self.subject.wait_ready()
        self.tracker.start()
        threading.Thread(target=self._sample, daemon=True).start()
        time.sleep(1)

    def writers(self) -> dict[str, int]:
        """The field managers that wrote the status of the bench's MPIJobs, with how many jobs each: one, the operator
        under test, unless another controller (an operator installed cluster-wide) reconciled them too."""
        jobs = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL)["items"]
        found: dict[str, int] = {}
        for j in jobs:
            for m in {m.get("manager", "") for m in j["metadata"].get("managedFields") or []
                      if m.get("subresource") == "status"}:
                found[m] = found.get(m, 0) + 1
        return found

    def stop(self) -> None:
        self.sampling.set()
        self.tracker.stop.set()
        try:
            self.status_writers = self.writers()
        finally:
            exited = self.subject.stop()
            delete_namespaces(self.core)
        if not exited:  # the next operator must not share the MPIJobs with this one
            raise RuntimeError(f"{self.subject.name} (pid {self.pid}) did not exit")

    def create(self, key: tuple[str, str]) -> None:
        self.tracker.created[key] = time.time()
        self.custom.create_namespaced_custom_object(GROUP, VERSION, key[0], PLURAL, mpijob(key[1], WORKERS))

    def single(self) -> Single:
        tracker, keys = self.tracker, [(self.ns, f"single-{i}") for i in range(SINGLE_RUNS)]
        for key in keys:
            time.sleep(2)  # idle: the loop has settled after the previous one
            self.create(key)
            try:
                wait_until(lambda key=key: key in tracker.running, 120, "the single job to run")
            except TimeoutError as exc:
                print(f"WARNING: {self.subject.name}: {exc}", file=sys.stderr)
        children = latencies(tracker.all_children, tracker.created, keys)
        running = latencies(tracker.running, tracker.created, keys)
        time.sleep(2)  # let the loop settle before the bulk run
        return Single(percentile(children, 50), percentile(running, 50), max(children), max(running))

    def bulk(self) -> Bulk:
        tracker, timeout = self.tracker, self.subject.timeout
        requests_before = api_requests(self.kubeconfig)
        before, cpu_before = self.subject.counters(), cpu_snapshot(self.pid)
        keys = [(self.ns, f"job-{i:04d}") for i in range(JOBS)]
        start = time.time()
        with cf.ThreadPoolExecutor(16) as pool:
            list(pool.map(self.create, keys))
        created_all = time.time() - start
        try:
            wait_until(lambda: all(k in tracker.running for k in keys), timeout, "every job to run")
        except TimeoutError as exc:
            print(f"WARNING: {self.subject.name}: {exc}: {sum(k in tracker.running for k in keys)}/{JOBS} running",
                  file=sys.stderr)
        wall = time.time() - start
        cpu = cpu_delta(cpu_before, cpu_snapshot(self.pid))
        requests = requests_delta(requests_before, api_requests(self.kubeconfig))
        time.sleep(1)
        after = self.subject.counters()
        runs = after["runs"] - before["runs"] if after else math.nan
        return Bulk(
            keys=keys, created_all=created_all, wall=wall,
            to_children=latencies(tracker.all_children, tracker.created, keys),
            to_pods_up=latencies(tracker.pods_up, tracker.created, keys),
            to_running=latencies(tracker.running, tracker.created, keys),
            react=[max(0.0, tracker.running[k] - tracker.pods_up[k]) for k in keys
                   if k in tracker.running and k in tracker.pods_up],
            runs=runs, starts=after["starts"] - before["starts"] if after else math.nan,
            reconciles=after["reconciles"] - before["reconciles"] if after else math.nan,
            mean_batch=(after["batched"] - before["batched"]) / runs if after and runs else math.nan, cpu=cpu,
            requests=requests)

    def finish(self, keys: list[tuple[str, str]]) -> Finish:
        tracker, timeout = self.tracker, self.subject.timeout
        settled = settle()
        requests_before = api_requests(self.kubeconfig)
        before, cpu_before = self.subject.counters(), cpu_snapshot(self.pid)
        told = finish_all(self.core, self.ns, keys)
        try:
            wait_until(lambda: all(k in tracker.succeeded for k in keys), timeout, "every job to succeed")
        except TimeoutError as exc:
            print(f"WARNING: {self.subject.name}: {exc}: {sum(k in tracker.succeeded for k in keys)}/{JOBS} "
                  "succeeded", file=sys.stderr)
        first = min(told.values(), default=time.time())
        wall = time.time() - first
        try:  # the clean-up (cleanPodPolicy Running) is work of this phase too, whenever an operator does it
            wait_until(lambda: all(k in tracker.cleaned for k in keys), timeout, "every job's workers to be deleted")
        except TimeoutError as exc:
            print(f"WARNING: {self.subject.name}: {exc}: {sum(k in tracker.cleaned for k in keys)}/{JOBS} "
                  "cleaned up", file=sys.stderr)
        window = time.time() - first
        after = self.subject.counters()
        return Finish(wall=wall, window=window, settled=settled, cpu=cpu_delta(cpu_before, cpu_snapshot(self.pid)),
                      to_cleaned=latencies(tracker.cleaned, told, keys),
                      requests=requests_delta(requests_before, api_requests(self.kubeconfig)),
                      to_succeeded=latencies(tracker.succeeded, told, keys),
                      to_launcher_done=latencies(tracker.launcher_done, told, keys),
                      react=[max(0.0, tracker.succeeded[k] - tracker.launcher_done[k]) for k in keys
                             if k in tracker.succeeded and k in tracker.launcher_done],
                      runs=after["runs"] - before["runs"] if after else math.nan,
                      starts=after["starts"] - before["starts"] if after else math.nan)

    def run(self) -> Result:
        try:
            self.start()
            single = self.single()
            bulk = self.bulk()
            finish = self.finish(bulk.keys) if OUTCOME == "run" else Finish()
            self.peak = peak_rss_kib(self.pid)
        finally:
            self.stop()
        if self.intruders:
            print(f"WARNING: while {self.subject.name} was measured, operators watching every namespace ran on this "
                  f"machine and may have reconciled the bench's jobs too: {self.intruders}", file=sys.stderr)
        if len(self.status_writers) > 1:
            print(f"WARNING: the status of the bench's MPIJobs was written by {self.status_writers} (manager: jobs): another "
                  f"controller reconciled them besides {self.subject.name}; these numbers are not its alone",
                  file=sys.stderr)
        return Result(self.subject.name, self.subject.flags, single, bulk, finish, self.peak, self.rss_peak_tree,
                      self.status_writers)


@dataclass
class Result:
    """What one operator measured (`note` instead when it could not run)."""
    name: str
    flags: list[str] = field(default_factory=list)
    single: Single | None = None
    bulk: Bulk | None = None
    finish: Finish | None = None
    peak: int = 0
    rss_peak_tree: int = 0
    status_writers: dict[str, int] = field(default_factory=dict)
    note: str = ""


ROW = "| {:<44} | {:>10} |"


def secs(value: float, limit: float, digits: int = 1) -> str:
    return f"{value:.{digits}f} s" if math.isfinite(value) else f"> {limit:.0f} s"


def print_spread(label: str, values: list[float], limit: float) -> None:
    print(ROW.format(f"{label}: p50", secs(percentile(values, 50), limit)))
    print(ROW.format(f"{label}: p95", secs(percentile(values, 95), limit)))
    print(ROW.format(f"{label}: max", secs(max(values) if values else math.nan, limit)))


def report(result: Result, capacity: Capacity, baseline: float) -> None:
    row = ROW
    single, bulk, finish = result.single, result.bulk, result.finish
    assert single is not None and bulk is not None and finish is not None
    print()
    print(f"## make bench: {result.name}, {JOBS} MPIJobs x {WORKERS} workers, flags: {' '.join(result.flags)}")
    print()
    print(row.format("measure", "value"))
    print(row.format("-" * 44, "-" * 10))
    if result.name == Ours.name:
        print(row.format("bare ansible-runner run (ping, median of 3)", f"{baseline:.2f} s"))
    print(row.format(f"single job, idle: create -> all children p50 ({SINGLE_RUNS} jobs)",
                     secs(single.to_children, 120, 2)))
    print(row.format("single job, idle: create -> all children max", secs(single.children_max, 120, 2)))
    print(row.format(f"single job, idle: create -> Running p50 ({SINGLE_RUNS} jobs)", secs(single.to_running, 120, 2)))
    print(row.format("single job, idle: create -> Running max", secs(single.running_max, 120, 2)))
    print(row.format("free pod slots on schedulable nodes / needed", f"{capacity.slots}/{capacity.needed}"))
    print(row.format(f"{JOBS} jobs created (client, 16 threads)", f"{bulk.created_all:.1f} s"))
    for label, values in (("create -> all children", bulk.to_children),
                          ("create -> pods up (cluster side)", bulk.to_pods_up),
                          ("create -> Running", bulk.to_running), ("pods up -> Running (operator side)", bulk.react)):
        print_spread(label, values, bulk.wall)
    print(row.format("jobs with all children / Running",
                     f"{reached(bulk.to_children)}/{reached(bulk.to_running)} of {JOBS}"))
    print(row.format("total wall time (first create -> all Running)", f"{bulk.wall:.1f} s"))
    if math.isfinite(bulk.runs):
        print(row.format("reconciles/s", f"{bulk.reconciles / bulk.wall:.1f}"))
        print(row.format("batches", f"{bulk.runs:.0f}"))
        print(row.format("mean batch size (jobs per batch)", f"{bulk.mean_batch:.1f}"))
        print(row.format("ansible-runner runs started", f"{bulk.starts:.0f}"))
    print(row.format("load average (1 min) at the end", f"{os.getloadavg()[0]:.1f}"))
    writers = ", ".join(f"{k} ({v} jobs)" for k, v in sorted(result.status_writers.items()))
    print(row.format("MPIJob status written by (field managers)", writers))
    print(row.format("operator peak RSS (VmHWM, main process)", f"{result.peak / 1024:.0f} MiB"))
    print(row.format("peak RSS incl. runner subprocesses (sampled)", f"{result.rss_peak_tree / 1024:.0f} MiB"))
    if OUTCOME == "run":
        print(row.format(f"machine quiet (< {SETTLE_CORES} cores) after", f"{finish.settled:.1f} s"))
        print(row.format("then all launchers succeed at once:", ""))
        print_spread("told -> launcher Job Complete (cluster)", finish.to_launcher_done, finish.wall)
        print_spread("launcher told -> Succeeded", finish.to_succeeded, finish.wall)
        print_spread("launcher Complete -> Succeeded (operator)", finish.react, finish.wall)
        print_spread("launcher told -> workers deleted", finish.to_cleaned, finish.window)
        print(row.format("jobs Succeeded", f"{reached(finish.to_succeeded)} of {JOBS}"))
        print(row.format("wall time (first told -> all Succeeded)", f"{finish.wall:.1f} s"))
        print(row.format("wall time (first told -> all cleaned up)", f"{finish.window:.1f} s"))
        if math.isfinite(finish.runs):
            print(row.format("batches", f"{finish.runs:.0f}"))
            print(row.format("ansible-runner runs started", f"{finish.starts:.0f}"))
    print()
    print(f"CPU seconds, {os.cpu_count()} cores: from the first create to all Running ({bulk.wall:.0f} s wall)"
          + (f"; from the first launcher told to all Succeeded and their workers deleted ({finish.window:.0f} s wall)"
             if finish.cpu else "")
          + ":")
    print()
    print(row.format("process", "to Running") + (" Succeeded, cleaned |" if finish.cpu else ""))
    print(row.format("-" * 44, "-" * 10) + (" ------------------ |" if finish.cpu else ""))
    for name, value in bulk.cpu.items():
        extra = f" {finish.cpu.get(name, float('nan')):>18.1f} |" if finish.cpu else ""
        print(row.format(name, f"{value:.1f}") + extra)
    if bulk.requests:
        print()
        print("API requests (every client: the operator, kube-controller-manager, the scheduler, kwok, this script), "
              "the 12 most frequent:")
        print()
        print(row.format("verb resource", "to Running") + (" Succeeded, cleaned |" if finish.cpu else ""))
        print(row.format("-" * 44, "-" * 10) + (" ------------------ |" if finish.cpu else ""))
        top = sorted(set(bulk.requests) | set(finish.requests),
                     key=lambda k: -(bulk.requests.get(k, 0) + finish.requests.get(k, 0)))[:12]
        for name in [*top, "total"]:
            value = sum(bulk.requests.values()) if name == "total" else bulk.requests.get(name, 0)
            done = sum(finish.requests.values()) if name == "total" else finish.requests.get(name, 0)
            print(row.format(name, f"{value:.0f}") + (f" {done:>18.0f} |" if finish.cpu else ""))


def comparison_rows(r: Result) -> dict[str, tuple[float, str, float]]:
    """The compared measures of one run: label -> (value, printed value, how long the phase waited for it)."""
    single, bulk, finish = r.single, r.bulk, r.finish
    assert single is not None and bulk is not None and finish is not None
    rows: dict[str, tuple[float, float, int]] = {  # value, limit, digits
        "single job, idle: create -> all children p50": (single.to_children, 120, 2),
        "single job, idle: create -> Running p50": (single.to_running, 120, 2),
        f"{JOBS} x {WORKERS}: create -> all children p50": (percentile(bulk.to_children, 50), bulk.wall, 1),
        f"{JOBS} x {WORKERS}: create -> all children p95": (percentile(bulk.to_children, 95), bulk.wall, 1),
        f"{JOBS} x {WORKERS}: create -> Running p50": (percentile(bulk.to_running, 50), bulk.wall, 1),
        f"{JOBS} x {WORKERS}: create -> Running p95": (percentile(bulk.to_running, 95), bulk.wall, 1),
        f"{JOBS} x {WORKERS}: pods up -> Running p95 (operator)": (percentile(bulk.react, 95), bulk.wall, 1),
    }
    if OUTCOME == "run":
        for p in (50, 95):
            rows[f"launcher told -> Succeeded p{p}"] = (percentile(finish.to_succeeded, p), finish.wall, 1)
        rows["launcher Complete -> Succeeded p95 (operator)"] = (percentile(finish.react, 95), finish.wall, 1)
        rows["launcher told -> workers deleted p95"] = (percentile(finish.to_cleaned, 95), finish.window, 1)
    out = {k: (v, secs(v, limit, digits), limit) for k, (v, limit, digits) in rows.items()}
    out["jobs Running"] = (math.nan, f"{reached(bulk.to_running)}/{JOBS}", 0)
    if OUTCOME == "run":
        out["jobs Succeeded"] = (math.nan, f"{reached(finish.to_succeeded)}/{JOBS}", 0)
    cpu, machine = "operator incl. runner subprocesses", "machine total (all cores)"
    out["operator CPU s, create -> all Running"] = (bulk.cpu[cpu], f"{bulk.cpu[cpu]:.1f}", 0)
    if finish.cpu:
        out["operator CPU s, told -> Succeeded, cleaned up"] = (finish.cpu[cpu], f"{finish.cpu[cpu]:.1f}", 0)
    if bulk.requests:
        total = sum(bulk.requests.values())
        out["API requests (all clients), -> all Running"] = (total, f"{total:.0f}", 0)
    if finish.requests:
        total = sum(finish.requests.values())
        out["API requests (all clients), -> cleaned up"] = (total, f"{total:.0f}", 0)
    out["peak RSS incl. children"] = (r.rss_peak_tree / 1024, f"{r.rss_peak_tree / 1024:.0f} MiB", 0)
    out["machine CPU s, create -> all Running"] = (bulk.cpu[machine], f"{bulk.cpu[machine]:.1f}", 0)
    return out


def ratio(peer: tuple[float, str, float], ours: tuple[float, str, float]) -> str:
    """peer / ours; a peer that did not get there within its wait: more than that wait / ours."""
    if math.isnan(peer[0]) or not math.isfinite(ours[0]) or ours[0] <= 0:
        return ""
    if math.isinf(peer[0]):
        return f"> {peer[2] / ours[0]:.1f}"
    return f"{peer[0] / ours[0]:.2f}"


def compare(results: list[Result]) -> None:
    """One table: every operator's measures side by side, and each peer's ratio to ours (peer / ours: below 1 the
    peer is faster or smaller)."""
    ours, peers = results[0], results[1:]
    mine = comparison_rows(ours)
    theirs = [comparison_rows(p) if p.note == "" else {} for p in peers]
    head = ["measure", ours.name, *(p.name for p in peers), *(f"{p.name} / ours" for p in peers)]
    lines = []
    for label, (_, shown, _) in mine.items():
        cells = [label, shown]
        cells += [t[label][1] if t else p.note for p, t in zip(peers, theirs, strict=True)]
        cells += [ratio(t[label], mine[label]) if t else "" for t in theirs]
        lines.append(cells)
    widths = [max(len(str(c)) for c in col) for col in zip(head, *lines, strict=True)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths, strict=True))) + " |"

    print()
    print(f"## make bench, side by side: {JOBS} MPIJobs x {WORKERS} workers, one operator at a time on the same "
          f"cluster, {os.cpu_count()} cores")
    print()
    for r in results:
        print(f"- {r.name}: {r.note or ' '.join(r.flags)}")
    print()
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for cells in lines:
        print(line(cells))
    print()
    print('ratio = peer / ours: below 1 the peer is faster, uses less CPU or memory; "> N s": not reached in the '
          "N s the phase waited (BENCH_TIMEOUT for ours, BENCH_PEER_TIMEOUT for peers).")


def peer_subjects() -> list[Kubeflow | Result]:
    """The peers BENCH_PEERS asks for, or, when one cannot run, a Result saying why."""
    out: list[Kubeflow | Result] = []
    known = {"kubeflow": (("Kubeflow", []), ("Kubeflow tuned", KUBEFLOW_TUNED)),
             "kubeflow-tuned": (("Kubeflow tuned", KUBEFLOW_TUNED),)}
    for peer in PEERS:
        if peer not in known:
            raise SystemExit(f"BENCH_PEERS: unknown peer {peer!r} (known: {', '.join(known)})")
        binary = kubeflow_operator_binary()
        for name, args in known[peer]:
            out.append(Kubeflow(name, binary, args) if binary else
                       Result(name, note="not run: no Go toolchain to build the Kubeflow MPI Operator"))
    return out


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    # The shell's auth, as the modules and the operator connect (importable once mpijob_operator is imported).
    from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import api_client

    api = api_client({"kubeconfig": kubeconfig})
    peers = peer_subjects()  # before the long run: a wrong BENCH_PEERS fails now
    capacity = prepare(api)
    baseline = runner_baseline()
    results = [Bench(kubeconfig, api, Ours()).run()]
    report(results[0], capacity, baseline)
    for peer in peers:
        if isinstance(peer, Result):
            results.append(peer)
            continue
        delete_namespaces(client.CoreV1Api(api), wait=300)  # the previous run's teardown, off this run's clock
        results.append(Bench(kubeconfig, api, peer).run())
        report(results[-1], capacity, baseline)
    if len(results) > 1:
        compare(results)
    ours = results[0]
    assert ours.bulk is not None and ours.finish is not None
    ok = reached(ours.bulk.to_running) == JOBS and (OUTCOME != "run" or reached(ours.finish.to_succeeded) == JOBS)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
