"""The record of a job's pods on real pods: a job that fails in its program with cleanPodPolicy All. After every pod
is gone, mpijob_info and submit.yml still show the launcher's last lines and the failed worker's end, read by the
operator (in-cluster, with the install's RBAC) from the kubelet before it deleted them. And a launcher pod that the
Job controller deletes while the operator is stopped: the record still has its last lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
import yaml

from hack.lib.wait import wait_until
from tests.support.ansible import ansible_env, run_module, run_playbook_events
from tests.support.paths import ROOT

from .conftest import JOBS_NAMESPACE, MANIFESTS, kubeconfig_path

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


def operator_pid() -> int:
    """The process of the operator that watches JOBS_NAMESPACE (in its pod on the real node, or `make run`'s)."""
    found = subprocess.run(
        ["pgrep", "-f", f"mpijob_operator .*--namespace={JOBS_NAMESPACE}( |$)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert len(found) == 1, f"expected one operator process watching {JOBS_NAMESPACE}, found {found}"
    return int(found[0])


def test_a_launcher_pod_deleted_while_the_operator_was_stopped_is_still_recorded(jobs):
    """The operator stopped (SIGSTOP: as a busy one, behind by seconds) while the launcher's container fails, is
    restarted in place and the Job controller deletes the pod: when it runs again there is no pod to read a log from.
    Its store kept the pod's last state from the watch's DELETED event, whose termination message
    (FallbackToLogsOnError, set by the operator) holds the log's last lines: the record keeps them."""
    job = yaml.safe_load((MANIFESTS / "launcher-gone.yaml").read_text())
    started = time.monotonic()
    version, name = jobs.start(job)
    selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
    pid = operator_pid()
    wait_until(lambda: jobs.launcher_phase(name) == "Running", 120, "the launcher pod running", interval=0.1)
    os.kill(pid, signal.SIGSTOP)  # the launcher sleeps 2 s, then mpirun refuses root
    try:
        stopped = time.monotonic()
        wait_until(
            lambda: not jobs.core.list_namespaced_pod(jobs.namespace, label_selector=selector).items,
            60,
            "the Job controller to delete the launcher pod",
            interval=0.2,
        )
        print(f"\nthe operator was stopped for {time.monotonic() - stopped:.1f} s; the launcher pod is gone")
    finally:
        os.kill(pid, signal.SIGCONT)
    done = jobs.wait(version, name, started)
    assert done.condition("Failed"), done.job.get("status")

    def record() -> dict | None:
        current = jobs.custom.get_namespaced_custom_object("kubeflow.org", version, jobs.namespace, "mpijobs", name)
        ref = (current.get("status") or {}).get("record")
        return jobs.core.read_namespaced_config_map(ref["configMap"], jobs.namespace) if ref else None

    cm = wait_until(record, 60, "status.record")
    summary = json.loads(cm.data["record.json"])
    (launcher,) = [p for p in summary["pods"] if p["role"] == "launcher"]
    print("record.json's launcher:", json.dumps(launcher, indent=1))
    assert launcher["exitCode"] not in (0, None) and launcher["restarts"] >= 1, launcher
    assert launcher["logNote"].endswith("kept instead: the container's termination message"), launcher
    assert "--allow-run-as-root" in cm.data[launcher["log"]], cm.data[launcher["log"]]
