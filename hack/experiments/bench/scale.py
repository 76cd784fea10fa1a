"""`make bench-scale` (hack/experiments/bench/bench_scale.py), its pure part: the sizes (BENCH_SCALE_SIZES), each size's
wait, the measures of one operator at one size (per job where the work grows with the jobs), the table of every size,
the results document (the JSON beside the plot) and the plot's lines, read from that document so that a saved run can be
drawn again."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hack.experiments.bench.report import Rows, header, markdown, secs, side_by_side
from hack.experiments.bench.results import Result, percentile, reached

DEFAULT_SIZES = "200x1 1000x1 5000x1 200x4"

# The measures' labels: the rows of the table, the keys of the document, the plot's lines.
RUNNING_P95 = "create -> Running p95"
SUCCEEDED_P95 = "told -> Succeeded p95"
CPU_RUNNING = "operator CPU ms/job, -> all Running"
CPU_CLEANED = "operator CPU ms/job, told -> cleaned up"
RSS = "peak RSS incl. children"
SINGLE_P50 = "single job, idle: create -> Running p50"
PSS = "PSS of the tree at peak RSS"
OPERATOR_CPU = "operator incl. runner subprocesses"  # accounting.cpu_snapshot's name for the operator's tree

# The plot: a panel per quantity, a line per measure (its line style), operator (its colour) and workers per job.
PANELS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("latency p95 (s)", ((RUNNING_P95, "create -> Running"), (SUCCEEDED_P95, "told -> Succeeded"))),
    ("operator CPU per job (ms)", ((CPU_RUNNING, "to Running"), (CPU_CLEANED, "told -> cleaned up"))),
    ("peak RSS incl. children (MiB)", ((RSS, "peak RSS"),)),
)


@dataclass(frozen=True)
class Size:
    jobs: int
    workers: int

    @property
    def label(self) -> str:
        return f"{self.jobs} x {self.workers}"

    @property
    def pods(self) -> int:
        return self.jobs * (self.workers + 1)


def parse_sizes(text: str) -> list[Size]:
    """ "200x1 1000x1" (spaces or commas): jobs x workers per job, in the order given."""
    sizes = []
    for item in text.replace(",", " ").split():
        jobs, sep, workers = item.partition("x")
        if not (sep and jobs.isdigit() and workers.isdigit() and int(jobs) > 0 and int(workers) > 0):
            raise ValueError(f"BENCH_SCALE_SIZES: {item!r} is not JOBSxWORKERS, e.g. 1000x1")
        sizes.append(Size(int(jobs), int(workers)))
    if not sizes:
        raise ValueError("BENCH_SCALE_SIZES: no size")
    return sizes


def timeout_for(size: Size, per_pod: float, minimum: float) -> float:
    """Each wait of a size (all Running, all Succeeded, all cleaned up, the previous namespace gone): grows with its
    pods, the same for every operator."""
    return max(minimum, per_pod * size.pods)


def scale_rows(r: Result) -> Rows:
    """One operator at one size: label -> (value, printed value, how long the phase waited for it). A latency that
    was not reached is infinite ("> N s"); "jobs Running/Succeeded" say where a run that timed out stopped."""
    bulk, finish, jobs = r.bulk, r.finish, r.jobs
    assert bulk is not None and finish is not None
    latencies: dict[str, tuple[float, float]] = {}
    if r.single is not None:  # BENCH_SCALE_SINGLES jobs one at a time on the idle operator, before the burst
        latencies[SINGLE_P50] = (r.single.to_running, 120.0)
        latencies["single job, idle: create -> Running max"] = (r.single.running_max, 120.0)
    latencies["create -> Running p50"] = (percentile(bulk.to_running, 50), bulk.wall)
    latencies[RUNNING_P95] = (percentile(bulk.to_running, 95), bulk.wall)
    ran = bool(finish.cpu)  # phase 4: not with BENCH_LAUNCHER_OUTCOME=succeed
    if ran:
        latencies.update(
            {
                "told -> Succeeded p50": (percentile(finish.to_succeeded, 50), finish.wall),
                SUCCEEDED_P95: (percentile(finish.to_succeeded, 95), finish.wall),
                "told -> launcher Complete p50 (cluster)": (percentile(finish.to_launcher_done, 50), finish.wall),
                "told -> launcher Complete p95 (cluster)": (percentile(finish.to_launcher_done, 95), finish.wall),
                "launcher Complete -> Succeeded p50 (operator)": (percentile(finish.react, 50), finish.wall),
                "launcher Complete -> Succeeded p95 (operator)": (percentile(finish.react, 95), finish.wall),
                "told -> workers deleted p95": (percentile(finish.to_cleaned, 95), finish.window),
            }
        )
    out: Rows = {k: (v, secs(v, limit), limit) for k, (v, limit) in latencies.items()}
    out["jobs Running"] = (math.nan, f"{reached(bulk.to_running)}/{jobs}", 0)
    if ran:
        out["jobs Succeeded"] = (math.nan, f"{reached(finish.to_succeeded)}/{jobs}", 0)
    out["wall s, first create -> all Running"] = (bulk.wall, f"{bulk.wall:.1f}", 0)

    def per_job(label: str, value: float, scale: float, digits: int) -> None:
        v = value * scale / jobs
        out[label] = (v, f"{v:.{digits}f}", 0)

    per_job(CPU_RUNNING, bulk.cpu[OPERATOR_CPU], 1000, 1)
    if ran:
        per_job(CPU_CLEANED, finish.cpu[OPERATOR_CPU], 1000, 1)
    if bulk.requests:
        per_job("API requests/job (all clients), -> all Running", sum(bulk.requests.values()), 1, 1)
    if finish.requests:
        per_job("API requests/job (all clients), told -> cleaned up", sum(finish.requests.values()), 1, 1)
    out[RSS] = (r.rss_peak_tree / 1024, f"{r.rss_peak_tree / 1024:.0f} MiB", 0)
    if r.rss_at_peak:  # BENCH_PROFILE=1: the tree's proportional share at that moment (shared pages split)
        pss = sum(float(str(p.get("pss_kib") or 0)) for p in r.rss_at_peak) / 1024
        out[PSS] = (pss, f"{pss:.0f} MiB", 0)
    # only on the local cluster (its pid files); the Job controller and kwok make the cluster's share of told -> Succeeded
    for component in ("kube-apiserver", "etcd", "kube-controller-manager", "kwok"):
        for label, cpu in (("-> all Running", bulk.cpu), ("told -> cleaned up", finish.cpu)):
            if component in cpu:
                out[f"{component} CPU s, {label}"] = (cpu[component], f"{cpu[component]:.1f}", 0)
    return out


OURS_FIRST, PEERS_FIRST = "ours first", "peers first"
ORDERS = {"both": (OURS_FIRST, PEERS_FIRST), "ours-first": (OURS_FIRST,), "peers-first": (PEERS_FIRST,)}


def parse_orders(text: str) -> tuple[str, ...]:
    """BENCH_SCALE_ORDERS: both (default: each size ours then the peers, then the peers then ours), ours-first or
    peers-first."""
    if text not in ORDERS:
        raise ValueError(f"BENCH_SCALE_ORDERS: {text!r} is not one of {', '.join(ORDERS)}")
    return ORDERS[text]


@dataclass
class Run:
    """One size in one order: every operator's result, ours first (whatever order they ran in), and the wait it had."""

    size: Size
    timeout: float
    results: Sequence[Result | Saved] = field(default_factory=list)
    order: str = OURS_FIRST

    @property
    def label(self) -> str:
        return f"{self.size.label} ({self.order})"


