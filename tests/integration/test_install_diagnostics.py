"""install.yml when the operator pod cannot start (fails fast with the reason, events, log and advice), and the
operator pod's start-up and health on the real node: monitoring off, two replicas, a starved CPU.

The simulated (kwok) nodes run no containers, so the tests that need a real image, a real crash or real probes run
on the real node (`make cluster-up` brings it up where the machine allows) and are skipped without it."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from hack.lib.wait import wait_until
from tests.integration._fixtures.install import INSTALL_NAMESPACE, installs_locked
from tests.support.ansible import PlaybookRun

Playbook = Callable[..., PlaybookRun]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]

REAL_NODE = "mpi-real-node"
ON_REAL_NODE = {
    "mpi_operator_node_selector": {"mpi.operator/real-node": "true"},
    "mpi_operator_tolerations": [{"key": "mpi.operator/real-node", "operator": "Exists", "effect": "NoSchedule"}],
}
FAIL_FAST_S = 60  # from the start of the wait to the failure (preflight, CRD and RBAC take their own time before)
_ELAPSED = re.compile(r'"elapsed": ([0-9.]+)')


@pytest.fixture
def real_node(kubectl: Kubectl) -> None:
    node = kubectl("get", "node", REAL_NODE, "-o", "json")
    if node.returncode != 0:
        pytest.skip(f"no real node {REAL_NODE} (make cluster-up brings it up where the machine can run containers)")
    ready = [c for c in json.loads(node.stdout)["status"].get("conditions", []) if c["type"] == "Ready"]
    if not ready or ready[0]["status"] != "True":
        pytest.skip(f"node {REAL_NODE} is not Ready")


@pytest.fixture
def operator_image(real_node: None) -> dict[str, Any]:
    """The operator image built from this checkout and imported into the real node's containerd."""
    from tests.e2e.conftest import operator_image as build

    repository, tag = build()
    return {
        **ON_REAL_NODE,
        "mpi_operator_image_repository": repository,
        "mpi_operator_image_tag": tag,
        "mpi_operator_image_pull_policy": "Never",
    }


# Other test sessions on the shared cluster replace the CRD with their checkout's: take it back rather than fail on a
# server-side apply conflict that has nothing to do with these tests.
SHARED_CRD = {"mpi_operator_adopt_crd": True}


def install(playbook: Playbook, extra_vars: dict[str, Any]) -> PlaybookRun:
    return playbook("install.yml", extra_vars={**SHARED_CRD, **extra_vars})


def timed(playbook: Playbook, extra_vars: dict[str, Any]) -> tuple[PlaybookRun, float]:
    """The run, and how long its wait took to fail (operator_rollout's `elapsed`)."""
    start = time.monotonic()
    run = install(playbook, extra_vars)
    found = _ELAPSED.findall(run.output)
    assert found, run.output[-3000:]
    print(f"install failed after {time.monotonic() - start:.0f}s in all, {found[-1]}s after the wait began")
    return run, float(found[-1])


# The real-node operator tests install into their own operator namespace, watching only the test's namespace: their
# cluster-scoped grants are named after it ("mpi-operator:<namespace>"). Their playbook runs still take the installs
# lock (the shared roles), which an install test holds for its whole run: on another worker they waited for it most of
# their time (docs/dev/testing.md), so they run in the `installs` group.
OWN_NAMESPACE = "mpi-operator-diag"


@pytest.fixture
def own_install(
    playbook: Playbook, kubectl: Kubectl, operator_crd: None, operator_image: dict[str, Any], namespace: str
) -> Iterator[Callable[..., PlaybookRun]]:
    """install(**vars): installs the real operator image into OWN_NAMESPACE watching `namespace`; uninstalled after."""
    base = {**operator_image, "mpi_operator_namespace_name": OWN_NAMESPACE, "mpi_operator_watch_namespace": namespace}

    def locked(name: str, extra_vars: dict[str, Any]) -> PlaybookRun:
        """Not while an install test of another worker compares the shared roles before and after."""
        with installs_locked():
            return install(playbook, extra_vars) if name == "install.yml" else playbook(name, extra_vars=extra_vars)

    leftover = kubectl("get", "namespace", OWN_NAMESPACE, "-o", "name")
    if leftover.returncode == 0:  # an interrupted run's install: the playbook takes seconds, only when needed
        locked("uninstall.yml", base)
    yield lambda **extra: locked("install.yml", {**base, **extra})
    locked("uninstall.yml", base).expect_ok()


