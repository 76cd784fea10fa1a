"""What the operator and the machine spent, read from /proc (CPU seconds of a process tree, RSS, the local cluster's
components by their pid files, the machine's quiet) and from the API server's /metrics (requests by verb and
resource); and the other MPIJob operators on this machine that watch every namespace, the bench's too."""

from __future__ import annotations

import os
import pathlib
import re
import time

from hack.experiments.bench.settings import (
    SETTLE_CORES,
    SETTLE_MAX,
)
from hack.lib.paths import cache


def namespace_scoped(args: list[str]) -> bool:
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
        if operator and not namespace_scoped(args):
            found[int(p.name)] = " ".join(args)[:300]
    return found


def _process_tree(pid: int) -> dict[int, dict[str, str]]:
    """The process `pid` and every process below it: pid -> its /proc/<pid>/status fields."""
    children: dict[int, list[int]] = {}
    status: dict[int, dict[str, str]] = {}
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            text = (p / "status").read_text()
        except OSError:
            continue
        fields = {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}
        children.setdefault(int(fields.get("PPid", "0")), []).append(int(p.name))
        status[int(p.name)] = fields
    tree, stack = {}, [pid]
    while stack:
        q = stack.pop()
        if q in status:
            tree[q] = status[q]
        stack.extend(children.get(q, []))
    return tree


def _kib(value: str | None) -> int:
    return int(value.split()[0]) if value else 0


def rss_tree_kib(pid: int) -> int:
    """RSS of the operator and every process below it (ansible-runner, ansible, the module)."""
    return sum(_kib(fields.get("VmRSS")) for fields in _process_tree(pid).values())


def memory_by_process(pid: int) -> list[dict[str, object]]:
    """What each process of the tree holds (BENCH_PROFILE=1): its command line, RSS and, from smaps_rollup, its
    anonymous memory (the heap: what the process built) and proportional share (PSS: shared pages split)."""
    out: list[dict[str, object]] = []
    for q, fields in sorted(_process_tree(pid).items()):
        try:
            args = pathlib.Path(f"/proc/{q}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
            rollup = pathlib.Path(f"/proc/{q}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        smaps = {k: v.strip() for k, v in (line.split(":", 1) for line in rollup[1:] if ":" in line)}
        command = " ".join(os.path.basename(a) if a.startswith("/") else a for a in args)  # the module's name too
        out.append(
            {
                "pid": q,
                "command": command[:120],
                "rss_kib": _kib(fields.get("VmRSS")),
                "anonymous_kib": _kib(smaps.get("Anonymous")),
                "pss_kib": _kib(smaps.get("Pss")),
            }
        )
    return out


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
    snap = {
        "operator incl. runner subprocesses": cpu_seconds(operator_pid, children=True),
        "bench client (this script)": cpu_seconds(os.getpid()),
    }
    for name in ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"):
        try:
            snap[name] = cpu_seconds(int((CLUSTER_PIDS / f"{name}.pid").read_text().split()[0]))
        except (OSError, ValueError):
            continue
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in f.readline().split()[1:8])
    snap["machine total (all cores)"] = (user + nice + system + irq + softirq) / CLK_TCK
    return snap


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before[k] for k, v in after.items() if k in before}


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


def peak_rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


_REQUEST_LINE = re.compile(r"^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$", re.M)


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
        key = f"{lab.get('verb', '?')} {lab.get('resource', '?')}" + (
            f"/{lab['subresource']}" if lab.get("subresource") else ""
        )
        out[key] = out.get(key, 0.0) + float(value)
    return out


def requests_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}