def rows_of(r: Result | Saved) -> Rows:
    """A measured operator's rows (scale_rows), or a saved one's as its document kept them."""
    return r.rows if isinstance(r, Saved) else scale_rows(r)


def table(runs: list[Run]) -> list[str]:
    """Every size's rows in one markdown table (the label prefixed with the size and order), each peer's ratio to
    ours."""
    measured = [run for run in runs if run.results]
    if not measured:
        return []
    lines = [cells for run in measured for cells in side_by_side(run.results, rows_of, prefix=f"{run.label}: ")]
    return markdown(header(measured[0].results), lines)


def spread_table(runs: list[Run]) -> list[str]:
    """Each size's ratios (peer / ours) in every order it ran and their spread (the largest over the smallest): what
    the order of the operators and the previous size's teardown do to a ratio."""
    by_size: dict[Size, list[Run]] = {}
    for run in runs:
        if len(run.results) > 1 and all(r.note == "" for r in run.results):
            by_size.setdefault(run.size, []).append(run)
    orders = list(dict.fromkeys(run.order for group in by_size.values() for run in group))
    lines = []
    for size, group in by_size.items():
        rows = [(run, rows_of(run.results[0]), rows_of(run.results[1])) for run in group]
        for label in rows[0][1]:
            ratios = {}
            for run, mine, theirs in rows:
                ours_v, peer_v = (mine.get(label) or (math.nan,))[0], (theirs.get(label) or (math.nan,))[0]
                if math.isfinite(ours_v) and ours_v > 0 and not math.isnan(peer_v):
                    ratios[run.order] = peer_v / ours_v
            if not ratios:
                continue
            cells = [f"{size.label}: {label}"] + [f"{ratios[o]:.2f}" if o in ratios else "" for o in orders]
            finite = [v for v in ratios.values() if math.isfinite(v)]
            spread = max(finite) / min(finite) if len(finite) > 1 and min(finite) > 0 else math.nan
            cells.append(f"{spread:.2f}" if math.isfinite(spread) else "")
            lines.append(cells)
    if not lines:
        return []
    peer = by_size[next(iter(by_size))][0].results[1].name
    return markdown(["measure", *(f"{peer} / ours, {o}" for o in orders), "spread (max / min)"], lines)


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _requests(result: Result) -> dict[str, dict[str, float]]:
    """API requests of every client by verb and resource: to all Running, and from told to cleaned up."""
    return {
        "to_running": result.bulk.requests if result.bulk else {},
        "told_to_cleaned_up": result.finish.requests if result.finish else {},
    }