def operator_pods(kubectl: Kubectl, namespace: str = INSTALL_NAMESPACE) -> list[dict[str, Any]]:
    proc = kubectl("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/component=controller", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return [p for p in json.loads(proc.stdout)["items"] if not p["metadata"].get("deletionTimestamp")]


def restarts(pod: dict[str, Any]) -> int:
    return sum(cs.get("restartCount", 0) for cs in pod["status"].get("containerStatuses", []))


def probe_results(kubectl: Kubectl, pod: dict[str, Any], probe: str) -> dict[str, float]:
    """result -> count of the pod's `probe` ("Liveness", ...) probes, from its kubelet's prober metrics (the
    /metrics/probes endpoint, through the API server's node proxy)."""
    from prometheus_client.parser import text_string_to_metric_families

    proc = kubectl("get", "--raw", f"/api/v1/nodes/{pod['spec']['nodeName']}/proxy/metrics/probes")
    assert proc.returncode == 0, proc.stderr
    return {
        s.labels["result"]: s.value
        for family in text_string_to_metric_families(proc.stdout)
        for s in family.samples
        if s.name == "prober_probe_total"
        and s.labels.get("pod_uid") == pod["metadata"]["uid"]
        and s.labels.get("probe_type") == probe
    }


# -- fail fast ---------------------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("installs")
def test_a_simulated_node_then_unschedulable_fail_fast_naming_why(
    playbook: Playbook, uninstalled: None, operator_crd: None
) -> None:
    # On a kwok node (the test cluster's placement) without saying that is meant: the pod is reported Running and
    # would never reconcile anything, so the install fails naming the node and how to pin a real one.
    run, took = timed(playbook, {"mpi_operator_allow_simulated_nodes": False})
    assert run.returncode != 0, run.output[-3000:]
    assert "The operator did not start" in run.output and "a simulated node (kwok.x-k8s.io/node=fake" in run.output, (
        run.output[-3000:]
    )
    assert "mpi_operator_node_selector" in run.output and "examples/local/install-real-node.yml" in run.output
    assert took < FAIL_FAST_S, f"took {took:.0f}s"

    # Then a node selector no node matches (the pod on the kwok node stays, accepted again by the test's vars).
    run, took = timed(playbook, {"mpi_operator_node_selector": {"mpi.operator/no-such-node": "true"}})
    assert run.returncode != 0, run.output[-3000:]
    assert "The operator did not start" in run.output and "cannot be scheduled" in run.output, run.output[-3000:]
    assert "didn't match Pod's node affinity/selector" in run.output
    assert "FailedScheduling" in run.output  # the pod's events
    assert "mpi_operator_node_selector" in run.output  # what to do
    assert took < FAIL_FAST_S, f"took {took:.0f}s"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.xdist_group("installs")
def test_a_missing_image_fails_fast_pointing_at_the_image_docs(
    playbook: Playbook, uninstalled: None, operator_crd: None, real_node: None
) -> None:
    run, took = timed(
        playbook,
        {
            **ON_REAL_NODE,
            "mpi_operator_image_repository": "localhost/mpi-operator-missing",
            "mpi_operator_image_tag": "0.0.0",
            "mpi_operator_image_pull_policy": "IfNotPresent",
        },
    )
    assert run.returncode != 0, run.output[-3000:]
    assert "cannot get its image localhost/mpi-operator-missing:0.0.0" in run.output, run.output[-3000:]
    assert "ErrImagePull" in run.output or "ImagePullBackOff" in run.output
    assert "docs/install.md#image" in run.output
    assert took < FAIL_FAST_S, f"took {took:.0f}s"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.xdist_group("installs")
def test_a_crash_loop_fails_fast_with_the_log_tail(
    playbook: Playbook, uninstalled: None, operator_crd: None, operator_image: dict[str, Any]
) -> None:
    run, took = timed(playbook, {**operator_image, "mpi_operator_extra_args": ["--no-such-flag"]})
    assert run.returncode != 0, run.output[-3000:]
    assert "keeps exiting (exit code 2" in run.output, run.output[-3000:]
    assert "unrecognized arguments: --no-such-flag" in run.output  # the log tail of the crashed container
    assert took < FAIL_FAST_S, f"took {took:.0f}s"


# -- the operator pod on the real node ---------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.xdist_group("installs")  # on the install tests' worker: no wait for their lock
def test_monitoring_port_0_installs_and_the_pod_becomes_ready(
    kubectl: Kubectl, own_install: Callable[..., PlaybookRun]
) -> None:
    own_install(mpi_operator_monitoring_port=0).expect_ok()
    (pod,) = operator_pods(kubectl, OWN_NAMESPACE)
    assert all(c["status"] == "True" for c in pod["status"]["conditions"] if c["type"] == "Ready")
    container = pod["spec"]["containers"][0]
    assert [p["name"] for p in container["ports"]] == ["health"]
    # /metrics is really off: nothing listens on 8080 in the pod; the probes' port answers.
    ip = pod["status"]["podIP"]
    proxy = f"/api/v1/namespaces/{OWN_NAMESPACE}/pods/{pod['metadata']['name']}"
    probe = kubectl("get", "--raw", f"{proxy}:8081/proxy/healthz")
    assert probe.returncode == 0 and probe.stdout.strip() == "ok", probe.stderr
    metrics = kubectl("get", "--raw", f"{proxy}:8080/proxy/metrics")
    assert metrics.returncode != 0, f"/metrics answered on {ip}:8080 with monitoring off"
    assert restarts(pod) == 0


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.xdist_group("installs")  # on the install tests' worker: no wait for their lock
def test_two_replicas_one_leader(kubectl: Kubectl, own_install: Callable[..., PlaybookRun]) -> None:
    own_install(mpi_operator_replicas=2).expect_ok()
    pods = operator_pods(kubectl, OWN_NAMESPACE)
    assert len(pods) == 2
    names = [p["metadata"]["name"] for p in pods]

    def leaders() -> list[str]:
        """The pods the Lease names (the install waits for Ready, and a standby is Ready: leading comes after)."""
        lease = kubectl("get", "lease", "mpi-operator", "-n", OWN_NAMESPACE, "-o", "json")
        holder = (json.loads(lease.stdout)["spec"].get("holderIdentity") or "") if lease.returncode == 0 else ""
        return [name for name in names if holder.startswith(name + "_")]

    def is_leader() -> dict[str, float]:
        found = {}
        for name in names:
            out = kubectl("get", "--raw", f"/api/v1/namespaces/{OWN_NAMESPACE}/pods/{name}:8080/proxy/metrics")
            assert out.returncode == 0, out.stderr
            line = next(ln for ln in out.stdout.splitlines() if ln.startswith("mpi_operator_is_leader "))
            found[name] = float(line.split()[1])
        return found

    (leader,) = wait_until(lambda: len(found := leaders()) == 1 and found, 60, what="one pod holding the Lease")
    gauges = wait_until(lambda: (found := is_leader())[leader] == 1.0 and found, 30, what="the leader's gauge")
    assert sorted(gauges.values()) == [0.0, 1.0], gauges
    # Both are Ready: the standby waits for the lease, ready to take over.
    assert all(c["status"] == "True" for p in pods for c in p["status"]["conditions"] if c["type"] == "Ready")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.xdist_group("installs")  # on the install tests' worker: no wait for their lock
def test_a_cpu_starved_operator_becomes_ready_without_a_restart(
    kubectl: Kubectl, own_install: Callable[..., PlaybookRun]
) -> None:
    """A 10m CPU limit (the smallest CFS quota the kubelet sets): the start-up, each probe answer and each lease
    renewal crawl. The startupProbe waits for the start-up, and the liveness probe does not kill a slow process."""
    starved = {"requests": {"cpu": "10m", "memory": "128Mi"}, "limits": {"cpu": "10m", "memory": "1Gi"}}
    start = time.monotonic()
    own_install(mpi_operator_resources=starved, mpi_operator_wait_timeout=600).expect_ok()
    ready_after = time.monotonic() - start
    (pod,) = operator_pods(kubectl, OWN_NAMESPACE)
    assert pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "10m"
    # Liveness runs now, and a starved process must not be killed for being slow: wait until the kubelet has
    # probed it successfully 3 times (its own count). On a loaded machine a starved answer may miss the 10 s
    # timeout now and then; the kubelet restarts only after failureThreshold failures in a row, so fewer failures
    # than that in all are a slow process, not a dead one (and the restart count below is 0).
    probe = pod["spec"]["containers"][0]["livenessProbe"]

    def lively() -> bool:
        results = probe_results(kubectl, pod, "Liveness")
        assert set(results) <= {"successful", "failed"}, f"liveness probe results: {results}"
        assert results.get("failed", 0) < probe["failureThreshold"], f"liveness probe results: {results}"
        return results.get("successful", 0) >= 3

    wait_until(
        lively,
        3 * (probe["periodSeconds"] + probe["timeoutSeconds"]) + 30,
        interval=2,
        what="3 successful liveness probes",
    )
    (pod,) = operator_pods(kubectl, OWN_NAMESPACE)
    assert restarts(pod) == 0, json.dumps(pod["status"].get("containerStatuses"), indent=1)
    started = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    ready = next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready")
    took = (
        datetime.fromisoformat(ready.replace("Z", "+00:00")) - datetime.fromisoformat(started.replace("Z", "+00:00"))
    ).total_seconds()
    print(f"starved operator: container start to Ready {took:.0f}s; install {ready_after:.0f}s; no restart")
