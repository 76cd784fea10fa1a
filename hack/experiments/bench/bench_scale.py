"""`make bench-scale`: `make bench`'s burst and finish (this package) at several sizes, this operator and its peers
(BENCH_SCALE_PEERS, default kubeflow-tuned) one at a time on the same cluster, each size and operator on a fresh
namespace. Prints one table (every size's rows, each peer's ratio to ours), writes the results as JSON and a plot
(PNG, matplotlib) of latency, operator CPU per job and peak RSS against the number of jobs.

BENCH_SCALE_SIZES ("200x1 1000x1 5000x1 200x4": jobs x workers, in that order); BENCH_SCALE_ORDERS (both: each size
ours then the peers, then the peers then ours, each ratio then with its spread; ours-first; peers-first);
BENCH_SCALE_SINGLES (3: single jobs on the idle operator before each burst, create -> Running); BENCH_SCALE_TIMEOUT_PER_POD (0.15 s)
and BENCH_SCALE_TIMEOUT_MIN (300 s) bound each wait of a size (max of the two, its pods times the first); a size
that does not get there is reported with how many jobs did, and the run goes on. BENCH_SCALE_OUT
(docs/images/bench-scale.png; the JSON beside it, .json).
`bash hack/make/env.sh python -m hack.experiments.bench.bench_scale --plot RESULTS.json [PNG]` draws a saved run again;
`... bench_scale --merge OUT.png A.json B.json ...` makes one curve (JSON beside OUT, tables, plot) of runs that measured
other sizes or orders of the same code (git: no change under MEASURED between their commits), for a curve longer than
one sitting (5,000 x 1 in both orders alone is about 2 h 40 min on 2 cores).
bench.sh --scale (beside this) sizes the local cluster for the largest size and installs matplotlib
(requirements-plot.txt).
"""

from __future__ import annotations

import datetime
import os
import pathlib
import subprocess
import sys
import traceback
from typing import Any

from kubernetes import client

from hack.lib.paths import ROOT

from .cluster import delete_namespaces, prepare
from .report import RATIO_NOTE, print_cpu_profile, print_memory, print_requests
from .results import Result
from .scale import (
    DEFAULT_SIZES,
    OURS_FIRST,
    PANELS,
    Run,
    Size,
    document,
    merge,
    parse_orders,
    parse_sizes,
    plot_lines,
    saved_runs,
    spread_table,
    table,
    timeout_for,
)
from .scenario import Bench, StillRunning
from .subjects import Kubeflow, Ours, peer_subjects


def setting(name: str, default: str) -> str:
    return os.environ.get(name) or default


def peer_names() -> list[str]:
    """BENCH_SCALE_PEERS, spaces or commas; set and empty: ours alone."""
    return os.environ.get("BENCH_SCALE_PEERS", "kubeflow-tuned").replace(",", " ").split()


def measure(
    kubeconfig: str, api: client.ApiClient, subject: Ours | Kubeflow, run: Run, teardown: float, singles: int
) -> Result:
    """One operator at one size, once the previous run's namespace is gone (within `teardown` s: that run's wait,
    the larger size's); a failure becomes the row's note (StillRunning stops the whole run: the next operator would
    share the jobs with this one)."""
    size = run.size
    try:  # the previous run's teardown (its pods garbage-collected), off this run's clock
        delete_namespaces(client.CoreV1Api(api), wait=teardown)
    except TimeoutError as exc:
        print(
            f"WARNING: {exc}: {subject.name} at {size.label} is measured while the cluster still deletes them",
            file=sys.stderr,
        )
    try:
        return Bench(kubeconfig, api, subject, size.jobs, size.workers, single_runs=singles, timeout=run.timeout).run()
    except StillRunning:
        raise
    except Exception as exc:
        traceback.print_exc()
        return Result(
            subject.name, note=f"failed: {type(exc).__name__}: {exc}"[:200], jobs=size.jobs, workers=size.workers
        )


