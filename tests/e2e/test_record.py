"""The record of a job's pods on real pods: a job that fails in its program with cleanPodPolicy All. After every pod
is gone, mpijob_info and submit.yml still show the launcher's last lines and the failed worker's end, read by the
operator (in-cluster, with the install's RBAC) from the kubelet before it deleted them."""

from __future__ import annotations

import time

import pytest

from tests.support.ansible import ansible_env, run_module, run_playbook_events
from tests.support.paths import ROOT

from .conftest import kubeconfig_path

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e")]


def test_a_job_that_failed_in_its_program_says_why_after_its_pods_are_gone(jobs, tmp_path):
    done = jobs.run("fails-in-program.yaml")
    assert done.condition("Failed"), done.job.get("status")
    selector = f"training.kubeflow.org/job-name={done.name}"
    end = time.monotonic() + 60
    while jobs.core.list_namespaced_pod(jobs.namespace, label_selector=selector).items:
        assert time.monotonic() < end, "the clean-up did not delete the pods"
        time.sleep(0.5)
    kubeconfig = kubeconfig_path()
    info = run_module(
        "mpi.operator.mpijob_info",
        {"name": done.name, "namespace": jobs.namespace, "kubeconfig": kubeconfig, "launcher_log": "tail"},
        ansible_env(kubeconfig),
    )
    (entry,) = info["jobs"]
    record = entry["record"]
    print("\nmpijob_info's record (every pod gone):\n" + "\n".join(record["lines"]))
    uids = [p["uid"] for p in record["pods"]]
    assert len(set(uids)) == len(uids), ("a pod recorded twice", record["occasions"], record["pods"])
    launcher = [p for p in record["pods"] if p["role"] == "launcher"][-1]
    assert launcher["phase"] == "Failed" and launcher["exitCode"] not in (0, None), launcher
    assert any("rank 1: cannot open /data/input" in line for line in launcher["log"]), launcher
    workers = [p for p in record["pods"] if p["role"] == "worker"]
    assert [(w["exitCode"], w["reason"]) for w in workers] == [(7, "Error")], workers
    assert any("its rank failed, stopping" in line for line in workers[0]["log"]), workers

    # submit.yml on the same job (unchanged, already finished): it prints the record and fails naming the launcher
    manifest = {
        "apiVersion": done.job["apiVersion"],
        "kind": "MPIJob",
        "metadata": {"name": done.name, "namespace": jobs.namespace},
        "spec": done.job["spec"],  # as created (its images pinned): applying it changes nothing
    }
    run = run_playbook_events(
        ROOT / "playbooks/submit.yml",
        kubeconfig,
        tmp_path / "submit",
        {"mpijob_definition": manifest, "mpijob_poll_interval": 1},
        "",
    )
    kept = run["What the operator kept of the pods"]["msg"]
    print("\nsubmit.yml:\n" + "\n".join(kept) + "\n" + run["Fail because the MPIJob failed"]["msg"])
    assert run.rc != 0 and kept == record["lines"]
    assert "(gone, kept in ConfigMap " in run["Fail because the MPIJob failed"]["msg"]
