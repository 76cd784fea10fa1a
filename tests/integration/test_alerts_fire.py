"""A real Prometheus (Debian's, hack/build/deb-unpack.sh) scrapes the running operator and evaluates the shipped
alerting rules (roles/operator/files/prometheus-rules.yml) on what it scrapes: healthy, nothing fires; a job the
operator cannot accept (an injected reconcile error) makes MPIOperatorReconcileErrors pending, and its copy without
`for` fires; a job that cannot be scheduled shows in the waiting gauge; the operator stopped makes MPIOperatorDown
pending. The `for` durations themselves are promtool's to test (tests/runner/test_alerts.py)."""

from __future__ import annotations

import json
import pathlib
import re
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from hack.lib.operator import OperatorProcess
from hack.lib.wait import wait_until
from tests.debian import deb_program
from tests.support.mpijob import create_mpijob, new_mpijob
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration]

RULES = ROOT / "roles/operator/files/prometheus-rules.yml"
NOW = "MPIOperatorReconcileErrorsNow"  # the copy of MPIOperatorReconcileErrors without `for`


class Prometheus:
    def __init__(self, url: str):
        self.url = url

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=5) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def alerts(self) -> dict[str, dict[str, Any]]:
        """Active alerts (pending or firing) by name."""
        return {a["labels"]["alertname"]: a for a in self.get("/api/v1/alerts")["alerts"]}

    def target_up(self) -> bool:
        return any(t["health"] == "up" for t in self.get("/api/v1/targets")["activeTargets"])

    def query(self, expr: str) -> list[dict[str, Any]]:
        return self.get("/api/v1/query", query=expr)["result"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def prometheus(running_operator: OperatorProcess, namespace: str, tmp_path: pathlib.Path) -> Iterator[Prometheus]:
    binary = deb_program("prometheus", "prometheus", "promtool")
    rules = yaml.safe_load(RULES.read_text())
    now = next(dict(r) for g in rules["groups"] for r in g["rules"] if r["alert"] == "MPIOperatorReconcileErrors")
    now.update(alert=NOW, **{"for": "0s"})
    (tmp_path / "now.yml").write_text(yaml.safe_dump({"groups": [{"name": "now", "rules": [now]}]}))
    port = _free_port()
    # The job name the rules expect (a ServiceMonitor's), the namespace label a ServiceMonitor's target carries.
    (tmp_path / "prometheus.yml").write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES), str(tmp_path / "now.yml")],
                "scrape_configs": [
                    {
                        "job_name": "mpi-operator-metrics",
                        "static_configs": [
                            {"targets": [f"127.0.0.1:{running_operator.port}"], "labels": {"namespace": namespace}}
                        ],
                    }
                ],
            }
        )
    )
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = Prometheus(f"http://127.0.0.1:{port}")
    try:

        def ready() -> bool:
            try:
                return server.target_up()
            except OSError:
                assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
                return False

        wait_until(ready, 60, "Prometheus up, scraping the operator", interval=0.5)
        yield server
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


def test_a_real_prometheus_fires_the_operators_alerts_on_injected_faults(
    prometheus: Prometheus, running_operator: OperatorProcess, api_client: Any, namespace: str
) -> None:
    wait_until(lambda: prometheus.query("mpi_operator_is_leader == 1"), 30, "the leader's metric scraped", interval=0.5)
    # The first evaluation may precede the first scrape (MPIOperatorDown pending for a moment): once the operator's
    # series are in, a healthy operator raises no alert.
    wait_until(lambda: prometheus.alerts() == {}, 30, "no alert on a healthy operator", interval=0.5)

    # A reconcile error: a job this collection's CRD lets by and the operator refuses (ValidationError).
    bad = new_mpijob("bad", runPolicy={"schedulingPolicy": {"minAvailable": -1}})
    create_mpijob(api_client, namespace, bad)
    # A job whose pods no node takes: Created, never Running.
    stuck = new_mpijob("stuck", workers=1)
    for role in ("Launcher", "Worker"):
        stuck["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]["nodeSelector"] = {"no-such-node": "true"}
    create_mpijob(api_client, namespace, stuck)

    def reconcile_errors() -> dict[str, dict[str, Any]] | None:
        alerts = prometheus.alerts()
        # Both rules read the same counters, but each group is evaluated on its own tick: wait for both.
        shipped = alerts.get("MPIOperatorReconcileErrors", {}).get("state")
        return alerts if alerts.get(NOW, {}).get("state") == "firing" and shipped else None

    alerts = wait_until(reconcile_errors, 90, f"{NOW} firing and the shipped rule pending", interval=1)
    assert alerts[NOW]["labels"] == {"alertname": NOW, "namespace": namespace, "severity": "warning"}
    # The share of failed reconciles, from the real counters (the stuck job's reconciles are `ok`).
    assert re.fullmatch(
        rf"MPI Operator in {namespace}: [0-9.]+% of reconciles fail", alerts[NOW]["annotations"]["summary"]
    )
    assert float(alerts[NOW]["value"]) > 0.1
    assert alerts["MPIOperatorReconcileErrors"]["state"] == "pending"  # the shipped rule, waiting out its 10m

    waiting = wait_until(
        lambda: prometheus.query('mpi_operator_job_waiting_since_seconds{mpijob="stuck"}'),
        90,
        "the stuck job in the waiting gauge",
        interval=1,
    )
    assert waiting[0]["metric"]["namespace"] == namespace
    assert not prometheus.query('mpi_operator_job_waiting_since_seconds{mpijob="bad"}')  # failed, not waiting

    # The operator gone: its target is down, MPIOperatorDown pending.
    running_operator.stop()
    down = wait_until(lambda: prometheus.alerts().get("MPIOperatorDown"), 30, "MPIOperatorDown", interval=0.5)
    assert down["state"] == "pending" and down["labels"]["severity"] == "critical"
