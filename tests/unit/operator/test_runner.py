"""Reading the reconcile module's result, and real ansible-runner runs (artifact rotation, env)."""
import os

from mpijob_operator.runner import BatchRunner, parse_module_result, runner_env

A, B = ("ns", "a"), ("ns", "b")


def test_module_result_is_mapped_back_onto_the_batch():
    res = {"changed": True, "jobs": [
        {"namespace": "ns", "name": "a", "uid": "u1", "actions": [{"action": "create", "kind": "Pod", "name": "a-w-0"}],
         "status": {"conditions": []}, "error": None, "retry": False, "requeue_after": 30, "deleted": False},
        {"namespace": "ns", "name": "zzz"},  # not in this batch: ignored
    ]}
    out = parse_module_result([A, B], res, "successful")
    assert out[A].uid == "u1" and out[A].requeue_after == 30.0 and not out[A].retry
    assert out[A].actions[0]["kind"] == "Pod"
    assert out[B].retry and "did not report" in out[B].error
    assert set(out) == {A, B}


def test_a_failed_module_retries_every_job_with_its_message():
    out = parse_module_result([A, B], {"failed": True, "msg": "Unsupported parameters"}, "failed")
    assert all(r.retry and r.error == "Unsupported parameters" for r in out.values())


def test_a_run_without_any_result_retries_every_job():
    out = parse_module_result([A], None, "timeout")
    assert out[A].retry and "timeout" in out[A].error


def test_kubeconfig_goes_to_the_module_through_the_environment():
    env = runner_env("/tmp/kc", {"X": "1"})
    assert env["K8S_AUTH_KUBECONFIG"] == "/tmp/kc" and env["X"] == "1"
    assert env["ANSIBLE_GATHERING"] == "explicit"
    assert "K8S_AUTH_KUBECONFIG" not in runner_env(None)


def test_real_runs_return_results_and_keep_disk_bounded(tmp_path):
    # ansible.builtin.ping stands in for the reconcile module: same runner path, no cluster needed
    runner = BatchRunner(str(tmp_path), slot=0, module="ansible.builtin.ping", module_args={"data": "pong"},
                         rotate_artifacts=2, timeout=60)
    for _ in range(4):
        outcome = runner.run([A])
        assert outcome.status == "successful", outcome
        assert outcome.jobs[A].error == "the module did not report this job"
    artifacts = os.listdir(os.path.join(runner.private_data_dir, "artifacts"))
    assert len(artifacts) <= 2


def test_a_failing_module_is_reported_not_raised(tmp_path):
    runner = BatchRunner(str(tmp_path), slot=1, module="ansible.builtin.fail", module_args={"msg": "boom"},
                         timeout=60)
    outcome = runner.run([A, B])
    assert outcome.status == "failed"
    assert outcome.jobs[A].error == "boom" and outcome.jobs[A].retry