def document(runs: list[Run], about: dict[str, Any]) -> dict[str, Any]:
    """The results as JSON: `about` (command, commit, date, cores, nodes), then per size and operator each measure's
    value (null when not reached or not a number), how it was printed and, when not reached, the wait it exceeded."""
    sizes = []
    for run in runs:
        operators = []
        for r in run.results:
            measures = {}
            for label, (value, shown, limit) in ({} if r.note else scale_rows(r)).items():
                measures[label] = {"value": _number(value), "shown": shown}
                if math.isinf(value):
                    measures[label]["not_reached_within"] = limit
            operators.append(
                {
                    "name": r.name,
                    "flags": r.flags,
                    "note": r.note,
                    "measures": measures,
                    "status_writers": r.status_writers,
                    "memory_at_peak": r.rss_at_peak,
                    "cpu_profile": r.cpu_profile,
                    "requests": _requests(r),
                }
            )
        sizes.append(
            {
                "jobs": run.size.jobs,
                "workers": run.size.workers,
                "order": run.order,
                "timeout": run.timeout,
                "operators": operators,
            }
        )
    return {**about, "sizes": sizes}


@dataclass
class Line:
    """One line of the plot: a measure of one operator at one number of workers per job, against the jobs."""

    panel: str
    operator: str
    measure: str  # the short name, PANELS' second item
    workers: int
    points: list[tuple[int, float, bool]] = field(default_factory=list)  # jobs, value, True: a lower bound (timeout)

    @property
    def label(self) -> str:
        return f"{self.operator}, {self.measure}, {self.workers} worker{'s' if self.workers > 1 else ''}/job"


