"""Reading the reconcile module's result and the runner's environment (tests/runner/test_batch_runner.py runs real
ansible-runner processes)."""

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import job_key
from mpijob_operator.runner import parse_module_result, runner_env

A, B = job_key("ns", "a"), job_key("ns", "b")


def test_module_result_is_mapped_back_onto_the_batch():
    res = {
        "changed": True,
        "jobs": [
            {
                "namespace": "ns",
                "name": "a",
                "uid": "u1",
                "actions": [{"action": "create", "kind": "Pod", "name": "a-w-0"}],
                "status": {"conditions": []},
                "error": None,
                "retry": False,
                "requeue_after": 30,
                "deleted": False,
            },
            {"namespace": "ns", "name": "zzz"},  # not in this batch: ignored
        ],
    }
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


def test_runs_keep_two_malloc_arenas_unless_the_operator_environment_says(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert runner_env(None)["MALLOC_ARENA_MAX"] == "2"
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")  # inherited by the run as it is
    assert "MALLOC_ARENA_MAX" not in runner_env(None)


def test_runs_poll_their_worker_every_20ms_unless_the_user_names_a_config(tmp_path, monkeypatch):
    # ansible's default (1 ms) costs 3 % of a core for as long as a module runs: an idle warm run waits for minutes
    import configparser

    from mpijob_operator.runner import BatchRunner

    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    cfg = configparser.ConfigParser()
    cfg.read(BatchRunner(str(tmp_path), slot=0).envvars["ANSIBLE_CONFIG"])
    assert cfg.getfloat("defaults", "internal_poll_interval") == 0.02
    monkeypatch.setenv("ANSIBLE_CONFIG", "/etc/ansible/mine.cfg")
    assert "ANSIBLE_CONFIG" not in BatchRunner(str(tmp_path), slot=1).envvars  # theirs, through the environment
