"""`make restarts` (docs/dev/restarts.md): one table, each kind of failure in a row, and in columns what it does to the same
job under ours with a failure policy, ours without one, and the Kubeflow MPI Operator v0.8.2 (the peer as `make bench`
runs it): the outcome, the restarts (or launcher retries) used, and the time from the fault until every pod of the job
runs again.

The kwok rows steer simulated pods: the fault is written as the kubelet would write it (hack/lib/kwok.py), and the
harness plays mpirun: when a rank's pod has failed or is gone, the launcher's pod fails 1.5 s later (mpirun aborts
the job when a rank dies; a launcher started against a dead worker fails on ssh), except after a lost node, where a
real mpirun hangs. The real-node row runs OpenMPI's pi for real. Settings: RESTARTS_ROWS (keys of KINDS, default
all), RESTARTS_COLUMNS (policy, ours, kubeflow), RESTARTS_TRIAL_S (240: how long after the fault a trial watches).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from hack.experiments.chaos.node import real_job as chaos_real_job
from hack.lib.images import built_image
from hack.lib.kubeflow import KubeflowProcess, kubeflow_operator_binary
from hack.lib.kwok import end_pod, kwok_node, lose_node, node_ready
from hack.lib.mpijob import GROUP, PLURAL, VERSION, install_crd, new_mpijob
from hack.lib.operator import OperatorProcess
from hack.lib.paths import ROOT
from hack.lib.wait import wait_until

OURS_NS, PEER_NS = "restarts-ours", "restarts-kubeflow"
POLICY = {
    "maxRestarts": 2,
    "maxDisruptionRestarts": 3,
    "nodeLostSeconds": 10,
    "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}],
}
COLUMNS = {"policy": "ours + failurePolicy", "ours": "ours, no policy", "kubeflow": "Kubeflow v0.8.2"}
WORKERS = 2
LAUNCHER_RUNS = "60s"  # how long a simulated launcher runs before it succeeds
TRIAL_S = float(os.environ.get("RESTARTS_TRIAL_S", "240"))
NODE_TAINT = "restarts-node"  # the node row's nodes: its label and taint, valued by the trial's column


@dataclasses.dataclass(frozen=True)
class Kind:
    key: str
    title: str
    inject: str  # worker-exit | launcher-exit | evict | node | containerd
    code: int = 1
    reason: str = "Error"
    real: bool = False  # on the real node, real ranks
    mpirun_fails: bool = True  # mpirun notices a dead rank; after a lost node it hangs


KINDS = (
    Kind("exit1", "a worker's program exits 1", "worker-exit", 1),
    Kind("oom", "a worker OOM-killed", "worker-exit", 137, "OOMKilled"),
    Kind("fatal", "a listed fatal exit code (42)", "worker-exit", 42),
    Kind("evict", "a worker pod evicted (Eviction API)", "evict"),
    Kind("containerd", "the real node's containerd killed (SIGKILL) under the ranks", "containerd", real=True),
    Kind("node", "a kwok node lost with the job's pods on it", "node", mpirun_fails=False),
    Kind("launcher", "the launcher killed (exit 137)", "launcher-exit", 137),
)


@dataclasses.dataclass
class Trial:
    kind: Kind
    column: str
    namespace: str
    name: str
    before: set[str] = dataclasses.field(default_factory=set)
    ranks: dict[str, set[str]] = dataclasses.field(default_factory=dict)  # launcher pod -> the workers it started with
    fault_at: float | None = None
    running_again_s: float | None = None
    outcome: str = ""
    restarts: str = ""
    note: str = ""

    def cell(self) -> str:
        again = (
            "kept running"
            if self.fault_at and self.running_again_s is None and self.outcome == "Succeeded"
            else (f"{self.running_again_s:.0f} s" if self.running_again_s is not None else "never")
        )
        return f"{self.outcome}; {self.restarts}; {again}"


# ---- the world ---------------------------------------------------------------------------------------------------------


def fresh_namespace(core: client.CoreV1Api, name: str) -> None:
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    wait_until(lambda: _gone(lambda: core.read_namespace(name)), 180, f"namespace {name} gone", interval=1)
    core.create_namespace({"metadata": {"name": name}})
    wait_until(lambda: not _gone(lambda: core.read_namespaced_service_account("default", name)), 30, "ServiceAccount")


def _gone(read: Any) -> bool:
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def job_body(trial: Trial) -> dict[str, Any]:
    run_policy: dict[str, Any] = {"cleanPodPolicy": "None"}
    if trial.column == "policy":
        run_policy["failurePolicy"] = POLICY
    if trial.kind.real:
        return real_job(trial.name, run_policy)
    # After a lost node a real mpirun hangs: that job's launcher runs until it is stopped (kwok's timer of a pod
    # goes on after its node is lost, so a launcher that ends by itself would end there too).
    ends = {"kwok.mpi.operator/outcome": "run"} if trial.kind.inject == "node" else {}
    body = new_mpijob(
        trial.name, WORKERS, launcher_annotations={"kwok.mpi.operator/outcome-after": LAUNCHER_RUNS, **ends}
    )
    body["spec"]["runPolicy"] = run_policy
    placement: dict[str, Any] = {}
    if trial.kind.inject == "node":  # on the trial's own nodes, which no other trial's pod may use (NODE_TAINT)
        placement = {
            "nodeSelector": {NODE_TAINT: trial.column},
            "tolerations": [{"key": NODE_TAINT, "operator": "Equal", "value": trial.column, "effect": "NoSchedule"}],
        }
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"].update(placement)
    return body


def real_job(name: str, run_policy: dict[str, Any]) -> dict[str, Any]:
    """`make chaos`'s real-node job (four ranks of OpenMPI's pi on two workers, each sleeping 40 s first), with the
    trial's run policy."""
    body = chaos_real_job(name, ":".join(built_image("openmpi4")), 40)
    body["spec"]["runPolicy"] = run_policy
    return body


