"""The report: one operator's table, and the side-by-side table of every operator with each peer's ratio to ours."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from hack.experiments.bench.results import Capacity, Finish, Result, percentile, reached
from hack.experiments.bench.settings import (
    OUTCOME,
    SETTLE_CORES,
    SINGLE_RUNS,
)
from hack.experiments.bench.subjects import Ours

ROW = "| {:<44} | {:>10} |"


def secs(value: float, limit: float, digits: int = 1) -> str:
    """A latency; infinite: not reached within `limit`; NaN (no job to measure it on): a dash."""
    if math.isnan(value):
        return "-"
    return f"{value:.{digits}f} s" if math.isfinite(value) else f"> {limit:.0f} s"


def print_spread(label: str, values: list[float], limit: float) -> None:
    print(ROW.format(f"{label}: p50", secs(percentile(values, 50), limit)))
    print(ROW.format(f"{label}: p95", secs(percentile(values, 95), limit)))
    print(ROW.format(f"{label}: max", secs(max(values) if values else math.nan, limit)))


def report(result: Result, capacity: Capacity, baseline: float) -> None:
    row = ROW
    single, bulk, finish = result.single, result.bulk, result.finish
    assert single is not None and bulk is not None and finish is not None
    jobs = result.jobs
    print()
    print(f"## make bench: {result.name}, {jobs} MPIJobs x {result.workers} workers, flags: {' '.join(result.flags)}")
    print()
    print(row.format("measure", "value"))
    print(row.format("-" * 44, "-" * 10))
    if result.name == Ours.name:
        print(row.format("bare ansible-runner run (ping, median of 3)", f"{baseline:.2f} s"))
    print(
        row.format(
            f"single job, idle: create -> all children p50 ({SINGLE_RUNS} jobs)", secs(single.to_children, 120, 2)
        )
    )
    print(row.format("single job, idle: create -> all children max", secs(single.children_max, 120, 2)))
    print(row.format(f"single job, idle: create -> Running p50 ({SINGLE_RUNS} jobs)", secs(single.to_running, 120, 2)))
    print(row.format("single job, idle: create -> Running max", secs(single.running_max, 120, 2)))
    print(row.format("free pod slots on schedulable nodes / needed", f"{capacity.slots}/{capacity.needed}"))
    print(row.format(f"{jobs} jobs created (client, 16 threads)", f"{bulk.created_all:.1f} s"))
    for label, values in (
        ("create -> all children", bulk.to_children),
        ("create -> pods up (cluster side)", bulk.to_pods_up),
        ("create -> Running", bulk.to_running),
        ("pods up -> Running (operator side)", bulk.react),
    ):
        print_spread(label, values, bulk.wall)
    print(
        row.format(
            "jobs with all children / Running", f"{reached(bulk.to_children)}/{reached(bulk.to_running)} of {jobs}"
        )
    )
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
        print(row.format("jobs Succeeded", f"{reached(finish.to_succeeded)} of {jobs}"))
        print(row.format("wall time (first told -> all Succeeded)", f"{finish.wall:.1f} s"))
        print(row.format("wall time (first told -> all cleaned up)", f"{finish.window:.1f} s"))
        if math.isfinite(finish.runs):
            print(row.format("batches", f"{finish.runs:.0f}"))
            print(row.format("ansible-runner runs started", f"{finish.starts:.0f}"))
    print()
    print(
        f"CPU seconds, {os.cpu_count()} cores: from the first create to all Running ({bulk.wall:.0f} s wall)"
        + (
            f"; from the first launcher told to all Succeeded and their workers deleted ({finish.window:.0f} s wall)"
            if finish.cpu
            else ""
        )
        + ":"
    )
    print()
    print(row.format("process", "to Running") + (" Succeeded, cleaned |" if finish.cpu else ""))
    print(row.format("-" * 44, "-" * 10) + (" ------------------ |" if finish.cpu else ""))
    for name, value in bulk.cpu.items():
        extra = f" {finish.cpu.get(name, float('nan')):>18.1f} |" if finish.cpu else ""
        print(row.format(name, f"{value:.1f}") + extra)
    print_memory(result)
    print_cpu_profile(result)
    print_requests(result)


def print_requests(result: Result) -> None:
    """The API requests of every client in both phases, the 12 most frequent by verb and resource."""
    bulk, finish = result.bulk, result.finish or Finish()
    if bulk is None or not bulk.requests:
        return
    row = ROW
    print()
    print(
        f"{result.name}: API requests (every client: the operator, kube-controller-manager, the scheduler, kwok, "
        "this script), the 12 most frequent:"
    )
    print()
    print(row.format("verb resource", "to Running") + (" Succeeded, cleaned |" if finish.cpu else ""))
    print(row.format("-" * 44, "-" * 10) + (" ------------------ |" if finish.cpu else ""))
    top = sorted(
        set(bulk.requests) | set(finish.requests), key=lambda k: -(bulk.requests.get(k, 0) + finish.requests.get(k, 0))
    )[:12]
    for name in [*top, "total"]:
        value = sum(bulk.requests.values()) if name == "total" else bulk.requests.get(name, 0)
        done = sum(finish.requests.values()) if name == "total" else finish.requests.get(name, 0)
        print(row.format(name, f"{value:.0f}") + (f" {done:>18.0f} |" if finish.cpu else ""))


Rows = dict[str, tuple[float, str, float]]  # label -> (value, printed value, how long the phase waited for it)


def print_memory(result: Result) -> None:
    """BENCH_PROFILE=1: what each process of the operator's tree held at the tree's peak RSS."""
    if not result.rss_at_peak:
        return
    print()
    print(f"{result.name}: memory at the peak RSS, by process (MiB; anonymous: its heap, PSS: shared pages split):")
    print()
    print("|    pid |    RSS |   anon |    PSS | command |")
    print("|--------|--------|--------|--------|---------|")
    for p in result.rss_at_peak:
        print(
            f"| {p['pid']:>6} | {p['rss_kib'] / 1024:>6.0f} | {p['anonymous_kib'] / 1024:>6.0f} "
            f"| {p['pss_kib'] / 1024:>6.0f} | {p['command']} |"
        )


def print_cpu_profile(result: Result) -> None:
    """BENCH_CPU_PROFILE=1: where the operator's CPU went in each phase (hack/experiments/bench/cpuprofile.py)."""
    for phase, p in result.cpu_profile.items():
        print()
        print(
            f"{result.name}, {phase}: {p['samples']} CPU samples (py-spy, {p['stacks']}); by process: "
            + ", ".join(f"{name} {share:.0%}" for name, share in p["by_process"].items())
        )
        print()
        print("| on the stack | share | running | share |")
        print("|--------------|-------|---------|-------|")
        for (inc, inc_share), (own, own_share) in itertools.zip_longest(
            p["inclusive"], p["self"], fillvalue=("", None)
        ):
            running = f"{own} | {own_share:.1%}" if own_share is not None else " |"
            print(f"| {inc} | {inc_share:.1%} | {running} |")


