"""The scenario: one run against one operator, a method per measured step (a single job on the idle operator, the
burst of BENCH_JOBS, all launchers finishing at once), and the cost of a bare ansible-runner run."""

from __future__ import annotations

import concurrent.futures as cf
import math
import pathlib
import statistics
import sys
import tempfile
import threading
import time
import uuid

from kubernetes import client

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import job_key
from hack.experiments.bench.accounting import (
    api_requests,
    cluster_wide_operators,
    cpu_delta,
    cpu_snapshot,
    memory_by_process,
    peak_rss_kib,
    requests_delta,
    rss_tree_kib,
    settle,
)
from hack.experiments.bench.cluster import create_namespace, delete_namespaces, finish_all, mpijob
from hack.experiments.bench.cpuprofile import Sampler
from hack.experiments.bench.results import Bulk, Finish, Result, Single, latencies, percentile, shares
from hack.experiments.bench.settings import (
    CPU_PROFILE,
    JOBS,
    OUTCOME,
    PREFIX,
    PROFILE,
    SINGLE_RUNS,
    WORKERS,
)
from hack.experiments.bench.subjects import Kubeflow, Ours
from hack.experiments.bench.tracker import Tracker
from hack.lib.mpijob import GROUP, PLURAL, VERSION
from hack.lib.wait import wait_until
from mpijob_operator.runner import BatchRunner


class StillRunning(RuntimeError):
    """The operator did not exit when stopped: the next one would share the MPIJobs with it."""