def pods_of(core: client.CoreV1Api, trial: Trial) -> list[Any]:
    return core.list_namespaced_pod(trial.namespace, label_selector=f"{C.JOB_NAME_LABEL}={trial.name}").items


def role(pod: Any) -> str:
    return (pod.metadata.labels or {}).get(C.JOB_ROLE_LABEL, "")


def all_running(pods: list[Any]) -> bool:
    live = [p for p in pods if not p.metadata.deletion_timestamp]
    workers = [p for p in live if role(p) == C.ROLE_WORKER]
    return (
        len(workers) == WORKERS
        and any(role(p) == C.ROLE_LAUNCHER and p.status.phase == "Running" for p in live)
        and all(p.status.phase == "Running" for p in workers)
    )


def finished(job: dict[str, Any] | None) -> dict[str, Any] | None:
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") in (C.SUCCEEDED, C.FAILED) and cond.get("status") == "True":
            return cond
    return None


# ---- one trial -----------------------------------------------------------------------------------------------------------


class Runner:
    def __init__(self, api: client.ApiClient):
        self.core, self.custom, self.batch = client.CoreV1Api(api), client.CustomObjectsApi(api), client.BatchV1Api(api)

    def job(self, trial: Trial) -> dict[str, Any] | None:
        try:
            return self.custom.get_namespaced_custom_object(GROUP, VERSION, trial.namespace, PLURAL, trial.name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def run(self, trial: Trial) -> None:
        try:
            self._run(trial)
        except Exception as exc:  # one trial's failure is its cell, not the table's
            trial.outcome, trial.note = trial.outcome or "harness error", f"{type(exc).__name__}: {exc}"

    def _run(self, trial: Trial) -> None:
        kind, core = trial.kind, self.core
        nodes = self.nodes(trial) if kind.inject == "node" else []
        self.custom.create_namespaced_custom_object(GROUP, VERSION, trial.namespace, PLURAL, job_body(trial))
        wait_until(lambda: all_running(pods_of(core, trial)), 240, f"{trial.name} running", interval=0.5)
        time.sleep(10 if kind.real else 5)  # the ranks are up
        pods = pods_of(core, trial)
        trial.before = {p.metadata.uid for p in pods}
        workers = {p.metadata.uid for p in pods if role(p) == C.ROLE_WORKER}
        trial.ranks = {p.metadata.uid: workers for p in pods if role(p) == C.ROLE_LAUNCHER}
        self.inject(trial, nodes)
        trial.fault_at = time.monotonic()
        dead_since: float | None = None
        while time.monotonic() - trial.fault_at < TRIAL_S:
            pods = pods_of(core, trial)
            now = time.monotonic()
            live = {p.metadata.uid for p in pods if not p.metadata.deletion_timestamp}
            if trial.running_again_s is None and all_running(pods) and live - trial.before:
                trial.running_again_s = now - trial.fault_at
            done = finished(self.job(trial))
            if done is not None:
                trial.outcome = done["type"] if done["type"] == C.SUCCEEDED else f"Failed ({done.get('reason')})"
                trial.note = str(done.get("message") or "")[:300]
                break
            if kind.mpirun_fails and not kind.real:
                dead_since = self.play_mpirun(trial, pods, dead_since, now)
            time.sleep(0.5)
        else:
            job = self.job(trial) or {}
            status = job.get("status") or {}
            true = [c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"]
            phase = status.get("phase") or (true[-1] if true else "?")  # Kubeflow's status has no phase
            trial.outcome = f"{phase} after {TRIAL_S:.0f} s"
            trial.note = "; ".join(
                f"{p.metadata.name} {p.status.phase}{' terminating' if p.metadata.deletion_timestamp else ''}"
                for p in pods_of(core, trial)
            )
        trial.restarts = self.restarts_used(trial)
        self.cleanup(trial, nodes)

    def nodes(self, trial: Trial) -> list[str]:
        """Two kwok nodes of the trial's own: the job runs on the first (the second cordoned), which is lost."""
        names = [f"restarts-{trial.column}-a", f"restarts-{trial.column}-b"]
        for name in names:
            if not _gone(lambda n=name: self.core.read_node(n)):
                self.core.delete_node(name)
                wait_until(lambda n=name: _gone(lambda: self.core.read_node(n)), 60, f"node {name} gone")
            body = kwok_node(name, {NODE_TAINT: trial.column})
            body["spec"]["taints"] = [{"key": NODE_TAINT, "value": trial.column, "effect": "NoSchedule"}]
            self.core.create_node(body)
        wait_until(lambda: all(node_ready(self.core, n) for n in names), 60, "the trial's nodes Ready")
        self.core.patch_node(names[1], {"spec": {"unschedulable": True}})
        return names

    def inject(self, trial: Trial, nodes: list[str]) -> None:
        kind, core, ns = trial.kind, self.core, trial.namespace
        worker = f"{trial.name}-worker-1"
        if kind.inject == "worker-exit":
            end_pod(core, ns, worker, kind.code, kind.reason)
        elif kind.inject == "launcher-exit":
            (launcher,) = [p for p in pods_of(core, trial) if role(p) == C.ROLE_LAUNCHER]
            end_pod(core, ns, launcher.metadata.name, kind.code)
        elif kind.inject == "evict":
            core.create_namespaced_pod_eviction(worker, ns, {"metadata": {"name": worker, "namespace": ns}})
        elif kind.inject == "node":
            core.patch_node(nodes[1], {"spec": {"unschedulable": False}})
            lose_node(core, nodes[0])
        elif kind.inject == "containerd":
            subprocess.run(
                ["bash", str(ROOT / "hack/worlds/node/daemon.sh"), "kill", "containerd"],
                check=True,
                capture_output=True,
                text=True,
                timeout=180,
            )

    def play_mpirun(self, trial: Trial, pods: list[Any], dead_since: float | None, now: float) -> float | None:
        """mpirun's part: a running launcher fails 1.5 s after a rank's pod of the world it started with failed or
        went, even if a new pod of that name came up since (with the rank's exit code for the fault's own rank, else
        255: ssh could not reach it); a launcher started beside a dead worker fails too."""
        live = [p for p in pods if not p.metadata.deletion_timestamp]
        running = {p.metadata.uid for p in live if role(p) == C.ROLE_WORKER and p.status.phase == "Running"}
        launchers = [p for p in live if role(p) == C.ROLE_LAUNCHER and p.status.phase == "Running"]
        for launcher in launchers:
            trial.ranks.setdefault(launcher.metadata.uid, {p.metadata.uid for p in live if role(p) == C.ROLE_WORKER})
        dead = any(
            len(trial.ranks[p.metadata.uid]) < WORKERS or not trial.ranks[p.metadata.uid] <= running for p in launchers
        )
        if not launchers or not dead:
            return None
        if dead_since is None:
            return now
        if now - dead_since >= 1.5:
            code = trial.kind.code if trial.kind.inject == "worker-exit" and now - (trial.fault_at or 0) < 5 else 255
            for launcher in launchers:
                try:
                    end_pod(self.core, trial.namespace, launcher.metadata.name, code)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
            return None
        return dead_since

    def restarts_used(self, trial: Trial) -> str:
        status = (self.job(trial) or {}).get("status") or {}
        if trial.column == "policy":
            by = status.get("restarts") or {}
            detail = ", ".join(f"{k} {v}" for k, v in by.items() if v)
            count = status.get("restartCount") or 0
            return f"{count} restart{'' if count == 1 else 's'}" + (f" ({detail})" if detail else "")
        try:
            failed = self.batch.read_namespaced_job(f"{trial.name}-launcher", trial.namespace).status.failed or 0
        except ApiException as exc:
            if exc.status != 404:
                raise
            failed = 0
        return f"{failed} launcher retries" if failed != 1 else "1 launcher retry"

    def cleanup(self, trial: Trial, nodes: list[str]) -> None:
        try:
            self.custom.delete_namespaced_custom_object(
                GROUP, VERSION, trial.namespace, PLURAL, trial.name, propagation_policy="Background"
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
        for pod in pods_of(self.core, trial):  # pods on a lost node never confirm their deletion
            if pod.spec.node_name in nodes:
                try:
                    self.core.delete_namespaced_pod(pod.metadata.name, trial.namespace, grace_period_seconds=0)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        for name in nodes:
            try:
                self.core.delete_node(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise


# ---- the phases and the table ------------------------------------------------------------------------------------------


def run_phase(runner: Runner, trials: list[Trial]) -> None:
    """The kwok trials at once (each job has its own pods, and the node row its own nodes); beside them the
    real-node ones one after the other (each kills containerd under its own ranks)."""
    kwok = [t for t in trials if not t.kind.real]
    real = [t for t in trials if t.kind.real]
    threads = [threading.Thread(target=runner.run, args=(t,), daemon=True) for t in kwok]
    threads.append(threading.Thread(target=lambda: [runner.run(t) for t in real], daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def table(kinds: list[Kind], columns: list[str], trials: list[Trial]) -> str:
    cells = {(t.kind.key, t.column): t for t in trials}
    head = "| failure | " + " | ".join(COLUMNS[c] for c in columns) + " |"
    lines = [head, "|---" * (len(columns) + 1) + "|"]
    for kind in kinds:
        row = [cells[(kind.key, c)].cell() if (kind.key, c) in cells else "not run" for c in columns]
        lines.append(f"| {kind.title} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    wanted = os.environ.get("RESTARTS_ROWS", "")
    kinds = [k for k in KINDS if not wanted or k.key in wanted.split(",")]
    columns = [c for c in os.environ.get("RESTARTS_COLUMNS", ",".join(COLUMNS)).split(",") if c in COLUMNS]
    try:
        core.read_node("mpi-real-node")
    except ApiException:
        kinds = [k for k in kinds if not k.real]
        print("no real node: the real-node row is left out", file=sys.stderr)
    install_crd(api)
    work = pathlib.Path(tempfile.mkdtemp(prefix="mpi-restarts-"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    started = time.strftime("%Y-%m-%d %H:%M")
    trials: list[Trial] = []
    runner = Runner(api)
    ours = [c for c in columns if c in ("policy", "ours")]
    if ours:
        fresh_namespace(core, OURS_NS)
        op = OperatorProcess(kubeconfig, work, ["--namespace", OURS_NS, "--no-leader-elect"]).start()
        op.wait_ready(120)
        phase = [Trial(k, c, OURS_NS, f"{k.key}-{c}") for k in kinds for c in ours]
        try:
            run_phase(runner, phase)
        finally:
            op.stop()
        trials += phase
    if "kubeflow" in columns:
        binary = kubeflow_operator_binary()
        if binary is None:
            print("no Go toolchain: the Kubeflow column is left out", file=sys.stderr)
        else:
            fresh_namespace(core, PEER_NS)
            peer = KubeflowProcess(binary, kubeconfig, PEER_NS, [], work / "kubeflow.log").start()
            peer.wait_ready(120)
            phase = [Trial(k, "kubeflow", PEER_NS, f"{k.key}-kubeflow") for k in kinds]
            try:
                run_phase(runner, phase)
            finally:
                peer.stop()
            trials += phase
    text = table(kinds, columns, trials)
    print(
        f"\n`make restarts`, {started}, commit {commit.strip()}; cell: outcome; restarts used; fault to Running again\n"
    )
    print(text)
    print()
    for t in trials:
        if t.note:
            print(f"- {t.kind.key} / {COLUMNS[t.column]}: {t.note}")
    out = ROOT / "build" / "restarts"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps(
            [
                {
                    "kind": t.kind.key,
                    "column": t.column,
                    "outcome": t.outcome,
                    "restarts": t.restarts,
                    "running_again_s": t.running_again_s,
                    "note": t.note,
                }
                for t in trials
            ],
            indent=1,
        )
    )
    print(f"\nlogs: {work}; results: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
