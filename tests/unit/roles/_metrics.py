"""What the operator exports and what a PromQL expression uses: the dashboard's and the alerts' tests both check
their queries against the operator's own registry (mpijob_operator.metrics.Metrics)."""

from __future__ import annotations

import re

from prometheus_client.metrics import MetricWrapperBase

from mpijob_operator.metrics import Metrics

# Labels Prometheus adds to every sample of a Kubernetes scrape target (ServiceMonitor or kubernetes_sd).
TARGET_LABELS = {"namespace", "pod", "service", "endpoint", "container", "instance", "job"}

# The suffixes prometheus_client exposes per metric type.
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
}

PROMQL_WORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
}


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
    names = {m[0] for m in words if m[0].lower() not in PROMQL_WORDS and not text[m.end() :].lstrip().startswith("(")}
    return names, labels
