"""`make bench-scale`'s pure part (hack/experiments/bench/scale.py): the sizes it accepts, each size's wait, the table
of every size with a peer's ratios, a size that ran out of time (where it stopped) and one that failed, and the results
document and plot lines that come out of it (valid JSON: a latency not reached is null, plotted as a lower bound)."""

from __future__ import annotations

import json
import math

import pytest

from hack.experiments.bench.results import Bulk, Finish, Result
from hack.experiments.bench.scale import (
    CPU_CLEANED,
    CPU_RUNNING,
    OURS_FIRST,
    PEERS_FIRST,
    PSS,
    RSS,
    RUNNING_P95,
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


def result(name, jobs, running, succeeded, cpu, rss_mib, wall=100.0, workers=1):
    keys = [("ns", f"job-{i}") for i in range(jobs)]
    components = {"operator incl. runner subprocesses": cpu, "kube-apiserver": 10.0, "etcd": 2.0}
    return Result(
        name,
        ["--flag"],
        None,
        Bulk(
            keys=keys,
            created_all=1.0,
            wall=wall,
            to_children=running,
            to_pods_up=running,
            to_running=running,
            react=[],
            runs=math.nan,
            starts=math.nan,
            reconciles=math.nan,
            mean_batch=math.nan,
            cpu=components,
            requests={"POST pods": 2.0 * jobs, "GET mpijobs": 3.0 * jobs},
        ),
        Finish(
            wall=wall,
            window=wall,
            to_succeeded=succeeded,
            to_launcher_done=[s / 2 for s in succeeded],
            react=[s / 2 for s in succeeded if math.isfinite(s)],
            to_cleaned=succeeded,
            cpu={**components, "operator incl. runner subprocesses": cpu / 2},
            requests={"DELETE pods": 1.0 * jobs},
        ),
        rss_peak_tree=rss_mib * 1024,
        jobs=jobs,
        workers=workers,
    )


def rows(lines):
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in lines[2:]}


def test_sizes_in_the_order_given_and_a_wrong_one_named():
    assert parse_sizes("200x1 1000x1,5000x1  200x4") == [Size(200, 1), Size(1000, 1), Size(5000, 1), Size(200, 4)]
    assert Size(200, 4).pods == 1000
    with pytest.raises(ValueError, match="'1000'"):
        parse_sizes("200x1 1000")
    with pytest.raises(ValueError, match="no size"):
        parse_sizes(" ")


def test_the_wait_grows_with_the_pods():
    assert timeout_for(Size(200, 1), 0.15, 300) == 300
    assert timeout_for(Size(5000, 1), 0.15, 300) == pytest.approx(1500)


def runs():
    small = Run(
        Size(10, 1),
        300,
        [
            result("mpi.operator", 10, [2.0] * 10, [1.0] * 10, 0.5, 200),
            result("Kubeflow tuned", 10, [4.0] * 10, [1.0] * 10, 0.25, 100),
        ],
    )
    # at 40 jobs the peer got 30 Running within its 300 s and then none Succeeded
    big = Run(
        Size(40, 1),
        300,
        [
            result("mpi.operator", 40, [5.0] * 40, [2.0] * 40, 2.0, 210),
            result("Kubeflow tuned", 40, [6.0] * 30 + [math.inf] * 10, [math.inf] * 40, 4.0, 300, wall=300.0),
        ],
    )
    failed = Run(
        Size(20, 4),
        300,
        [
            result("mpi.operator", 20, [3.0] * 20, [1.0] * 20, 1.0, 220, workers=4),
            Result("Kubeflow tuned", note="failed: TimeoutError: ready", jobs=20, workers=4),
        ],
    )
    return [small, big, failed]


