"""The faults the harness injects, and the operator it injects them into.

- the operator SIGKILLed with everything it started (its warm run, a batch in flight), then started again, as a
  crashed container is: `Operator.kill_and_restart`;
- a control-plane component killed (SIGKILL) and started again with its state kept (hack/worlds/cluster/restart.sh): the
  API server (every client's connections and watches drop) or etcd (the API server loses its storage until it is
  back, its watch caches start over).
A Schedule spreads them over a window at random moments, one at a time, and logs each with its time."""

from __future__ import annotations

import pathlib
import random
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hack.lib.operator import OperatorProcess
from hack.lib.paths import ROOT


class Operator:
    """The operator under test, out of cluster (no leader election), watching one namespace; restartable."""

    def __init__(self, kubeconfig: str, work: pathlib.Path, namespace: str, extra: list[str] | None = None):
        self.kubeconfig, self.work = kubeconfig, work
        self.args = ["--no-leader-elect", "--namespace", namespace, *(extra or [])]
        self.process: OperatorProcess | None = None
        self.starts = 0
        self.exits: list[int] = []  # exit codes of the processes that ended by themselves (a crash is a finding)

    def start(self) -> None:
        self.process = OperatorProcess(self.kubeconfig, self.work, self.args, name=f"chaos-operator-{self.starts}")
        self.process.start()
        self.starts += 1

    def check_alive(self) -> None:
        """Notes an operator that exited on its own (not killed by the harness) and starts another."""
        assert self.process is not None and self.process.proc is not None
        code = self.process.proc.poll()
        if code is not None:
            self.exits.append(code)
            self.start()

    def kill_and_restart(self) -> str:
        assert self.process is not None
        self.check_alive()
        self.process.kill_all()
        self.start()
        return "operator SIGKILL"

    def stop(self) -> None:
        if self.process is not None:
            self.check_alive()
            self.process.stop()

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.work.glob("chaos-operator-*.log")))


def restart_component(component: str, down: float = 0) -> str:
    """SIGKILLs a control-plane component and starts it again, its state kept; returns what was done."""
    start = time.monotonic()
    cmd = ["bash", str(ROOT / "hack/worlds/cluster/restart.sh"), component, "--kill"]
    if down:
        cmd += ["--down", str(down)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=180)
    return f"{component} SIGKILL, back in {time.monotonic() - start:.1f} s"


@dataclass
class Schedule:
    """Faults at random moments of [0, window) seconds from start(), one at a time, in a thread of their own."""

    faults: list[Callable[[], str]]
    window: float
    seed: int = 0
    log: list[tuple[float, str]] = field(default_factory=list)  # (seconds since start, what was done)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        self.at = sorted(rng.uniform(0, self.window) for _ in self.faults)
        order = list(self.faults)
        rng.shuffle(order)
        self.order = order
        self.thread = threading.Thread(target=self._run, name="chaos-faults", daemon=True)
        self.t0 = 0.0

    def start(self) -> Schedule:
        self.t0 = time.monotonic()
        self.thread.start()
        return self

    def _run(self) -> None:
        for moment, fault in zip(self.at, self.order, strict=True):
            delay = self.t0 + moment - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                what = fault()
            except Exception as exc:
                self.errors.append(f"{getattr(fault, '__name__', fault)}: {exc!r}")
                continue
            self.log.append((time.monotonic() - self.t0, what))

    def join(self) -> None:
        self.thread.join()

    @property
    def last(self) -> float:
        """Monotonic time of the last fault's end (start() when none ran)."""
        return self.t0 + (self.log[-1][0] if self.log else 0.0)