def plot_lines(doc: dict[str, Any]) -> list[Line]:
    """The plot's lines from a results document, each panel's in PANELS' order, the points by number of jobs. A
    latency not reached is drawn at the wait it exceeded, as a lower bound; a measure not taken is left out."""
    lines: dict[tuple[str, str, str, int], Line] = {}
    for panel, measures in PANELS:
        for size in doc["sizes"]:
            for op in size["operators"]:
                for label, short in measures:
                    m = op["measures"].get(label)
                    if m is None:
                        continue
                    value, lower = m["value"], m["value"] is None
                    if lower:
                        value = m.get("not_reached_within")
                    if value is None:
                        continue
                    key = (panel, op["name"], short, size["workers"])
                    line = lines.setdefault(key, Line(panel, op["name"], short, size["workers"]))
                    line.points.append((size["jobs"], value, lower))
    for line in lines.values():
        line.points.sort()
    return list(lines.values())


@dataclass(frozen=True)
class Saved:
    """One operator at one size as a results document kept it: enough for the tables (name, note, rows)."""

    name: str
    note: str
    rows: Rows


def saved_rows(op: dict[str, Any], timeout: float) -> Rows:
    """A document's measures back as rows: a null value is infinite where it was not reached within a wait (printed
    "> N s"), otherwise not a number."""
    out: Rows = {}
    for label, m in op["measures"].items():
        value = m["value"]
        if value is None:
            value = math.inf if "not_reached_within" in m else math.nan
        out[label] = (float(value), m["shown"], float(m.get("not_reached_within") or timeout))
    return out


def saved_runs(doc: dict[str, Any]) -> list[Run]:
    """A results document's sizes as runs, for the tables of a saved or merged run."""
    runs = []
    for size in doc["sizes"]:
        results = [Saved(op["name"], op["note"], saved_rows(op, size["timeout"])) for op in size["operators"]]
        runs.append(Run(Size(size["jobs"], size["workers"]), size["timeout"], results, size.get("order", OURS_FIRST)))
    return runs


PART_KEYS = ("command", "commit", "started", "cores", "kwok_nodes", "free_pod_slots", "stopped")


def merge(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs' documents as one: every size in every order once (a size measured in the same order twice is
    refused: which one counts?), sorted as the default curve reads (workers, then jobs; ours first before peers
    first), and each part's command, commit, start, cores and nodes under "parts". Whether the parts measured the
    same code is the caller's question (git)."""
    if len(docs) < 2:
        raise ValueError("merge: give at least two results documents")
    seen: dict[tuple[int, int, str], int] = {}
    sizes = []
    names = [op["name"] for op in docs[0]["sizes"][0]["operators"]] if docs[0]["sizes"] else []
    for i, doc in enumerate(docs):
        for size in doc["sizes"]:
            if [op["name"] for op in size["operators"]] != names:
                raise ValueError(
                    f"merge: document {i + 1} measured {', '.join(op['name'] for op in size['operators'])} at "
                    f"{size['jobs']} x {size['workers']}, document 1 {', '.join(names)}"
                )
            key = (size["jobs"], size["workers"], size.get("order", OURS_FIRST))
            if key in seen:
                raise ValueError(
                    f"merge: {key[0]} x {key[1]} ({key[2]}) is in document {seen[key] + 1} and in document {i + 1}"
                )
            seen[key] = i
            sizes.append({**size, "order": key[2], "part": i + 1})
    orders = (OURS_FIRST, PEERS_FIRST)
    sizes.sort(key=lambda s: (s["workers"], s["jobs"], orders.index(s["order"]) if s["order"] in orders else 2))
    commits = list(dict.fromkeys(str(doc.get("commit", "?")) for doc in docs))
    cores = list(dict.fromkeys(doc.get("cores") for doc in docs))
    return {
        "command": "make bench-scale, merged: " + "; ".join(str(doc.get("command", "?")) for doc in docs),
        "commit": "+".join(commits),
        "started": " / ".join(str(doc.get("started", "?")) for doc in docs),
        "cores": cores[0] if len(cores) == 1 else cores,
        "parts": [{k: doc[k] for k in PART_KEYS if k in doc} for doc in docs],
        "sizes": sizes,
    }
