"""The alerting rules shipped in roles/operator/files/prometheus-rules.yml: every expression names metrics the
operator really exports (or Prometheus' own `up`) and only labels those metrics or the scrape target carry; every
alert has a severity, a summary and a description, and the issue's faults each have one. promtool's own checks and
unit tests of the rules are in tests/runner/test_alerts.py."""

from __future__ import annotations

import pytest
import yaml

from tests.support.paths import ROOT

from ._metrics import TARGET_LABELS, exported, parse

RULES = ROOT / "roles/operator/files/prometheus-rules.yml"


def alerts() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def test_every_expression_names_metrics_the_operator_exports() -> None:
    names, metric_labels = exported()
    allowed_labels = metric_labels | TARGET_LABELS
    for rule in alerts():
        used, labels = parse(rule["expr"])
        assert used, f"{rule['alert']}: no metric in {rule['expr']!r}"
        unknown = used - names - {"up"}
        assert not unknown, f"{rule['alert']}: {sorted(unknown)} not exported by mpijob_operator.metrics"
        assert labels <= allowed_labels, f"{rule['alert']}: unknown labels {sorted(labels - allowed_labels)}"


def test_every_alert_says_how_bad_and_what_to_do() -> None:
    for rule in alerts():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and len(rule["annotations"]["description"]) > 80, rule["alert"]


@pytest.mark.parametrize(
    ("fault", "alert"),
    [
        ("operator down", "MPIOperatorDown"),
        ("not leading anywhere", "MPIOperatorNotLeading"),
        ("reconcile errors rising", "MPIOperatorReconcileErrors"),
        ("queue growing", "MPIOperatorBacklog"),
        ("runs failing", "MPIOperatorRunsFailing"),
        ("jobs stuck in Created or Pending", "MPIJobWaitingTooLong"),
    ],
)
def test_each_fault_has_its_alert(fault: str, alert: str) -> None:
    assert alert in {rule["alert"] for rule in alerts()}, fault
