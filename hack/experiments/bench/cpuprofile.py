"""BENCH_CPU_PROFILE=1: where this operator's CPU goes in a measured phase. py-spy (hack/experiments/bench/requirements-plot.txt)
samples the operator and every process below it (the warm run's ansible and its worker, the module) from outside,
50 times a second, each process's thread that holds its GIL only (--gil): the Python work each process does. Without
it py-spy counts a thread waiting on a socket or a lock as busy on this machine's interpreters (it could not tell
idle threads apart; docs/dev/benchmarks.md). It pauses the processes a moment per sample and takes
some of a small machine's CPU itself: the numbers of a profiled run are not the ones to compare.
The collapsed stacks are kept (their path is printed) and summed up here: the share of samples by process, and the
functions most often on the stack (inclusive) and running (self). A peer written in Go is not sampled."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

RATE = 50  # samples a second: enough for a phase of tens of seconds, little CPU taken from a 2-core machine
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")
_PROCESS = re.compile(r'^process (?P<pid>\d+):"(?P<cmd>.*)"$')


def py_spy() -> str | None:
    """The py-spy beside this interpreter (the venv's), else on PATH."""
    here = pathlib.Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def _function(frame: str) -> str:
    """`name (path/to/file.py:12)` -> `name (file.py)`: a function, whichever line of it was running."""
    m = _FRAME.match(frame)
    return f"{m['func']} ({os.path.basename(m['file'])})" if m else frame


def _process(frame: str) -> str | None:
    """The process a stack was sampled in (py-spy --subprocesses puts it first), by what it runs."""
    m = _PROCESS.match(frame)
    if not m:
        return None
    cmd = m["cmd"].split()
    if any("AnsiballZ_" in a for a in cmd):
        return "module"
    if "mpijob_operator" in cmd:
        return "operator"
    if any(os.path.basename(a) in ("ansible", "ansible-playbook") for a in cmd[:2]):
        return "ansible"  # the main process and its forked worker: the same command line
    return os.path.basename(cmd[0]) if cmd else m["cmd"]


@dataclass
class Summary:
    samples: int = 0
    by_process: dict[str, float] = field(default_factory=dict)  # process -> share of samples
    inclusive: list[tuple[str, float]] = field(default_factory=list)  # function -> share of samples on the stack
    own: list[tuple[str, float]] = field(default_factory=list)  # function -> share of samples running it

    def as_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "by_process": self.by_process,
            "inclusive": [list(x) for x in self.inclusive],
            "self": [list(x) for x in self.own],
        }


def summarise(collapsed: str, top: int = 15) -> Summary:
    """The summary of py-spy's raw (collapsed) output: a line per distinct stack, `frame;frame;... count`, root
    first; with --subprocesses the root frames are the processes, from the one recorded down to the one sampled."""
    processes: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        proc = None
        while frames and (named := _process(frames[0])) is not None:  # the process, its child, ... the sampled one
            proc = named
            frames.pop(0)
        processes[proc or "?"] += n
        funcs = [_function(f) for f in frames if not f.startswith("thread ")]
        for func in set(funcs):
            inclusive[func] += n
        if funcs:
            own[funcs[-1]] += n
    if not total:
        return Summary()

    def shares(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(name, round(n / total, 3)) for name, n in counter.most_common(top)]

    return Summary(total, dict(shares(processes)), shares(inclusive), shares(own))


class Sampler:
    """py-spy recording `pid` and its subprocesses into `out` from start() to stop(); a no-op without py-spy."""

    def __init__(self, pid: int, out: pathlib.Path):
        self.pid, self.out = pid, out
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = py_spy()
        if exe is None:
            print(
                "BENCH_CPU_PROFILE: py-spy is not installed (hack/experiments/bench/bench.sh installs it for this): no CPU profile",
                file=sys.stderr,
            )
            return
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                exe,
                "record",
                "--pid",
                str(self.pid),
                "--subprocesses",
                "--gil",
                "--rate",
                str(RATE),
                "--format",
                "raw",
                "--output",
                str(self.out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def stop(self) -> Summary | None:
        """Ends the recording (py-spy writes its file on SIGINT) and sums it up."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if not self.out.exists():
            print(f"BENCH_CPU_PROFILE: py-spy wrote no profile: {err.decode(errors='replace')[-300:]}", file=sys.stderr)
            return None
        return summarise(self.out.read_text())