def about(sizes: list[Size]) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "command": f'BENCH_SCALE_SIZES="{" ".join(f"{s.jobs}x{s.workers}" for s in sizes)}" '
        f'BENCH_SCALE_PEERS="{" ".join(peer_names())}" make bench-scale',
        "commit": commit,
        "cores": os.cpu_count(),
        "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def draw(doc: dict[str, Any], png: pathlib.Path) -> bool:
    """The plot: a panel per quantity of scale.PANELS against the number of jobs (log), a colour per operator, a
    line style per measure, a marker per workers per job; a hollow triangle where a wait ran out (a lower bound)."""
    try:
        import matplotlib
    except ImportError:
        print(
            "no plot: matplotlib is not installed (hack/experiments/bench/bench.sh --scale installs it); later: bash "
            f"hack/make/env.sh python -m hack.experiments.bench.bench_scale --plot {png.with_suffix('.json')}",
            file=sys.stderr,
        )
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = plot_lines(doc)
    operators = list(dict.fromkeys(line.operator for line in lines))
    fig, axes = plt.subplots(1, len(PANELS), figsize=(6 * len(PANELS), 5), squeeze=False)
    for ax, (panel, measures) in zip(axes[0], PANELS, strict=True):
        styles = {short: style for (_, short), style in zip(measures, ("-", "--", ":"), strict=False)}
        for line in (ln for ln in lines if ln.panel == panel):
            color = f"C{operators.index(line.operator)}"
            marker = "o" if line.workers == 1 else "s"
            xs, ys = [p[0] for p in line.points], [p[1] for p in line.points]
            ax.plot(xs, ys, color=color, linestyle=styles[line.measure], marker=marker, label=line.label)
            bounds = [(x, y) for x, y, lower in line.points if lower]
            if bounds:
                ax.scatter(*zip(*bounds, strict=True), marker="^", s=120, facecolors="none", edgecolors=color)
        ax.set_xscale("log")
        jobs = sorted({size["jobs"] for size in doc["sizes"]})
        ax.set_xticks(jobs, [str(j) for j in jobs])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_xlabel("MPIJobs created at once")
        ax.set_title(panel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(
        f"make bench-scale, commit {doc.get('commit', '?')}, {doc.get('started', '')}, "
        f"{doc.get('cores', '?')} cores (triangle: a wait ran out, the value is a lower bound)",
        fontsize=10,
    )
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def save(runs: list[Run], info: dict[str, Any], png: pathlib.Path) -> dict[str, Any]:
    """The JSON beside the plot, rewritten after every operator: a run stopped half-way keeps what it measured."""
    import json

    doc = document(runs, info)
    png.parent.mkdir(parents=True, exist_ok=True)
    png.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


# What a merged curve's parts must share: the operator, the collection, its install and the cluster it ran on (the
# reporting code and the docs may differ).
MEASURED = (
    "plugins",
    "mpijob_operator",
    "roles",
    "playbooks",
    "meta",
    "crd",
    "galaxy.yml",
    "requirements.txt",
    "Containerfile",
    "hack/worlds",
    "hack/build",
    "hack/experiments/bench/scenario.py",
    "hack/experiments/bench/subjects.py",
    "hack/experiments/bench/tracker.py",
    "hack/experiments/bench/accounting.py",
    "hack/experiments/bench/cluster.py",
)


def code_differs(commits: list[str]) -> list[str]:
    """The commits whose measured code (MEASURED) is not the first one's, each with the files that differ."""
    problems = []
    for commit in commits[1:]:
        diff = subprocess.run(
            ["git", "-C", str(ROOT), "diff", "--name-only", commits[0], commit, "--", *MEASURED],
            capture_output=True,
            text=True,
            check=False,
        )
        if diff.returncode != 0:
            problems.append(f"{commit}: git cannot compare it with {commits[0]}: {diff.stderr.strip()}")
        elif diff.stdout.strip():
            problems.append(f"{commit} differs from {commits[0]} in: {', '.join(diff.stdout.split())}")
    return problems


def print_tables(runs: list[Run], commit: str) -> None:
    print(f"## make bench-scale, side by side: one operator at a time on the same cluster, commit {commit}")
    print()
    print("\n".join(table(runs)))
    print()
    spread = spread_table(runs)
    if spread:
        print("### Each ratio in both orders, and its spread")
        print()
        print("\n".join(spread))
        print()


def merged(argv: list[str]) -> int:
    """--merge OUT.png A.json B.json ...: one document, tables and plot of runs of the same measured code."""
    import json

    if len(argv) < 3:
        print("usage: bench_scale --merge OUT.png A.json B.json [...]", file=sys.stderr)
        return 2
    png, paths = pathlib.Path(argv[0]), [pathlib.Path(a) for a in argv[1:]]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"not merged: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    docs = [json.loads(p.read_text()) for p in paths]
    problems = code_differs([str(d.get("commit", "")) for d in docs])
    if problems:
        print("not merged: the runs measured different code:\n- " + "\n- ".join(problems), file=sys.stderr)
        return 1
    try:
        doc = merge(docs)
    except ValueError as exc:
        print(f"not merged: {exc}", file=sys.stderr)
        return 1
    png.parent.mkdir(parents=True, exist_ok=True)
    png.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    for i, part in enumerate(doc["parts"], 1):
        print(
            f"- part {i}: {part.get('command')}, commit {part.get('commit')}, {part.get('started')}, "
            f"{part.get('cores')} cores, {part.get('kwok_nodes')} kwok nodes"
        )
    print()
    print_tables(saved_runs(doc), doc["commit"])
    print(RATIO_NOTE)
    print(f"results: {png.with_suffix('.json')}")
    if draw(doc, png):
        print(f"plot: {png}")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--merge"]:
        return merged(sys.argv[2:])
    if sys.argv[1:2] == ["--plot"]:  # draw a saved run again
        import json

        saved = pathlib.Path(sys.argv[2])
        png = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else saved.with_suffix(".png")
        if not draw(json.loads(saved.read_text()), png):
            return 1
        print(f"plot: {png}")
        return 0
    kubeconfig = os.environ["KUBECONFIG"]
    # The shell's auth, as the modules and the operator connect (importable once mpijob_operator is imported).
    from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import api_client

    api = api_client({"kubeconfig": kubeconfig})
    sizes = parse_sizes(setting("BENCH_SCALE_SIZES", DEFAULT_SIZES))
    orders = parse_orders(setting("BENCH_SCALE_ORDERS", "both"))
    singles = int(setting("BENCH_SCALE_SINGLES", "3"))
    per_pod = float(setting("BENCH_SCALE_TIMEOUT_PER_POD", "0.15"))
    minimum = float(setting("BENCH_SCALE_TIMEOUT_MIN", "300"))
    peers = peer_subjects(peer_names(), "BENCH_SCALE_PEERS")  # before the long run: a wrong name fails now
    png = pathlib.Path(setting("BENCH_SCALE_OUT", str(ROOT / "docs/images/bench-scale.png"))).resolve()
    largest = max(sizes, key=lambda s: s.pods)
    capacity = prepare(api, largest.pods, wait=max(300.0, timeout_for(largest, per_pod, minimum)))
    nodes = len(client.CoreV1Api(api).list_node(label_selector="type=kwok").items)
    info = {**about(sizes), "kwok_nodes": nodes, "free_pod_slots": capacity.slots, "pods_largest_size": largest.pods}
    print(
        f"## make bench-scale: sizes {', '.join(s.label for s in sizes)}; operators: mpi.operator, "
        f"{', '.join(p.name for p in peers)}; {nodes} kwok nodes, {capacity.slots} free pod slots for "
        f"{largest.pods} pods; results: {png.with_suffix('.json')}",
        flush=True,
    )
    runs: list[Run] = []
    stopped = ""
    for size in sizes:
        for order in orders:
            run = Run(size, timeout_for(size, per_pod, minimum), order=order)
            runs.append(run)
            subjects: list[Any] = [Ours(), *peers]
            measured: dict[int, Result] = {}
            for i in range(len(subjects)) if order == OURS_FIRST else reversed(range(len(subjects))):
                subject = subjects[i]
                if isinstance(subject, Result):  # a peer that cannot run here: its note
                    measured[i] = Result(subject.name, note=subject.note, jobs=size.jobs, workers=size.workers)
                    continue
                print(f"## {run.label}: {subject.name} (each wait at most {run.timeout:.0f} s)", flush=True)
                try:
                    # 200 x 4 after 5,000 x 1: the 10,000 pods' namespace takes longer to go than 200 x 4's own wait
                    teardown = max(r.timeout for r in runs)
                    measured[i] = measure(kubeconfig, api, subject, run, teardown, singles)
                    print_memory(measured[i])
                    print_cpu_profile(measured[i])
                    print_requests(measured[i])
                except StillRunning as exc:
                    stopped = f"stopped: {exc}; the sizes after it were not run"
                    break
                run.results = [measured[j] for j in sorted(measured)]  # ours first, as the table reads them
                save(runs, info, png)
            print("\n" + "\n".join(table([run])) + "\n", flush=True)
            if stopped:
                break
        if stopped:
            break
    delete_namespaces(client.CoreV1Api(api))
    doc = save(runs, info | ({"stopped": stopped} if stopped else {}), png)
    print()
    for r in runs[0].results:
        if isinstance(r, Result):
            print(f"- {r.name}: {r.note or ' '.join(r.flags)}")
    print()
    print_tables(runs, f"{info['commit']}, {os.cpu_count()} cores")
    print(
        RATIO_NOTE + " (each size's wait: BENCH_SCALE_TIMEOUT_PER_POD x its pods, at least BENCH_SCALE_TIMEOUT_MIN). "
        "CPU and API requests per job are over the jobs created; API requests are every client's."
    )
    if stopped:
        print(stopped, file=sys.stderr)
    print(f"results: {png.with_suffix('.json')}")
    if draw(doc, png):
        print(f"plot: {png}")
    return 1 if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
