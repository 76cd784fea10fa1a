"""The Grafana dashboard shipped in roles/operator/files/: every query names a metric the operator really exports
(read from the operator's own registry, mpijob_operator.metrics.Metrics) and only labels those metrics or the scrape
target carry; every panel has a query and a description; the dashboard covers what docs/operations.md promises."""

from __future__ import annotations

import json

import pytest

from tests.support.paths import ROOT

from ._metrics import TARGET_LABELS, exported, parse

DASHBOARD = ROOT / "roles/operator/files/grafana-dashboard.json"


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            out.append((f"panel {panel['title']!r} {target['refId']}", target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            out.append((f"variable {var['name']}", query))
    return out


def test_the_parser_finds_metrics_and_labels_and_ignores_functions() -> None:
    names, labels = parse(
        'histogram_quantile(0.95, sum by (le) (rate(foo_bucket{namespace=~"$namespace",'
        'result!="ok"}[$__rate_interval]))) / on(pod) group_left bar offset 5m'
    )
    assert names == {"foo_bucket", "bar"}
    assert labels == {"le", "namespace", "result", "pod"}
    assert parse("label_values(mpi_operator_is_leader, namespace)") == ({"mpi_operator_is_leader"}, {"namespace"})


def test_every_query_names_a_metric_the_operator_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    names, metric_labels = exported()
    allowed_labels = metric_labels | TARGET_LABELS | {f"exported_{label}" for label in metric_labels & TARGET_LABELS}
    found = queries(dashboard)
    assert len(found) >= 10
    for where, expr in found:
        used, labels = parse(expr)
        assert used, f"{where}: no metric in {expr!r}"
        unknown = used - names
        assert not unknown, f"{where}: {sorted(unknown)} not exported by mpijob_operator.metrics ({expr!r})"
        assert labels <= allowed_labels, f"{where}: unknown labels {sorted(labels - allowed_labels)} in {expr!r}"


def test_a_renamed_metric_would_be_caught() -> None:
    names, _ = exported()
    used, _ = parse("sum(rate(mpi_operator_jobs_created[5m]))")  # the family name without prometheus_client's _total
    assert used - names == {"mpi_operator_jobs_created"}


@pytest.mark.parametrize(
    "metric",
    [
        "mpi_operator_jobs_created_total",
        "mpi_operator_jobs_successful_total",
        "mpi_operator_jobs_failed_total",
        "mpi_operator_job_info",
        "mpi_operator_reconcile_latency_seconds_bucket",
        "mpi_operator_batch_size_bucket",
        "mpi_operator_queue_depth",
        "mpi_operator_runner_duration_seconds_bucket",
        "mpi_operator_reconciles_total",
        "mpi_operator_runner_runs_total",
        "mpi_operator_watch_restarts_total",
    ],
)
def test_the_dashboard_shows(metric: str) -> None:
    """Jobs by state, reconcile latency, batch size, queue depth, runner duration and errors, as documented."""
    dashboard = json.loads(DASHBOARD.read_text())
    assert any(metric in parse(expr)[0] for _, expr in queries(dashboard))


def test_every_panel_has_a_title_description_and_unique_id() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["title"]
        if panel["type"] != "row":
            assert panel.get("description") and panel.get("targets"), panel["title"]
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
