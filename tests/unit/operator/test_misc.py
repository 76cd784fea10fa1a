"""Flags, metrics helpers, logs, the client-side rate limit."""

import json
import logging

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import job_key
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.status import Transition
from mpijob_operator import config, log
from mpijob_operator.client import TokenBucket
from mpijob_operator.metrics import counted, has_launcher


def test_flags_defaults_and_errors(tmp_path, monkeypatch, capsys):
    kc = tmp_path / "kc"
    kc.write_text("{}")
    monkeypatch.delenv("KUBEFLOW_NAMESPACE", raising=False)
    cfg = config.parse(["--kubeconfig", str(kc), "--work-dir", str(tmp_path)])
    assert (cfg.namespace, cfg.threadiness, cfg.max_batch, cfg.monitoring_port) == ("", 2, 50, 8080)
    assert cfg.leader_elect and cfg.lock_namespace == "mpi-operator"
    assert config.parse(["--kubeconfig", str(kc), "--no-leader-elect"]).leader_elect is False
    monkeypatch.setenv("KUBEFLOW_NAMESPACE", "team")
    monkeypatch.setenv("POD_NAME", "op-0")
    cfg = config.parse(["--kubeconfig", str(kc)])
    assert cfg.namespace == "team" and cfg.identity.startswith("op-0_")
    with pytest.raises(SystemExit):
        config.parse(["--kubeconfig", str(kc), "--threadiness", "0"])
    assert "--threadiness must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        config.parse(["--kubeconfig", str(tmp_path / "missing")])
    assert "no such file" in capsys.readouterr().err


def test_counted_transitions_are_kubeflows_conditions_becoming_true():
    changed = [
        Transition("Created", "True", "MPIJobCreated"),
        Transition("Running", "True", "MPIJobRunning"),
        Transition("Succeeded", "False", "x"),
        Transition("Failed", "True", "ValidationError"),
    ]
    assert counted(changed) == ["Created", "Failed"]


def test_launcher_presence():
    assert has_launcher([{"action": "create", "kind": "Job", "name": "x-launcher"}], None)
    assert has_launcher([], {"replicaStatuses": {"Launcher": {"active": 1}}})
    assert not has_launcher([], {"replicaStatuses": {"Worker": {"active": 2}}})


def test_logs_carry_the_job(capsys):
    log.setup("info", "json")
    logging.getLogger("t").info("reconciled", extra=log.job_fields(job_key("team", "pi")))
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["job"] == "team/pi" and line["msg"] == "reconciled" and line["level"] == "info"
    log.setup("info", "text")
    logging.getLogger("t").warning("two words", extra=log.job_fields(job_key("team", "pi")))
    text = capsys.readouterr().err
    assert 'msg="two words"' in text and "job=team/pi" in text


def test_token_bucket_allows_a_burst_then_the_rate():
    now = [0.0]
    b = TokenBucket(qps=10, burst=3, clock=lambda: now[0])
    assert [b.reserve() for _ in range(3)] == [0, 0, 0]
    assert b.reserve() == pytest.approx(0.1)
    now[0] += 1.0
    assert b.reserve() == 0
