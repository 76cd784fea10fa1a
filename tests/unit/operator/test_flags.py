"""Go's flag spellings (Kubeflow's `-namespace team-a`) and GNU's (`--namespace team-a`) parse the same."""

import dataclasses

import pytest

from mpijob_operator import config


@pytest.fixture
def kc(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBEFLOW_NAMESPACE", raising=False)
    path = tmp_path / "kc"
    path.write_text("{}")
    return str(path)


def parsed(argv):
    cfg = config.parse(argv)
    return {k: v for k, v in dataclasses.asdict(cfg).items() if k not in ("identity", "work_dir", "temporary_work_dir")}


@pytest.mark.parametrize(
    "spelling",
    [
        ["-namespace", "x", "-gang-scheduling", "volcano", "-max-batch", "7", "-monitoring-port", "0"],
        ["--namespace", "x", "--gang-scheduling", "volcano", "--max-batch", "7", "--monitoring-port", "0"],
        ["-namespace=x", "-gang-scheduling=volcano", "-max-batch=7", "-monitoring-port=0"],
        ["--namespace=x", "--gang-scheduling=volcano", "--max-batch=7", "--monitoring-port=0"],
        ["-namespace", "x", "--gang-scheduling=volcano", "-max-batch=7", "--monitoring-port", "0"],
    ],
)
def test_one_and_two_dashes_parse_the_same(kc, spelling):
    got = parsed(["-kubeconfig", kc, *spelling])
    assert got == parsed(
        [
            "--kubeconfig",
            kc,
            "--namespace",
            "x",
            "--gang-scheduling",
            "volcano",
            "--max-batch",
            "7",
            "--monitoring-port",
            "0",
        ]
    )
    assert (got["namespace"], got["gang_scheduling"], got["max_batch"], got["monitoring_port"]) == (
        "x",
        "volcano",
        7,
        0,
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], True),
        (["-leader-elect"], True),
        (["--leader-elect"], True),
        (["-leader-elect=false"], False),
        (["--leader-elect=false"], False),
        (["-leader-elect=true"], True),
        (["--no-leader-elect"], False),
        (["-no-leader-elect"], False),
    ],
)
def test_boolean_flags_take_go_values(kc, argv, expected):
    assert config.parse(["--kubeconfig", kc, *argv]).leader_elect is expected


def test_every_flag_has_both_spellings():
    for action in config.parser()._actions:
        long = [o for o in action.option_strings if o.startswith("--")]
        for option in long:
            assert option[1:] in action.option_strings, f"{option} has no one-dash spelling"


def test_no_abbreviations_and_bad_values_name_the_flag(kc, capsys):
    with pytest.raises(SystemExit):
        config.parse(["--kubeconfig", kc, "-names", "x"])
    assert "unrecognized arguments: -names" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        config.parse(["--kubeconfig", kc, "-leader-elect=maybe"])
    assert "not a boolean" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        config.parse(["--kubeconfig", kc, "-health-port=70000"])
    assert "--health-port must be 0..65535" in capsys.readouterr().err


def test_health_port_defaults_to_the_monitoring_port(kc):
    assert config.parse(["--kubeconfig", kc]).health_port == 8080
    assert config.parse(["--kubeconfig", kc, "-monitoring-port=9090"]).health_port == 9090
    cfg = config.parse(["--kubeconfig", kc, "-monitoring-port=0", "-health-port=8081"])
    assert (cfg.monitoring_port, cfg.health_port) == (0, 8081)


def test_help_in_go_spelling(capsys):
    with pytest.raises(SystemExit) as exit_:
        config.parse(["-help"])
    assert exit_.value.code == 0 and "-namespace NAMESPACE, --namespace NAMESPACE" in capsys.readouterr().out


def test_apis_are_the_mpijob_api_groups_reconciled(kc, capsys):
    assert config.parse(["--kubeconfig", kc]).apis == ("kubeflow.org",)
    chosen = config.parse(["--kubeconfig", kc, "-apis=kubeflow.org, batch.tensorstack.dev,batch.test.bdap.com"])
    assert chosen.apis == ("kubeflow.org", "batch.tensorstack.dev", "batch.test.bdap.com")
    for bad, why in (("example.com", "not served: example.com"), (",", "empty")):
        with pytest.raises(SystemExit):
            config.parse(["--kubeconfig", kc, "--apis", bad])
        err = capsys.readouterr().err
        assert "--apis" in err and why in err and "batch.tensorstack.dev" in err


