"""A Kueue-admitted MPIJob runs real `mpirun` on the real node: the operator in-cluster (tests/e2e's install), the
job waiting in a LocalQueue until Kueue admits it, then every rank on a worker."""

from __future__ import annotations

import time

import yaml
from kubernetes import client

from tests.e2e.conftest import JOBS_NAMESPACE, MANIFESTS, Jobs
from tests.kueue.conftest import QUEUE_LABEL, Queues


def test_a_kueue_admitted_job_runs_mpirun_with_ranks_on_every_worker(
    kueue: None, api: client.ApiClient, jobs: Jobs
) -> None:
    queues = Queues(api, JOBS_NAMESPACE)
    try:
        local = queues.local_queue(queues.cluster_queue(queues.flavor(), "1"), name="lq-realnode")
        job = yaml.safe_load((MANIFESTS / "pi-openmpi4.yaml").read_text())
        job["metadata"]["labels"] = {QUEUE_LABEL: local}
        for replica in job["spec"]["mpiReplicaSpecs"].values():
            replica["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
        version, name = jobs.start(job)
        done = jobs.wait(version, name, started=time.monotonic())
        assert done.condition("Succeeded"), (done.job.get("status"), done.launcher_log)
        assert "pi is approximately 3.14159265" in done.launcher_log, done.launcher_log
        assert sorted(done.rank_hosts()) == sorted(done.worker_hosts() * 2), done.launcher_log
        workload = queues.workload_of(name)
        admitted = [c for c in (workload or {}).get("status", {}).get("conditions", []) if c["type"] == "Admitted"]
        assert admitted and admitted[0]["status"] == "True", workload
        # Kueue's workload counted the job's requests: a launcher and two workers of 100m.
        usage = workload["status"]["admission"]["podSetAssignments"]
        assert sorted((p["name"], p["count"]) for p in usage) == [("launcher", 1), ("worker", 2)], usage
    finally:
        jobs.delete_all()
        queues.delete_all()