def comparison_rows(r: Result) -> Rows:
    """The compared measures of one run: label -> (value, printed value, how long the phase waited for it)."""
    single, bulk, finish = r.single, r.bulk, r.finish
    assert single is not None and bulk is not None and finish is not None
    size = f"{r.jobs} x {r.workers}"
    rows: dict[str, tuple[float, float, int]] = {  # value, limit, digits
        "single job, idle: create -> all children p50": (single.to_children, 120, 2),
        "single job, idle: create -> Running p50": (single.to_running, 120, 2),
        f"{size}: create -> all children p50": (percentile(bulk.to_children, 50), bulk.wall, 1),
        f"{size}: create -> all children p95": (percentile(bulk.to_children, 95), bulk.wall, 1),
        f"{size}: create -> Running p50": (percentile(bulk.to_running, 50), bulk.wall, 1),
        f"{size}: create -> Running p95": (percentile(bulk.to_running, 95), bulk.wall, 1),
        f"{size}: pods up -> Running p95 (operator)": (percentile(bulk.react, 95), bulk.wall, 1),
    }
    if OUTCOME == "run":
        for p in (50, 95):
            rows[f"launcher told -> Succeeded p{p}"] = (percentile(finish.to_succeeded, p), finish.wall, 1)
        rows["launcher Complete -> Succeeded p95 (operator)"] = (percentile(finish.react, 95), finish.wall, 1)
        rows["launcher told -> workers deleted p95"] = (percentile(finish.to_cleaned, 95), finish.window, 1)
    out = {k: (v, secs(v, limit, digits), limit) for k, (v, limit, digits) in rows.items()}
    out["jobs Running"] = (math.nan, f"{reached(bulk.to_running)}/{r.jobs}", 0)
    if OUTCOME == "run":
        out["jobs Succeeded"] = (math.nan, f"{reached(finish.to_succeeded)}/{r.jobs}", 0)
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


def side_by_side(results: Sequence[Any], rows: Callable[[Any], Rows], prefix: str = "") -> list[list[str]]:
    """The cells of `rows` for every operator, ours first, then each peer's ratio to ours (each label after
    `prefix`); an operator that could not run shows its note."""
    ours, peers = results[0], results[1:]
    mine = rows(ours) if ours.note == "" else {}
    theirs = [rows(p) if p.note == "" else {} for p in peers]
    labels = list(mine) or list(dict.fromkeys(label for t in theirs for label in t))
    lines = []
    for label in labels:
        cells = [prefix + label, mine[label][1] if label in mine else ours.note]
        cells += [t[label][1] if label in t else p.note for p, t in zip(peers, theirs, strict=True)]
        cells += [ratio(t[label], mine[label]) if label in t and label in mine else "" for t in theirs]
        lines.append(cells)
    return lines


def header(results: Sequence[Any]) -> list[str]:
    return ["measure", results[0].name, *(p.name for p in results[1:]), *(f"{p.name} / ours" for p in results[1:])]


def markdown(head: list[str], lines: list[list[str]]) -> list[str]:
    """A markdown table, the first column left-aligned, the others right-aligned."""
    widths = [max(len(str(c)) for c in col) for col in zip(head, *lines, strict=True)]

    def line(cells: list[str]) -> str:
        return (
            "| "
            + " | ".join(
                str(c).ljust(w) if i == 0 else str(c).rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
            + " |"
        )

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(cells) for cells in lines)]


def compare(results: list[Result]) -> None:
    """One table: every operator's measures side by side, and each peer's ratio to ours (peer / ours: below 1 the
    peer is faster or smaller)."""
    ours = results[0]
    print()
    print(
        f"## make bench, side by side: {ours.jobs} MPIJobs x {ours.workers} workers, one operator at a time on the "
        f"same cluster, {os.cpu_count()} cores"
    )
    print()
    for r in results:
        print(f"- {r.name}: {r.note or ' '.join(r.flags)}")
    print()
    print("\n".join(markdown(header(results), side_by_side(results, comparison_rows))))
    print()
    print(RATIO_NOTE + " (BENCH_TIMEOUT for ours, BENCH_PEER_TIMEOUT for peers).")


RATIO_NOTE = (
    'ratio = peer / ours: below 1 the peer is faster, uses less CPU or memory; "> N s": not reached in the '
    "N s the phase waited"
)