def test_kubectl_delivery_image_is_given_to_the_module(kc):
    from mpijob_operator.runner import BatchRunner

    cfg = config.parse(["--kubeconfig", kc, "--kubectl-delivery-image=localhost/kubectl:1"])
    assert cfg.kubectl_delivery_image == "localhost/kubectl:1"
    assert config.parse(["--kubeconfig", kc]).kubectl_delivery_image == ""
    runner = BatchRunner(cfg.work_dir, slot=0, kubectl_delivery_image=cfg.kubectl_delivery_image)
    assert runner.base_args["kubectl_delivery_image"] == "localhost/kubectl:1"
    assert "kubectl_delivery_image" not in BatchRunner(cfg.work_dir, slot=1).base_args


def test_leader_election_timings(kc, capsys):
    cfg = config.parse(["--kubeconfig", kc])
    assert (cfg.leader_elect_lease_duration, cfg.leader_elect_renew_deadline, cfg.leader_elect_retry_period) == (
        15.0,
        5.0,
        2.0,
    )
    cfg = config.parse(
        [
            "--kubeconfig",
            kc,
            "--leader-elect-lease-duration=60",
            "-leader-elect-renew-deadline=40",
            "--leader-elect-retry-period",
            "10",
        ]
    )
    assert (cfg.leader_elect_lease_duration, cfg.leader_elect_renew_deadline, cfg.leader_elect_retry_period) == (
        60.0,
        40.0,
        10.0,
    )
    with pytest.raises(SystemExit):
        config.parse(["--kubeconfig", kc, "--leader-elect-lease-duration=5", "--leader-elect-renew-deadline=10"])
    assert "--leader-elect-lease-duration > --leader-elect-renew-deadline" in capsys.readouterr().err


def test_launch_gate_image_is_given_to_the_module(kc):
    from mpijob_operator.runner import BatchRunner

    cfg = config.parse(["--kubeconfig", kc, "--launch-gate-image=registry.example.com/mpi-operator:1"])
    assert config.reconcile_args(cfg)["launch_gate_image"] == "registry.example.com/mpi-operator:1"
    runner = BatchRunner(cfg.work_dir, slot=0, module_args=config.reconcile_args(cfg))
    assert runner.base_args["launch_gate_image"] == "registry.example.com/mpi-operator:1"
    assert config.parse(["--kubeconfig", kc]).launch_gate_image == ""  # out of a cluster: no gate unless asked


def test_record_sizes_are_quantities_and_a_bad_one_is_refused_naming_the_flag(kc, capsys):
    cfg = config.parse(["--kubeconfig", kc, "--record-lines=20", "--record-pod-bytes=4Ki", "--record-total-bytes=100k"])
    assert config.reconcile_args(cfg)["record_pod_bytes"] == "4Ki"
    for flag, value, why in (
        ("--record-pod-bytes", "8KB", "must be a quantity"),
        ("--record-pod-bytes", "0.5", "whole number of bytes"),
        ("--record-total-bytes", "1Mi", "to 900Ki"),
        ("--record-total-bytes", "10Ki", "from 16Ki plus --record-pod-bytes"),
        ("--record-lines", "-1", "from 0 to 10000"),
    ):
        with pytest.raises(SystemExit):
            config.parse(["--kubeconfig", kc, f"{flag}={value}"])
        err = capsys.readouterr().err
        assert f"{flag}:" in err and why in err, err


def test_accelerators_extend_nvidia_gpu_and_a_bad_name_is_refused_naming_the_flag(kc, capsys):
    cfg = config.parse(["--kubeconfig", kc, "--accelerators=amd.com/gpu, habana.ai/gaudi"])
    assert config.reconcile_args(cfg)["accelerators"] == ["amd.com/gpu", "habana.ai/gaudi"]
    assert config.parse(["--kubeconfig", kc]).accelerators == ()
    with pytest.raises(SystemExit):
        config.parse(["--kubeconfig", kc, "--accelerators=gpu"])
    assert "--accelerators: 'gpu' is not an extended resource name" in capsys.readouterr().err
