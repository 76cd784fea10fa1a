"""The two operator drivers the bench measures: this operator (`python -m mpijob_operator`, hack/lib/operator.py)
and the Kubeflow MPI Operator (hack/lib/kubeflow.py), each behind start / wait_ready / stop / counters; and the
peers BENCH_PEERS asks for."""

from __future__ import annotations

import os
import pathlib

from hack.experiments.bench.results import Result
from hack.experiments.bench.settings import (
    KUBEFLOW_TUNED,
    OPERATOR_ARGS,
    PEER_TIMEOUT,
    PEERS,
    TIMEOUT,
)
from hack.lib.kubeflow import KubeflowProcess, kubeflow_operator_binary
from hack.lib.operator import OperatorProcess


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
            "reconciles": sum(
                op.metric("mpi_operator_reconciles_total", {"result": r}) or 0
                for r in ("ok", "retry", "error", "deleted")
            ),
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


def peer_subjects(peers: list[str] = PEERS, variable: str = "BENCH_PEERS") -> list[Kubeflow | Result]:
    """The peers `peers` (BENCH_PEERS unless given) asks for, or, when one cannot run, a Result saying why."""
    out: list[Kubeflow | Result] = []
    known = {
        "kubeflow": (("Kubeflow", []), ("Kubeflow tuned", KUBEFLOW_TUNED)),
        "kubeflow-tuned": (("Kubeflow tuned", KUBEFLOW_TUNED),),
    }
    for peer in peers:
        if peer not in known:
            raise SystemExit(f"{variable}: unknown peer {peer!r} (known: {', '.join(known)})")
        binary = kubeflow_operator_binary()
        for name, args in known[peer]:
            out.append(
                Kubeflow(name, binary, args)
                if binary
                else Result(name, note="not run: no Go toolchain to build the Kubeflow MPI Operator")
            )
    return out