def test_one_table_every_size_per_job_where_the_work_grows_and_where_a_size_stopped():
    table_rows = rows(table(runs()))
    assert table_rows[f"10 x 1 (ours first): {RUNNING_P95}"] == ["2.0 s", "4.0 s", "2.00"]
    assert table_rows[f"10 x 1 (ours first): {CPU_RUNNING}"] == ["50.0", "25.0", "0.50"]  # ms per job
    assert table_rows[f"10 x 1 (ours first): {CPU_CLEANED}"] == ["25.0", "12.5", "0.50"]
    assert table_rows["10 x 1 (ours first): API requests/job (all clients), -> all Running"] == ["5.0", "5.0", "1.00"]
    assert table_rows["10 x 1 (ours first): told -> launcher Complete p95 (cluster)"][:2] == ["0.5 s", "0.5 s"]
    assert table_rows["10 x 1 (ours first): kube-apiserver CPU s, told -> cleaned up"][:2] == ["10.0", "10.0"]
    assert table_rows[f"10 x 1 (ours first): {RSS}"] == ["200 MiB", "100 MiB", "0.50"]
    # where the peer stopped at 40 jobs, and its p95 a lower bound
    assert table_rows["40 x 1 (ours first): jobs Running"] == ["40/40", "30/40", ""]
    assert table_rows["40 x 1 (ours first): jobs Succeeded"] == ["40/40", "0/40", ""]
    assert table_rows[f"40 x 1 (ours first): {RUNNING_P95}"] == ["5.0 s", "> 300 s", "> 60.0"]
    # no job of the peer got both the launcher Complete and Succeeded: no operator's share to show
    assert table_rows["40 x 1 (ours first): launcher Complete -> Succeeded p95 (operator)"] == ["1.0 s", "-", ""]
    # a peer that failed at a size: its note, and the run went on
    assert table_rows[f"20 x 4 (ours first): {RUNNING_P95}"] == ["3.0 s", "failed: TimeoutError: ready", ""]


def test_the_document_is_json_and_its_plot_lines_mark_a_timeout_as_a_lower_bound():
    doc = json.loads(json.dumps(document(runs(), {"commit": "abc1234"}), allow_nan=False))
    assert doc["commit"] == "abc1234"
    assert [(s["jobs"], s["workers"]) for s in doc["sizes"]] == [(10, 1), (40, 1), (20, 4)]
    peer_big = doc["sizes"][1]["operators"][1]["measures"][RUNNING_P95]
    assert peer_big == {"value": None, "shown": "> 300 s", "not_reached_within": 300.0}
    # every client's API requests by verb and resource, in each window: what the cluster's time went on
    assert doc["sizes"][0]["operators"][0]["requests"] == {
        "to_running": {"POST pods": 20.0, "GET mpijobs": 30.0},
        "told_to_cleaned_up": {"DELETE pods": 10.0},
    }
    assert doc["sizes"][2]["operators"][1]["requests"] == {"to_running": {}, "told_to_cleaned_up": {}}
    lines = {(ln.panel, ln.label): ln.points for ln in plot_lines(doc)}
    assert lines[("latency p95 (s)", "Kubeflow tuned, create -> Running, 1 worker/job")] == [
        (10, 4.0, False),
        (40, 300.0, True),
    ]
    assert lines[("operator CPU per job (ms)", "mpi.operator, to Running, 1 worker/job")] == [
        (10, 50.0, False),
        (40, 50.0, False),
    ]
    assert lines[("peak RSS incl. children (MiB)", "mpi.operator, peak RSS, 4 workers/job")] == [(20, 220.0, False)]
    # the peer that failed at 20 x 4 has no points there
    assert ("peak RSS incl. children (MiB)", "Kubeflow tuned, peak RSS, 4 workers/job") not in lines


def test_a_cpu_profile_is_summed_by_sampled_process_and_by_function_whichever_line_ran() -> None:
    """py-spy's collapsed stacks (--subprocesses): the processes first, from the recorded one down to the sampled
    one; a function counts once per stack on the stack, and as running when it is the leaf."""
    from hack.experiments.bench.cpuprofile import summarise

    op = 'process 10:"python -m mpijob_operator --namespace x"'
    ansible = 'process 11:"python3.11 /venv/bin/ansible -i hosts -m mpi.operator.mpijob_reconcile -a {}"'
    mod = 'process 12:"python /tmp/ansible_mpijob_reconcile_payload.zip/AnsiballZ_mpijob_reconcile.py"'
    collapsed = "\n".join(
        [
            f"{op};{ansible};_wait_on_pending_results (strategy/__init__.py:796) 2",
            f"{op};main (__main__.py:10);loop (controller.py:5) 6",
            f"{op};{mod};handle (reconcile.py:3);loads (json/__init__.py:346);decode (decoder.py:337) 3",
            f"{op};{mod};handle (reconcile.py:4);handle (reconcile.py:9) 1",
            "not a stack line",
        ]
    )
    s = summarise(collapsed)
    assert s.samples == 12
    assert s.by_process == {"operator": 0.5, "module": 0.333, "ansible": 0.167}
    assert dict(s.inclusive)["handle (reconcile.py)"] == 0.333  # recursion: once per stack
    assert dict(s.own) == {
        "loop (controller.py)": 0.5,
        "decode (decoder.py)": 0.25,
        "handle (reconcile.py)": 0.083,
        "_wait_on_pending_results (__init__.py)": 0.167,
    }
    assert summarise("").samples == 0


