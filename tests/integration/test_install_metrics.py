"""The metrics Service and the optional ServiceMonitor and PrometheusRule of playbooks/install.yml: the Service whenever
the operator serves /metrics, the ServiceMonitor and the PrometheusRule only where the Prometheus Operator's CRDs exist
(minimal copies of those CRDs are installed as fixtures and removed after), and uninstall removing them all."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from tests.integration._fixtures.install import INSTALL_NAMESPACE, MANIFESTS
from tests.support.ansible import PlaybookRun
from tests.support.paths import ROOT

Playbook = Callable[..., PlaybookRun]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
SERVICEMONITOR_CRD = "servicemonitors.monitoring.coreos.com"
PROMETHEUSRULE_CRD = "prometheusrules.monitoring.coreos.com"
# The Prometheus Operator's CRDs the role looks for, and the fixture copy of each.
OPERATOR_CRDS = {SERVICEMONITOR_CRD: "servicemonitor-crd.yaml", PROMETHEUSRULE_CRD: "prometheusrule-crd.yaml"}
RULES = ROOT / "roles/operator/files/prometheus-rules.yml"
# Other test sessions on the shared cluster rewrite the MPIJob CRD with their own copy (a client-side replace); a
# server-side apply of ours would then conflict. Taking the CRD over keeps these tests about the metrics objects.
CRD = {"mpi_operator_adopt_crd": True}
FIXTURE_LABEL = "mpi.operator/test-fixture"


def get_json(kubectl: Kubectl, *args: str) -> dict[str, Any] | None:
    proc = kubectl("get", *args, "-o", "json")
    if proc.returncode != 0:
        assert "NotFound" in proc.stderr or "the server doesn't have a resource type" in proc.stderr, proc.stderr
        return None
    return json.loads(proc.stdout)


def crd_owner(kubectl: Kubectl, name: str = SERVICEMONITOR_CRD) -> str | None:
    """None without the CRD, "fixture" for this module's copy, else "cluster" (a real one)."""
    crd = get_json(kubectl, "crd", name)
    if crd is None:
        return None
    return "fixture" if crd["metadata"].get("labels", {}).get(FIXTURE_LABEL) == "true" else "cluster"


def delete_fixture_crd(kubectl: Kubectl, name: str = SERVICEMONITOR_CRD) -> None:
    kubectl("delete", "crd", name, "--ignore-not-found", "--wait=true")
    # Discovery may serve the deleted kind for a moment: the role's CRD lookup is what the tests rely on, not that.
    end = time.monotonic() + 30
    while crd_owner(kubectl, name) is not None and time.monotonic() < end:
        time.sleep(0.5)


@pytest.fixture
def no_servicemonitor_crd(kubectl: Kubectl, uninstalled: None) -> None:
    """The cluster without the Prometheus Operator's CRDs (a leftover fixture copy is removed; a real one skips)."""
    for name in OPERATOR_CRDS:
        owner = crd_owner(kubectl, name)
        if owner == "cluster":
            pytest.skip(f"this cluster has the Prometheus Operator's {name}; not removing it")
        if owner == "fixture":
            delete_fixture_crd(kubectl, name)


@pytest.fixture
def servicemonitor_crd(kubectl: Kubectl, uninstalled: None) -> Iterator[None]:
    """The ServiceMonitor and PrometheusRule CRDs for one test: the cluster's own if it has them, else the fixture
    copies, removed after."""
    created = [name for name in OPERATOR_CRDS if crd_owner(kubectl, name) is None]
    for name in created:
        applied = kubectl("apply", "-f", str(MANIFESTS / OPERATOR_CRDS[name]))
        assert applied.returncode == 0, applied.stderr
        waited = kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
        assert waited.returncode == 0, waited.stderr
    yield
    for name in created:
        # The uninstall of `uninstalled` runs after this: it must cope with the kind gone, as on a real cluster.
        delete_fixture_crd(kubectl, name)


def service_monitor(kubectl: Kubectl) -> dict[str, Any] | None:
    return get_json(kubectl, "servicemonitors.monitoring.coreos.com", "mpi-operator", "-n", INSTALL_NAMESPACE)


def prometheus_rule(kubectl: Kubectl) -> dict[str, Any] | None:
    return get_json(kubectl, "prometheusrules.monitoring.coreos.com", "mpi-operator", "-n", INSTALL_NAMESPACE)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("installs")
