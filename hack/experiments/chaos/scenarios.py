"""The chaos scenarios. Each runs in a namespace of its own (label mpi-operator-chaos=true), against an operator it
starts, and returns one Row of the table: what was injected, whether everything held, how long the jobs took to
settle after the last fault, and each finding (a job lost, a child orphaned or duplicated, a phase that went
backwards, an Event repeated or missing, an operator that crashed)."""

from __future__ import annotations

import concurrent.futures as cf
import functools
import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from hack.experiments.chaos import checks
from hack.experiments.chaos.faults import Operator, Schedule, restart_component
from hack.experiments.chaos.observer import Observer
from hack.lib.mpijob import GROUP, PLURAL, VERSION, install_crd, new_mpijob
from hack.lib.wait import wait_until

LABEL = "mpi-operator-chaos"
OUTCOME_ANNOTATION = "kwok.mpi.operator/outcome"  # hack/worlds/cluster/kwok/pod-stages.yaml: "run" keeps a pod running


@dataclass
class Row:
    scenario: str
    jobs: int
    faults: list[str] = field(default_factory=list)
    settle_s: float | None = None  # from the end of the last fault to every job Running
    finish_s: float | None = None  # from telling the launchers to succeed to every job Succeeded
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the scenario measured besides the table's columns

    @property
    def ok(self) -> bool:
        return not self.findings


def retrying(call: Callable[[], Any], timeout: float = 120) -> Any:
    """The call, again and again while the API server is away (connection errors, 5xx, 429); a create that finds its
    object made (409: its first attempt got through) counts as done."""
    end = time.monotonic() + timeout
    while True:
        try:
            return call()
        except ApiException as exc:
            if exc.status == 409:
                return None
            if exc.status not in (0, 429, 500, 502, 503, 504) or time.monotonic() > end:
                raise
        except Exception:
            if time.monotonic() > end:
                raise
        time.sleep(0.5)


def fresh_namespace(core: client.CoreV1Api, name: str) -> None:
    try:
        core.delete_namespace(name)
        wait_until(
            lambda: not core.list_namespace(field_selector=f"metadata.name={name}").items,
            300,
            f"the previous namespace {name} to go",
            interval=0.5,
        )
    except ApiException as exc:
        if exc.status != 404:
            raise
    core.create_namespace({"metadata": {"name": name, "labels": {LABEL: "true"}}})


def delete_leftovers(core: client.CoreV1Api, timeout: float = 600) -> None:
    """Deletes the namespaces an earlier run left (one with findings keeps them for a look) and waits until they are
    gone: their pods would take the kwok nodes' slots this run is sized for."""
    selector = f"{LABEL}=true"
    for ns in core.list_namespace(label_selector=selector).items:
        if not ns.metadata.deletion_timestamp:
            retrying(lambda ns=ns: core.delete_namespace(ns.metadata.name))
    wait_until(
        lambda: not core.list_namespace(label_selector=selector).items,
        timeout,
        "the namespaces of an earlier chaos run to go",
        interval=1,
    )


def namespaces_settled(core: client.CoreV1Api, timeout: float = 600) -> None:
    """Waits until no namespace of the harness is being deleted: a scenario's clean-up (thousands of children for the
    garbage collector) must not weigh on the next one's measurements."""
    wait_until(
        lambda: (
            not [
                ns for ns in core.list_namespace(label_selector=f"{LABEL}=true").items if ns.metadata.deletion_timestamp
            ]
        ),
        timeout,
        "the namespaces of the scenarios before to go",
        interval=1,
    )


def harness_job(name: str, workers: int) -> dict[str, Any]:
    """A job whose launcher runs until told (kwok), its workers kept when it ends (cleanPodPolicy None)."""
    return new_mpijob(name, workers, launcher_annotations={OUTCOME_ANNOTATION: "run"})


def create_all(api: client.ApiClient, namespace: str, names: list[str], workers: int) -> cf.Future:
    """Creates the jobs (16 clients) in the background; the future ends when all are created."""
    custom = client.CustomObjectsApi(api)

    def run() -> None:
        with cf.ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda n: retrying(
                        lambda: custom.create_namespaced_custom_object(
                            GROUP, VERSION, namespace, PLURAL, harness_job(n, workers)
                        )
                    ),
                    names,
                )
            )

    return cf.ThreadPoolExecutor(1).submit(run)


