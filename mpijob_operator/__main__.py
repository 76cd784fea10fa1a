# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Entry point: `python3 -m mpijob_operator [flags]` (the operator Deployment's command, and `make run`)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
import time
from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.kube.paths import mpijob_path
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C

from . import config as config_mod
from . import health
from . import log as log_mod
from .client import ApiError, api_client
from .controller import Controller
from .leader import LeaderElector, LeaseLock, Timing
from .metrics import Metrics
from .queue import WorkQueue
from .runner import BatchRunner, WarmRuns
from .store import Store
from .watch import PLURAL, Watcher, by_group, resources

log = logging.getLogger("mpijob_operator")

CHILD_SELECTOR = C.APP_LABEL  # non-pod children carry app=<job>: skip everything else server-side
LEASE_NAME = "mpi-operator"
# How late a heartbeat may be before /healthz calls the loop stuck. Generous: a CPU-starved process (a 50m limit, a
# saturated node) is slow but not stuck, and restarting it only makes the node busier.
MAIN_LOOP_ALLOWANCE = 60.0
RUN_MARGIN = 120.0  # past --runner-timeout, when the runner should have killed the run already
CRD_CHECK_TIMEOUT = 30.0
CRD_CHECK_REQUEST_TIMEOUT = 10.0


class Operator:
    def __init__(self, cfg: config_mod.Config):
        self.cfg = cfg
        self.metrics = Metrics()
        self.queue = WorkQueue()
        self.api = api_client(cfg.kubeconfig, cfg.kube_api_qps, cfg.kube_api_burst)
        self.heartbeats = health.Heartbeats()
        self.resources = resources(CHILD_SELECTOR, cfg.gang_scheduling, cfg.apis)
        # What the watches saw, for the warm runs' batches (store.py): only with warm runs (a cold run's jobs go as
        # module arguments, which carry no objects).
        self.store = Store({r.name for r in self.resources}) if cfg.plan_from_watch and cfg.warm_runs else None
        self.controller = Controller(
            self.queue,
            self.metrics,
            self._runner,
            cfg.threadiness,
            cfg.max_batch,
            heartbeats=self.heartbeats,
            run_allowance=cfg.runner_timeout + RUN_MARGIN,
            store=self.store,
        )
        self.watchers: list[Watcher] = []
        self.synced: set[str] = set()
        self.elector: LeaderElector | None = None
        self.leading = threading.Event()
        self.stopping = threading.Event()
        self.checked = threading.Event()  # the MPIJob API answered: start-up is over
        self.exit_code = 0
        self.warm: WarmRuns | None = None
        if cfg.warm_runs:
            # its own private data dir; its runs overlap (one retiring, its successor), so each keeps its artifacts
            warm = self._runner("warm", rotate_artifacts=cfg.rotate_artifacts + cfg.threadiness + 1)
            self.warm = WarmRuns(warm, lifetime=cfg.warm_run_timeout, slots=cfg.threadiness)

    def _runner(self, slot: int | str, rotate_artifacts: int = 0) -> BatchRunner:
        assert self.cfg.work_dir is not None  # parse() derives it
        return BatchRunner(
            self.cfg.work_dir,
            slot=slot,
            gang_scheduling=self.cfg.gang_scheduling,
            cluster_domain=self.cfg.cluster_domain,
            kubeconfig=self.cfg.kubeconfig,
            kubectl_delivery_image=self.cfg.kubectl_delivery_image,
            module_args=config_mod.reconcile_args(self.cfg),
            timeout=self.cfg.runner_timeout,
            rotate_artifacts=rotate_artifacts or self.cfg.rotate_artifacts,
            warm=self.warm,
            on_start=lambda kind: self.metrics.runner_starts.labels(kind=kind).inc(),
            store=self.store,
        )

    # -- checks ------------------------------------------------------------------------------
    def check_crd(self, timeout: float = CRD_CHECK_TIMEOUT) -> None:
        """Like Kubeflow: without the MPIJob CRD of an API it reconciles there is nothing to do, so fail loudly. An
        API server that is not reachable yet (both starting together) gets `timeout` seconds."""
        end = time.monotonic() + timeout
        for group in self.cfg.apis:
            api = by_group(group)
            assert api is not None  # parse() refuses a group not served
            api_version = api.api_version
            path = mpijob_path(api_version, self.cfg.namespace or "")
            self._check_api(path, f"{PLURAL}.{group} {api_version.partition('/')[2]}", end)

    def _check_api(self, path: str, crd: str, end: float) -> None:
        while True:
            try:
                # A bounded request: a path that drops packets (no route to the API server from the pod network)
                # would otherwise hang here without a word in the log.
                self.api.request("GET", path, query={"limit": "1"}, timeout=CRD_CHECK_REQUEST_TIMEOUT)
                return
            except ApiError as exc:
                if exc.status == 404:
                    raise SystemExit(f"the MPIJob CRD ({crd}) is not installed") from None
                if exc.status in (401, 403):
                    raise SystemExit(
                        f"not allowed to list MPIJobs ({crd}: {exc.status} {exc.reason}): check RBAC"
                    ) from None
                problem = f"{exc.status} {exc.reason}"
            except Exception as exc:
                problem = str(exc).splitlines()[0][:200]
            if time.monotonic() > end:
                raise SystemExit(f"cannot reach the API server: {problem}")
            log.warning("API server not reachable yet: %s", problem)
            time.sleep(2)

    def healthz(self) -> str | None:
        """Fails only when the process is broken or stuck, never because it is slow or the API server is away."""
        stuck = self.heartbeats.stuck()
        if stuck:
            return f"stuck: {', '.join(stuck)}"
        if self.controller.crashed:
            return f"worker crashed: {self.controller.crashed}"
        dead = [w.name for w in self.watchers if not w.is_alive() and not self.stopping.is_set()]
        if dead:
            return f"watch threads stopped: {', '.join(dead)}"
        e = self.elector
        if e is not None and e.is_leader and time.monotonic() - e.last_renew > e.timing.lease_duration + 5:
            return "leader lease not renewed in time"
        return None

    def readyz(self) -> str | None:
        if self.stopping.is_set():
            return "shutting down"
        if not self.checked.is_set():
            return "starting: checking the MPIJob API"
        if not self.leading.is_set():
            return None  # a standby replica is ready: it is waiting for the lease
        # Optional watches (PodGroups) do not hold readiness back: without the gang scheduler's CRD the operator still
        # serves every other job (the watch retries and logs why; the module reports the missing API per job).
        missing = [
            w.resource.name for w in self.watchers if w.resource.name not in self.synced and not w.resource.optional
        ]
        return f"watches not synced: {', '.join(missing)}" if missing else None

    # -- lifecycle ---------------------------------------------------------------------------
    def start_leading(self) -> None:
        self.metrics.is_leader.set(1)
        self.leading.set()
        if self.warm is not None:
            self.warm.start()
        self.controller.start()
        for res in self.resources:
            w = Watcher(
                self.api,
                res,
                self.cfg.namespace,
                self.controller.enqueue,
                on_synced=self._synced,
                on_event=self._counted_event,
                on_restart=self._restarted,
                watch_timeout=self.cfg.watch_timeout,
                store=self.store,
            )
            self.watchers.append(w)
            w.start()
        log.info(
            "leading: watching MPIJobs",
            extra={
                "namespace": self.cfg.namespace or "(all)",
                "apis": ",".join(self.cfg.apis),
                "threadiness": self.cfg.threadiness,
                "max_batch": self.cfg.max_batch,
            },
        )

    def lost_lease(self) -> None:
        self.metrics.is_leader.set(0)
        self.exit_code = 1
        self.stopping.set()

    def _synced(self, name: str) -> None:
        self.synced.add(name)
        log.info("watch synced", extra={"resource": name})

    def _counted_event(self, name: str) -> None:
        self.metrics.watch_events.labels(resource=name).inc()

    def _restarted(self, name: str, reason: str) -> None:
        self.metrics.watch_restarts.labels(resource=name, reason=reason).inc()

    def run(self) -> int:
        # The endpoints come up first, so a start-up probe sees a live process while it still checks the API.
        self.heartbeats.beat("main", CRD_CHECK_TIMEOUT + MAIN_LOOP_ALLOWANCE)
        assert self.cfg.health_port is not None  # parse() derives it
        servers = health.servers(
            self.cfg.monitoring_port,
            self.cfg.health_port,
            self.metrics.registry,
            self.healthz,
            self.readyz,
            self._refresh_gauges,
        )
        self.check_crd()
        self.checked.set()
        self.metrics.is_leader.set(0)
        if self.cfg.leader_elect:
            lock = LeaseLock(self.api, self.cfg.lock_namespace, LEASE_NAME)
            timing = Timing(
                lease_duration=self.cfg.leader_elect_lease_duration,
                renew_deadline=self.cfg.leader_elect_renew_deadline,
                retry_period=self.cfg.leader_elect_retry_period,
            )
            self.elector = LeaderElector(lock, self.cfg.identity, timing, self.start_leading, self.lost_lease)
            threading.Thread(target=self.elector.run, name="leader-election", daemon=True).start()
            log.info(
                "waiting for the lease",
                extra={"lease": f"{self.cfg.lock_namespace}/{LEASE_NAME}", "identity": self.cfg.identity},
            )
        else:
            self.start_leading()
        while not self.stopping.wait(1.0):
            self.heartbeats.beat("main", MAIN_LOOP_ALLOWANCE)
        self.heartbeats.forget("main")
        self.shutdown()
        for server in servers:
            server.shutdown()
        return self.exit_code

    def _refresh_gauges(self) -> None:
        self.metrics.queue_depth.set(self.queue.depth())
        self.metrics.queue_waiting.set(self.queue.waiting())

    def shutdown(self) -> None:
        """Stop taking work, let the runs in flight finish, then hand the lease back."""
        log.info("shutting down", extra={"in_flight": self.queue.processing()})
        for w in self.watchers:
            w.stop()
        self.queue.shutdown()
        if self.warm is not None:  # the warm run takes no more batches; those it holds finish below
            self.warm.stop()
        # after losing the lease another replica acts: do not finish runs, exit at once (like client-go)
        grace = 0 if self.exit_code else self.cfg.runner_timeout + 5
        if not self.controller.join(grace):
            log.warning("runs still in flight at exit")
        if self.warm is not None:
            self.warm.close(1.0 if self.exit_code else 10.0)
        if self.elector is not None:
            self.elector.stop(release=self.exit_code == 0)
        self.metrics.is_leader.set(0)


def main(argv: list[str] | None = None) -> int:
    cfg = config_mod.parse(argv)
    log_mod.setup(cfg.log_level, cfg.log_format)
    assert cfg.work_dir is not None  # parse() derives it
    os.makedirs(cfg.work_dir, exist_ok=True)
    op = Operator(cfg)

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("signal received", extra={"signal": signal.Signals(signum).name})
        op.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("starting", extra={"identity": cfg.identity, "work_dir": cfg.work_dir, "leader_elect": cfg.leader_elect})
    try:
        return op.run()
    finally:
        if cfg.temporary_work_dir:
            shutil.rmtree(cfg.work_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
