"""The record of a job's pods against the API server: a job whose workers and launcher fail on kwok, with
cleanPodPolicy All; once every pod is gone, its ConfigMap <job>-record (owned by the job) and mpijob_info still say
how each pod ended."""

from __future__ import annotations

import json

import pytest

from tests.integration._fixtures.reconcile import _core, _on_kwok, load
from tests.support.ansible import ansible_env, run_module
from tests.support.mpijob import condition, create_mpijob, event_reasons

pytestmark = pytest.mark.integration


def failing(name: str) -> dict:
    """Two workers that exit 137 after 1 s, a launcher that exits 3 after 4 s; no retry; clean-up All."""
    body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
    body["metadata"]["name"] = name
    body["spec"]["runPolicy"] = {"cleanPodPolicy": "All", "backoffLimit": 0}
    replicas = body["spec"]["mpiReplicaSpecs"]
    for role, code, after in (("Worker", "137", "1s"), ("Launcher", "3", "4s")):
        replicas[role]["template"].setdefault("metadata", {})["annotations"] = {
            "kwok.mpi.operator/outcome": "fail",
            "kwok.mpi.operator/exit-code": code,
            "kwok.mpi.operator/outcome-after": after,
        }
    return body


def test_a_failed_jobs_record_outlives_its_pods(loop, api_client, namespace, kubeconfig) -> None:
    create_mpijob(api_client, namespace, failing("broken"))
    core, _ = _core(api_client)

    def failed_and_pods_gone(job, _run) -> bool:
        live = [p for p in core.list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp]
        return bool(job and condition(job, "Failed") and not live)

    job = loop(namespace, "broken", failed_and_pods_gone, timeout=120)
    assert job["status"]["record"]["configMap"] == "broken-record"
    cm = core.read_namespaced_config_map("broken-record", namespace)
    assert [r.uid for r in cm.metadata.owner_references] == [job["metadata"]["uid"]]
    summary = json.loads(cm.data["record.json"])
    ends = sorted((p["role"], p["name"].rsplit("-", 1)[0], p["exitCode"], p["reason"]) for p in summary["pods"])
    assert ends == [("launcher", "broken-launcher", 3, "Error")] + [("worker", "broken-worker", 137, "Error")] * 2
    assert all(p.get("node", "").startswith("kwok") for p in summary["pods"]), summary["pods"]
    # kwok's simulated kubelet serves no logs: the record says so instead
    assert all("log unavailable" in p["logNote"] for p in summary["pods"] if "log" not in p), summary["pods"]
    # the job's own Warning events: its failure always (written in the pass that records it), its workers' failure
    # when a pass saw them fail before the launcher did (one pass may see both: then the Failed condition says all)
    wanted = {"BackOff", condition(job, "Failed")["reason"]}
    if (condition(job, "Running") or {}).get("reason") == "MPIJobWorkerFailed":
        wanted.add("MPIJobWorkerFailed")
    assert {e["reason"] for e in summary["events"]} >= wanted, summary["events"]
    assert "MPIJobRecorded" in event_reasons(api_client, namespace, "broken")
    assert sum(len(k) + len(v) for k, v in cm.data.items()) < 64 * 1024

    info = run_module(
        "mpi.operator.mpijob_info",
        {"name": "broken", "namespace": namespace, "kubeconfig": kubeconfig, "launcher_log": "tail"},
        ansible_env(kubeconfig),
    )
    (entry,) = info["jobs"]
    assert entry["launcher_log_note"] == "no launcher pod (yet, or any more)"
    record = entry["record"]
    assert record["config_map"] == "broken-record" and len(record["pods"]) == 3
    assert record["lines"][0].startswith("ConfigMap broken-record (job failed; cleanPodPolicy=All at ")
    assert any(
        line.startswith("launcher broken-launcher-") and line.endswith(": Error, exit code 3")
        for line in record["lines"]
    )
    # a later pass keeps it as it is
    before = cm.metadata.resource_version
    loop(namespace, "broken", lambda j, run: not run.job("broken")["actions"], timeout=30)
    assert core.read_namespaced_config_map("broken-record", namespace).metadata.resource_version == before