def test_metrics_service_without_the_servicemonitor_crd(
    playbook: Playbook, kubectl: Kubectl, operator_crd: None, no_servicemonitor_crd: None
) -> None:
    run = playbook("install.yml", extra_vars=CRD).expect_ok()
    assert "No ServiceMonitor: the CRD servicemonitors.monitoring.coreos.com does not exist" in run.output
    assert "No PrometheusRule: the CRD prometheusrules.monitoring.coreos.com does not exist" in run.output

    service = get_json(kubectl, "service", "mpi-operator-metrics", "-n", INSTALL_NAMESPACE)
    assert service is not None
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 8080, "protocol": "TCP", "targetPort": "monitoring"}
    ]
    # The Service selects the operator pod, on the container port the Deployment names "monitoring".
    pods = json.loads(
        kubectl(
            "get",
            "pods",
            "-n",
            INSTALL_NAMESPACE,
            "-l",
            ",".join(f"{k}={v}" for k, v in service["spec"]["selector"].items()),
            "-o",
            "json",
        ).stdout
    )["items"]
    assert [p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith("mpi-operator-")]
    deployment = get_json(kubectl, "deployment", "mpi-operator", "-n", INSTALL_NAMESPACE)
    assert deployment is not None
    ports = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert {"name": "monitoring", "containerPort": 8080, "protocol": "TCP"} in ports

    # Turned off: the Service goes (also when the monitoring port is 0, see the role's tasks/metrics.yml). Given as
    # `-e mpi_operator_metrics_service=false` gives it, a string: "false" is not a true value.
    playbook("install.yml", extra_vars={**CRD, "mpi_operator_metrics_service": "false"}).expect_ok()
    assert get_json(kubectl, "service", "mpi-operator-metrics", "-n", INSTALL_NAMESPACE) is None
    playbook(
        "install.yml",
        extra_vars={
            **CRD,
            "mpi_operator_metrics_service_type": "NodePort",
            "mpi_operator_metrics_service_annotations": {"prometheus.io/scrape": "true"},
            "mpi_operator_monitoring_port": 9090,
        },
    ).expect_ok()
    service = get_json(kubectl, "service", "mpi-operator-metrics", "-n", INSTALL_NAMESPACE)
    assert service is not None and service["spec"]["type"] == "NodePort"
    assert service["spec"]["ports"][0]["port"] == 9090 and service["spec"]["ports"][0]["targetPort"] == "monitoring"
    assert service["metadata"]["annotations"]["prometheus.io/scrape"] == "true"

    # Uninstall copes with the ServiceMonitor and PrometheusRule kinds missing.
    playbook("uninstall.yml", extra_vars=CRD).expect_ok()
    assert get_json(kubectl, "service", "mpi-operator-metrics", "-n", INSTALL_NAMESPACE) is None


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("installs")
def test_servicemonitor_and_prometheusrule_are_created_when_their_crds_exist_and_removed_on_uninstall(
    playbook: Playbook, kubectl: Kubectl, operator_crd: None, servicemonitor_crd: None
) -> None:
    labels = {"release": "kube-prometheus-stack"}
    install_vars = {
        **CRD,
        "mpi_operator_service_monitor_labels": labels,
        "mpi_operator_service_monitor_interval": "15s",
        "mpi_operator_prometheus_rule_labels": labels,
    }
    run = playbook("install.yml", extra_vars=install_vars).expect_ok()
    assert "No ServiceMonitor" not in run.output and "No PrometheusRule" not in run.output
    # The PrometheusRule carries the rules file users of a plain Prometheus load, unchanged.
    rule = prometheus_rule(kubectl)
    assert rule is not None
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert rule["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "mpi.operator"
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
    monitor = service_monitor(kubectl)
    assert monitor is not None
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "mpi.operator"
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s"}
    ]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [INSTALL_NAMESPACE]}
    # It selects the metrics Service by that Service's labels.
    service = get_json(kubectl, "service", "mpi-operator-metrics", "-n", INSTALL_NAMESPACE)
    assert service is not None
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()

    playbook("install.yml", extra_vars=install_vars).expect_unchanged()
    # Turned off: ours are removed, the Service stays.
    playbook(
        "install.yml",
        extra_vars={**install_vars, "mpi_operator_service_monitor": False, "mpi_operator_prometheus_rule": False},
    ).expect_ok()
    assert service_monitor(kubectl) is None and prometheus_rule(kubectl) is None
    assert get_json(kubectl, "service", "mpi-operator-metrics", "-n", INSTALL_NAMESPACE) is not None
    playbook("install.yml", extra_vars=install_vars).expect_ok()
    assert prometheus_rule(kubectl) is not None

    playbook("uninstall.yml", extra_vars=CRD).expect_ok()
    assert service_monitor(kubectl) is None and prometheus_rule(kubectl) is None
    assert get_json(kubectl, "service", "mpi-operator-metrics", "-n", INSTALL_NAMESPACE) is None


@pytest.mark.parametrize(
    ("name", "kind"), [(SERVICEMONITOR_CRD, "ServiceMonitor"), (PROMETHEUSRULE_CRD, "PrometheusRule")]
)
def test_the_fixture_crds_are_the_prometheus_operators_kinds(name: str, kind: str) -> None:
    """The fixture CRDs must name the kinds exactly as the Prometheus Operator does, or the test proves nothing."""
    crd = yaml.safe_load((MANIFESTS / OPERATOR_CRDS[name]).read_text())
    assert crd["metadata"]["name"] == name
    assert crd["spec"]["group"] == "monitoring.coreos.com" and crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["kind"] == kind
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]
