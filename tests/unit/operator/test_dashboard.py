"""The Grafana dashboard shipped in roles/operator/files/: every query names a metric the operator really exports
(read from the operator's own registry, mpijob_operator.metrics.Metrics) and only labels those metrics or the scrape
target carry; every panel has a query and a description; the dashboard covers what docs/operations.md promises."""
from __future__ import annotations

import json
import pathlib
import re

import pytest
from prometheus_client.metrics import MetricWrapperBase

from mpijob_operator.metrics import Metrics

ROOT = pathlib.Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "roles/operator/files/grafana-dashboard.json"

# Labels Prometheus adds to every sample of a Kubernetes scrape target (ServiceMonitor or kubernetes_sd).
TARGET_LABELS = {"namespace", "pod", "service", "endpoint", "container", "instance", "job"}
# The suffixes prometheus_client exposes per metric type.
SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("", "_sum", "_count", "_created"), "info": ("_info",)}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
                "offset", "inf", "nan"}


def exported() -> tuple[set[str], set[str]]:
    """(sample names, label names) the operator's registry exposes, labelled metrics included before first use."""
    metrics = Metrics()
    names: set[str] = set()
    labels: set[str] = {"le", "quantile"}
    for family in metrics.registry.collect():
        names.update(family.name + s for s in SUFFIXES[family.type])
        for sample in family.samples:
            names.add(sample.name)
            labels.update(sample.labels)
    for collector in vars(metrics).values():
        if isinstance(collector, MetricWrapperBase):
            labels.update(collector._labelnames)  # labelled metrics have no samples until first used
    return names, labels


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


def parse(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) an expression uses; Grafana's $variables and string literals stripped."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\$\{?\w+\}?", "1", text)
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    labels: set[str] = set()
    for group in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", text):
        labels.update(w.strip() for w in group.split(",") if w.strip())
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    for matchers in re.findall(r"\{([^}]*)\}", text):
        labels.update(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers))
    text = re.sub(r"\{[^}]*\}", " ", text)
    # label_values(metric, label): the second argument is a label.
    for metric_arg, label_arg in re.findall(r"label_values\(\s*(\w+)\s*,\s*(\w+)\s*\)", text):
        labels.add(label_arg)
        text = text.replace(f"label_values({metric_arg}, {label_arg})", f" {metric_arg} ")
    words = re.finditer(r"(?<![\w.])[a-zA-Z_:][\w:]*", text)
    names = {m[0] for m in words if m[0].lower() not in PROMQL_WORDS and not text[m.end():].lstrip().startswith("(")}
    return names, labels


def test_the_parser_finds_metrics_and_labels_and_ignores_functions() -> None:
    names, labels = parse('histogram_quantile(0.95, sum by (le) (rate(foo_bucket{namespace=~"$namespace",'
                          'result!="ok"}[$__rate_interval]))) / on(pod) group_left bar offset 5m')
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


@pytest.mark.parametrize("metric", [
    "mpi_operator_jobs_created_total", "mpi_operator_jobs_successful_total", "mpi_operator_jobs_failed_total",
    "mpi_operator_job_info", "mpi_operator_reconcile_latency_seconds_bucket", "mpi_operator_batch_size_bucket",
    "mpi_operator_queue_depth", "mpi_operator_runner_duration_seconds_bucket", "mpi_operator_reconciles_total",
    "mpi_operator_runner_runs_total", "mpi_operator_watch_restarts_total",
])
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