class Bench:
    """One run against one operator (`subject`): its namespace, the operator process, the watches and the RSS
    sampler; a method per measured phase. `jobs` x `workers` for the burst (BENCH_JOBS x BENCH_WORKERS unless given),
    `single_runs` single jobs first (0: none), each wait bounded by `timeout` (the subject's unless given)."""

    def __init__(
        self,
        kubeconfig: str,
        api: client.ApiClient,
        subject: Ours | Kubeflow,
        jobs: int = JOBS,
        workers: int = WORKERS,
        single_runs: int = SINGLE_RUNS,
        timeout: float | None = None,
    ):
        self.kubeconfig = kubeconfig
        self.jobs, self.workers, self.single_runs = jobs, workers, single_runs
        self.timeout = subject.timeout if timeout is None else timeout
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.subject = subject
        self.work = work = pathlib.Path(tempfile.mkdtemp(prefix="mpi-operator-bench-"))
        # one namespace, watched alone: a shared cluster's other MPIJobs are none of the bench's business
        self.ns = f"{PREFIX}{uuid.uuid4().hex[:6]}"
        create_namespace(self.core, self.ns)
        self.pid = subject.start(kubeconfig, self.ns, work)
        self.tracker = Tracker(api, workers)
        self.rss_peak_tree = 0
        self.peak = 0
        self.rss_at_peak: list[dict[str, object]] = []  # BENCH_PROFILE=1: each process of the tree at the peak
        self.cpu_profile: dict[str, dict] = {}  # BENCH_CPU_PROFILE=1: phase -> where this operator's CPU went (py-spy)
        self.status_writers: dict[str, int] = {}
        self.intruders: dict[int, str] = {}  # other operators that watched every namespace meanwhile
        self.sampling = threading.Event()

    def _sample(self) -> None:
        ticks = 0
        while not self.sampling.is_set():
            rss = rss_tree_kib(self.pid)
            if rss > self.rss_peak_tree and PROFILE:
                self.rss_at_peak = memory_by_process(self.pid)
            self.rss_peak_tree = max(self.rss_peak_tree, rss)
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
            for m in {
                m.get("manager", "")
                for m in j["metadata"].get("managedFields") or []
                if m.get("subresource") == "status"
            }:
                found[m] = found.get(m, 0) + 1
        return found

    def sampler(self, phase: str) -> Sampler | None:
        """BENCH_CPU_PROFILE=1: py-spy on this operator's tree for one phase (Python only: not a Go peer)."""
        if not CPU_PROFILE or not isinstance(self.subject, Ours):
            return None
        s = Sampler(self.pid, self.work / f"cpu-{phase}.txt")
        s.start()
        return s

    def sampled(self, phase: str, sampler: Sampler | None) -> None:
        summary = sampler.stop() if sampler else None
        if summary is not None:
            self.cpu_profile[phase] = {**summary.as_dict(), "stacks": str(sampler.out)}

    def stop(self) -> None:
        self.sampling.set()
        self.tracker.stop.set()
        try:
            self.status_writers = self.writers()
        finally:
            exited = self.subject.stop()
            delete_namespaces(self.core)
        if not exited:  # the next operator must not share the MPIJobs with this one
            raise StillRunning(f"{self.subject.name} (pid {self.pid}) did not exit")

    def create(self, key: tuple[str, str]) -> None:
        self.tracker.created[key] = time.time()
        self.custom.create_namespaced_custom_object(GROUP, VERSION, key[0], PLURAL, mpijob(key[1], self.workers))

    def single(self) -> Single:
        tracker, keys = self.tracker, [(self.ns, f"single-{i}") for i in range(self.single_runs)]
        for key in keys:
            time.sleep(2)  # idle: the loop has settled after the previous one
            self.create(key)
            try:
                wait_until(lambda key=key: key in tracker.running, 120, "the single job to run", interval=0.05)
            except TimeoutError as exc:
                print(f"WARNING: {self.subject.name}: {exc}", file=sys.stderr)
        children = latencies(tracker.all_children, tracker.created, keys)
        running = latencies(tracker.running, tracker.created, keys)
        time.sleep(2)  # let the loop settle before the bulk run
        return Single(percentile(children, 50), percentile(running, 50), max(children), max(running))

    def bulk(self) -> Bulk:
        tracker, timeout = self.tracker, self.timeout
        requests_before = api_requests(self.kubeconfig)
        before, cpu_before = self.subject.counters(), cpu_snapshot(self.pid)
        keys = [(self.ns, f"job-{i:04d}") for i in range(self.jobs)]
        sampler = self.sampler("to-running")
        start = time.time()
        with cf.ThreadPoolExecutor(16) as pool:
            list(pool.map(self.create, keys))
        created_all = time.time() - start
        try:
            wait_until(lambda: all(k in tracker.running for k in keys), timeout, "every job to run", interval=0.05)
        except TimeoutError as exc:
            print(
                f"WARNING: {self.subject.name}: {exc}: {sum(k in tracker.running for k in keys)}/{self.jobs} running",
                file=sys.stderr,
            )
        end = time.time()  # a job that gets there after the wait ended did not get there
        wall = end - start
        cpu = cpu_delta(cpu_before, cpu_snapshot(self.pid))
        self.sampled("to-running", sampler)
        requests = requests_delta(requests_before, api_requests(self.kubeconfig))
        time.sleep(1)
        after = self.subject.counters()
        runs = after["runs"] - before["runs"] if after else math.nan
        return Bulk(
            keys=keys,
            created_all=created_all,
            wall=wall,
            to_children=latencies(tracker.all_children, tracker.created, keys, end),
            to_pods_up=latencies(tracker.pods_up, tracker.created, keys, end),
            to_running=latencies(tracker.running, tracker.created, keys, end),
            react=shares(tracker.running, tracker.pods_up, keys, end),
            runs=runs,
            starts=after["starts"] - before["starts"] if after else math.nan,
            reconciles=after["reconciles"] - before["reconciles"] if after else math.nan,
            mean_batch=(after["batched"] - before["batched"]) / runs if after and runs else math.nan,
            cpu=cpu,
            requests=requests,
        )

    def finish(self, keys: list[tuple[str, str]]) -> Finish:
        tracker, timeout = self.tracker, self.timeout
        settled = settle()
        requests_before = api_requests(self.kubeconfig)
        before, cpu_before = self.subject.counters(), cpu_snapshot(self.pid)
        sampler = self.sampler("to-cleaned-up")
        told = finish_all(self.core, self.ns, keys)
        try:
            wait_until(
                lambda: all(k in tracker.succeeded for k in keys), timeout, "every job to succeed", interval=0.05
            )
        except TimeoutError as exc:
            print(
                f"WARNING: {self.subject.name}: {exc}: {sum(k in tracker.succeeded for k in keys)}/{self.jobs} "
                "succeeded",
                file=sys.stderr,
            )
        first = min(told.values(), default=time.time())
        succeeded_by = time.time()
        wall = succeeded_by - first
        try:  # the clean-up (cleanPodPolicy Running) is work of this phase too, whenever an operator does it
            wait_until(
                lambda: all(k in tracker.cleaned for k in keys),
                timeout,
                "every job's workers to be deleted",
                interval=0.05,
            )
        except TimeoutError as exc:
            print(
                f"WARNING: {self.subject.name}: {exc}: {sum(k in tracker.cleaned for k in keys)}/{self.jobs} "
                "cleaned up",
                file=sys.stderr,
            )
        cleaned_by = time.time()
        window = cleaned_by - first
        cpu = cpu_delta(cpu_before, cpu_snapshot(self.pid))
        self.sampled("to-cleaned-up", sampler)
        after = self.subject.counters()
        return Finish(
            wall=wall,
            window=window,
            settled=settled,
            cpu=cpu,
            to_cleaned=latencies(tracker.cleaned, told, keys, cleaned_by),
            requests=requests_delta(requests_before, api_requests(self.kubeconfig)),
            to_succeeded=latencies(tracker.succeeded, told, keys, succeeded_by),
            to_launcher_done=latencies(tracker.launcher_done, told, keys, succeeded_by),
            react=shares(tracker.succeeded, tracker.launcher_done, keys, succeeded_by),
            runs=after["runs"] - before["runs"] if after else math.nan,
            starts=after["starts"] - before["starts"] if after else math.nan,
        )

    def run(self) -> Result:
        try:
            self.start()
            single = self.single() if self.single_runs else None
            bulk = self.bulk()
            finish = self.finish(bulk.keys) if OUTCOME == "run" else Finish()
            self.peak = peak_rss_kib(self.pid)
        finally:
            self.stop()
        if self.intruders:
            print(
                f"WARNING: while {self.subject.name} was measured, operators watching every namespace ran on this "
                f"machine and may have reconciled the bench's jobs too: {self.intruders}",
                file=sys.stderr,
            )
        if len(self.status_writers) > 1:
            print(
                f"WARNING: the status of the bench's MPIJobs was written by {self.status_writers} (manager: jobs): another "
                f"controller reconciled them besides {self.subject.name}; these numbers are not its alone",
                file=sys.stderr,
            )
        return Result(
            self.subject.name,
            self.subject.flags,
            single,
            bulk,
            finish,
            self.peak,
            self.rss_peak_tree,
            self.status_writers,
            jobs=self.jobs,
            workers=self.workers,
            rss_at_peak=self.rss_at_peak,
            cpu_profile=self.cpu_profile,
        )


def runner_baseline(runs: int = 3) -> float:
    with tempfile.TemporaryDirectory() as d:
        r = BatchRunner(d, slot=0, module="ansible.builtin.ping", module_args={"data": "pong"}, rotate_artifacts=1)
        times = [r.run([job_key("bench", "baseline")]).duration for _ in range(runs)]
    return statistics.median(times)
