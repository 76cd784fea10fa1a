"""The operator (`python -m mpijob_operator`) as a real process against a cluster, and what the tools read of a
process tree in /proc."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from hack.lib.paths import ROOT


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

    def __init__(
        self,
        kubeconfig: str,
        work_dir: pathlib.Path,
        args: list[str],
        name: str = "operator",
        root: pathlib.Path = ROOT,
    ):
        self.root = root  # the source tree it runs from (another release's, in the upgrade test)
        self.port = _free_port()
        self.log_path = work_dir / f"{name}-{self.port}.log"
        self.args = [
            "--kubeconfig",
            kubeconfig,
            "--monitoring-port",
            str(self.port),
            "--work-dir",
            str(work_dir / f"runner-{self.port}"),
            "--log-level",
            "info",
            *args,
        ]
        self.proc: subprocess.Popen | None = None

    def start(self) -> OperatorProcess:
        env = dict(os.environ)
        # The one way (hack/make/env.sh), this tree first: another release's tree runs its own operator and collection.
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(self.root), str(self.root / ".collections"), env.get("PYTHONPATH")])
        )
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        if self.root != ROOT:  # its runs use that tree's collection too
            env["ANSIBLE_COLLECTIONS_PATH"] = str(self.root / ".collections")
        with open(self.log_path, "ab") as out:
            # its own process group: kill_all() takes the runs in flight down with it, like a container dying
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mpijob_operator", *self.args],
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
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
        return [
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in (labels or {}).items())
        ]

    def idle(self) -> bool:
        """No job waits for a runner and every run it started has ended: what the events it received asked for, it
        has done. The positive signal a test waits for before it checks that the operator did *not* do something
        (the queue gauge is refreshed at each scrape; a run is counted in batch_size when it starts, in runner_runs
        when it ends)."""
        started = self.metric("mpi_operator_batch_size_count") or 0
        return (
            self.metric("mpi_operator_queue_depth") == 0
            and sum(self.metric_values("mpi_operator_runner_runs_total")) == started
        )

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
