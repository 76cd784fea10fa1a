"""Real ansible-runner runs of the operator's BatchRunner, no cluster: results, failures, artifact rotation."""

import os

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import job_key
from mpijob_operator.runner import BatchRunner

A, B = job_key("ns", "a"), job_key("ns", "b")


def test_real_runs_return_results_and_keep_disk_bounded(tmp_path):
    # ansible.builtin.ping stands in for the reconcile module: same runner path, no cluster needed
    runner = BatchRunner(
        str(tmp_path),
        slot=0,
        module="ansible.builtin.ping",
        module_args={"data": "pong"},
        rotate_artifacts=2,
        timeout=60,
    )
    for _ in range(4):
        ran = runner.run([A])
        assert ran.status == "successful", ran
        assert ran.jobs[A].error == "the module did not report this job"
    artifacts = os.listdir(os.path.join(runner.private_data_dir, "artifacts"))
    assert len(artifacts) <= 2


def test_a_failing_module_is_reported_not_raised(tmp_path):
    runner = BatchRunner(str(tmp_path), slot=1, module="ansible.builtin.fail", module_args={"msg": "boom"}, timeout=60)
    ran = runner.run([A, B])
    assert ran.status == "failed"
    assert ran.jobs[A].error == "boom" and ran.jobs[A].retry


def test_a_runner_that_cannot_run_is_one_bounded_status(tmp_path, monkeypatch):
    # Fault injection: ansible-runner raising (a full disk, a broken install). The status is the metric's label, so it
    # stays the one value "error"; the exception's text goes to the jobs (and the log), never into a label.
    from ansible_runner import Runner

    def broken(self):
        raise OSError("No space left on device")

    monkeypatch.setattr(Runner, "run", broken)
    runner = BatchRunner(str(tmp_path), slot=2, module="ansible.builtin.ping", timeout=60)
    ran = runner.run([A])
    assert ran.status == "error"
    assert "No space left on device" in ran.jobs[A].error and ran.jobs[A].retry