def peers_first():
    """The small size again, the peer first and slower to Running."""
    return Run(
        Size(10, 1),
        300,
        [
            result("mpi.operator", 10, [2.0] * 10, [1.0] * 10, 0.5, 200),
            result("Kubeflow tuned", 10, [3.0] * 10, [1.0] * 10, 0.25, 100),
        ],
        order=PEERS_FIRST,
    )


def test_both_orders_each_ratio_with_its_spread():
    assert parse_orders("both") == (OURS_FIRST, PEERS_FIRST) and parse_orders("peers-first") == (PEERS_FIRST,)
    with pytest.raises(ValueError, match="BENCH_SCALE_ORDERS"):
        parse_orders("random")
    first = runs()[0]
    second = peers_first()
    spread = rows(spread_table([first, second, runs()[2]]))  # a size whose peer failed has no ratio to spread
    assert spread[f"10 x 1: {RUNNING_P95}"] == ["2.00", "1.50", "1.33"]
    assert spread[f"10 x 1: {RSS}"] == ["0.50", "0.50", "1.00"]
    assert not [label for label in spread if label.startswith("20 x 4")]
    assert rows(table([second]))[f"10 x 1 (peers first): {RUNNING_P95}"] == ["2.0 s", "3.0 s", "1.50"]


def test_the_trees_pss_is_a_row_when_profiled():
    ours = result("mpi.operator", 10, [2.0] * 10, [1.0] * 10, 0.5, 200)
    ours.rss_at_peak = [{"pid": 1, "pss_kib": 10 * 1024}, {"pid": 2, "pss_kib": 5 * 1024}]
    peer = result("Kubeflow tuned", 10, [4.0] * 10, [1.0] * 10, 0.25, 100)
    peer.rss_at_peak = [{"pid": 3, "pss_kib": 30 * 1024}]
    assert rows(table([Run(Size(10, 1), 300, [ours, peer])]))[f"10 x 1 (ours first): {PSS}"] == [
        "15 MiB",
        "30 MiB",
        "2.00",
    ]


def test_a_saved_document_gives_the_same_tables_and_parts_merge_into_one_curve():
    """A curve longer than one sitting: runs of other sizes or orders, each saved as a document, read back into the
    same tables (a timeout still "> N s", a failed peer still its note) and merged into one document."""
    first = runs()
    second = peers_first()
    a = json.loads(json.dumps(document(first, {"commit": "aaa1111", "cores": 2, "kwok_nodes": 21})))
    b = json.loads(json.dumps(document([second], {"commit": "bbb2222", "cores": 2, "kwok_nodes": 101})))
    assert table(saved_runs(a)) == table(first)
    doc = merge([b, a])
    assert [(s["jobs"], s["workers"], s["order"], s["part"]) for s in doc["sizes"]] == [
        (10, 1, OURS_FIRST, 2),
        (10, 1, PEERS_FIRST, 1),
        (40, 1, OURS_FIRST, 2),
        (20, 4, OURS_FIRST, 2),
    ]
    assert doc["commit"] == "bbb2222+aaa1111" and doc["cores"] == 2
    assert [p["kwok_nodes"] for p in doc["parts"]] == [101, 21]
    merged = saved_runs(doc)
    assert rows(spread_table(merged))[f"10 x 1: {RUNNING_P95}"] == ["2.00", "1.50", "1.33"]
    assert rows(table(merged))[f"40 x 1 (ours first): {RUNNING_P95}"] == ["5.0 s", "> 300 s", "> 60.0"]
    assert len(plot_lines(doc)) == len(plot_lines(merge([a, b])))
    with pytest.raises(ValueError, match=r"10 x 1 .ours first. is in document 1 and in document 2"):
        merge([a, a])
    with pytest.raises(ValueError, match="at least two"):
        merge([a])
    alone = json.loads(json.dumps(document([Run(Size(80, 1), 300, [first[0].results[0]])], {"commit": "c"})))
    with pytest.raises(ValueError, match=r"document 2 measured mpi.operator at 80 x 1, document 1 mpi.operator, Kub"):
        merge([a, alone])
