"""The operator's alerting rules (roles/operator/files/prometheus-rules.yml) checked and unit-tested by Prometheus'
own tool: `promtool check rules` on the file and `promtool test rules` on tests/alerts/ (each alert fires on its
fault, after its `for`, with its labels and annotations, and stays silent on a healthy operator). promtool is Debian's
(hack/build/deb-unpack.sh unpacks the package into the cache)."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from tests.debian import deb_program
from tests.support.paths import ROOT

RULES = ROOT / "roles/operator/files/prometheus-rules.yml"
TESTS = ROOT / "tests/alerts/prometheus-rules.test.yml"


@pytest.fixture(scope="module")
def promtool() -> str:
    return deb_program("prometheus", "promtool", "prometheus")


def test_promtool_accepts_the_rules_file(promtool: str) -> None:
    proc = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 6 rules found" in proc.stdout


def test_promtool_unit_tests_of_every_alert_pass(promtool: str) -> None:
    proc = subprocess.run(
        [promtool, "test", "rules", TESTS.name], cwd=TESTS.parent, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_a_broken_rule_fails_its_unit_test(promtool: str, tmp_path: pathlib.Path) -> None:
    """The unit tests can fail: the same tests against rules whose reconcile-error threshold is off by ten."""
    broken = tmp_path / "rules.yml"
    broken.write_text(RULES.read_text().replace("> 0.1\n", "> 1\n", 1))
    assert broken.read_text() != RULES.read_text()
    tests = tmp_path / "tests.yml"
    tests.write_text(TESTS.read_text().replace("../../roles/operator/files/prometheus-rules.yml", str(broken)))
    proc = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "alertname: MPIOperatorReconcileErrors" in proc.stdout + proc.stderr, proc.stdout