def tell_launchers(core: client.CoreV1Api, namespace: str) -> None:
    """Every launcher pod ends with success (kwok's stage acts on the changed annotation)."""
    pods = retrying(lambda: core.list_namespaced_pod(namespace, label_selector=f"{C.JOB_ROLE_LABEL}=launcher").items)
    patch = {"metadata": {"annotations": {OUTCOME_ANNOTATION: "succeed", "kwok.mpi.operator/outcome-after": "100ms"}}}
    with cf.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: retrying(lambda: core.patch_namespaced_pod(p.metadata.name, namespace, patch)), pods))


def kills_at_scale(
    api: client.ApiClient,
    kubeconfig: str,
    work: pathlib.Path,
    jobs: int = 1000,
    workers: int = 2,
    operator_kills: int = 20,
    apiserver_restarts: int = 2,
    etcd_restarts: int = 1,
    window: float = 0,
    timeout: float = 900,
    seed: int = 1,
) -> Row:
    """Scenario 1: `jobs` MPIJobs created at once while the operator is SIGKILLed `operator_kills` times and the API
    server and etcd are killed and restarted, at random moments of the creation burst (`window` seconds; by default
    one second per 10 jobs, at least 30). Then: every job Running, every launcher told to succeed, every job
    Succeeded; each job has exactly its children, its phases only went forward, one Event per transition."""
    ns = "chaos-kills"
    row = Row("kills at scale", jobs)
    core = client.CoreV1Api(api)
    install_crd(api)
    fresh_namespace(core, ns)
    operator = Operator(kubeconfig, work, ns)
    operator.start()
    observer = Observer(api, ns).start()
    faults = (
        [operator.kill_and_restart] * operator_kills
        + [functools.partial(restart_component, "kube-apiserver")] * apiserver_restarts
        + [functools.partial(restart_component, "etcd")] * etcd_restarts
    )
    schedule = Schedule(faults, window or max(30.0, jobs / 10), seed=seed).start()
    names = [f"kill-{i:05d}" for i in range(jobs)]
    try:
        create_all(api, ns, names, workers).result()
        schedule.join()
        row.faults = [f"{t:.0f}s {what}" for t, what in schedule.log]
        row.findings += [f"fault not injected: {e}" for e in schedule.errors]
        last_fault = schedule.last
        settle_and_check(api, row, observer, names, workers, timeout, last_fault, alive=operator.check_alive)
        row.findings += [f"the operator exited by itself with {code}" for code in operator.exits]
    finally:
        observer.stop()
        operator.stop()
    if not row.findings:
        retrying(lambda: core.delete_namespace(ns))
    return row


def settle_and_check(
    api: client.ApiClient,
    row: Row,
    observer: Observer,
    names: list[str],
    workers: int,
    timeout: float,
    since: float,
    alive: Callable[[], None] = lambda: None,
) -> None:
    """Every job of `names` Running (row.settle_s: from `since`), then told to succeed and Succeeded (row.finish_s);
    then what the cluster holds: no job lost, exactly its children, phases only forward, one Event per transition.
    `alive` is called at each look (a harness operator that died by itself is noted and replaced)."""
    ns, jobs, mine = observer.namespace, len(names), set(names)

    def all_in(phase: str) -> bool:
        alive()
        return sum(observer.phase_of(n) == phase for n in names) == jobs

    try:
        wait_until(lambda: all_in("Running"), timeout, f"{jobs} jobs Running", interval=0.5)
        row.settle_s = time.monotonic() - since
        told = time.monotonic()
        tell_launchers(client.CoreV1Api(api), ns)
        wait_until(lambda: all_in("Succeeded"), timeout, f"{jobs} jobs Succeeded", interval=0.5)
        row.finish_s = time.monotonic() - told
    except TimeoutError as exc:
        phases: dict[str, int] = {}
        for n in names:
            phases[observer.phase_of(n)] = phases.get(observer.phase_of(n), 0) + 1
        row.findings.append(f"{exc}: {phases}")
    listed = {n: j for n, j in checks.list_jobs(api, ns).items() if n in mine}
    row.findings += [f"lost: MPIJob {n}" for n in names if n not in listed]
    row.findings += checks.children_findings(api, ns, listed, workers)
    row.findings += [f"backwards: {b}" for b in observer.backwards() if b.split(":")[0] in mine]
    row.findings += checks.event_findings(api, ns, listed)
