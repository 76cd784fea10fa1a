"""roles/operator/templates/deployment.yaml.j2 rendered by Ansible's own templar with the role's defaults and vars,
one test per value a Helm chart user expects."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from tests.support.paths import ROOT

ROLE = ROOT / "roles/operator"


def render_all(template: str = "deployment.yaml.j2", **overrides: Any) -> list[dict]:
    """The objects one of the role's templates renders, with its defaults and vars and `overrides`."""
    variables: dict[str, Any] = {"mpi_operator_apis": ["kubeflow.org"]}
    variables.update(yaml.safe_load((ROLE / "defaults/main.yml").read_text()))
    role_vars = yaml.safe_load((ROLE / "vars/main.yml").read_text())
    source = (ROLE / "templates" / template).read_text()
    try:  # ansible-core 2.19+ renders only trusted templates (the role's vars are templates too, as Ansible reads them)
        from ansible.template import trust_as_template

        source = trust_as_template(source)
        role_vars = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in role_vars.items()}
    except ImportError:
        pass
    variables.update(role_vars)
    variables.update(overrides)
    documents = list(yaml.safe_load_all(Templar(loader=DataLoader(), variables=variables).template(source)))
    assert None not in documents, f"{template} renders an empty document with {overrides}"  # the role reads them all
    return documents


def render(**overrides: Any) -> dict:
    (deployment,) = render_all("deployment.yaml.j2", **overrides)
    return deployment


def pod_spec(d: dict) -> dict:
    return d["spec"]["template"]["spec"]


def container(d: dict) -> dict:
    return pod_spec(d)["containers"][0]


def test_defaults_are_restricted_pss_and_probe_the_health_port():
    d = render()
    c = container(d)
    assert c["image"] == "localhost/mpi-operator:0.1.0" and c["imagePullPolicy"] == "IfNotPresent"
    assert pod_spec(d)["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"monitoring": 8080, "health": 8081}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["port"] == "health"
    assert "--monitoring-port=8080" in c["args"] and "--health-port=8081" in c["args"]


def test_monitoring_port_0_drops_the_port_and_keeps_the_probes():
    c = container(render(mpi_operator_monitoring_port=0))
    assert [p["name"] for p in c["ports"]] == ["health"]
    assert "--monitoring-port=0" in c["args"]
    assert all(p["containerPort"] > 0 for p in c["ports"])


def test_health_port():
    c = container(render(mpi_operator_health_port=9443))
    assert {"name": "health", "containerPort": 9443, "protocol": "TCP"} in c["ports"]
    assert "--health-port=9443" in c["args"]


def test_image_repository_tag_digest_pull_policy_and_secrets():
    d = render(
        mpi_operator_image_repository="registry.example.com/ml/mpi-operator",
        mpi_operator_image_tag="1.2.3",
        mpi_operator_image_pull_policy="Always",
        mpi_operator_image_pull_secrets=["regcred", "other"],
    )
    assert container(d)["image"] == "registry.example.com/ml/mpi-operator:1.2.3"
    assert container(d)["imagePullPolicy"] == "Always"
    assert pod_spec(d)["imagePullSecrets"] == [{"name": "regcred"}, {"name": "other"}]
    digest = "sha256:" + "a" * 64
    assert container(render(mpi_operator_image_digest=digest))["image"] == f"localhost/mpi-operator@{digest}"


def test_replicas():
    assert render(mpi_operator_replicas=2)["spec"]["replicas"] == 2


def test_resources():
    res = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
    assert container(render(mpi_operator_resources=res))["resources"] == res


def test_scheduling_values():
    tol = [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}]
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            }
        }
    }
    spec = pod_spec(
        render(
            mpi_operator_node_selector={"role": "ops"},
            mpi_operator_tolerations=tol,
            mpi_operator_affinity=aff,
            mpi_operator_priority_class_name="system-cluster-critical",
        )
    )
    assert spec["nodeSelector"] == {"role": "ops"} and spec["tolerations"] == tol and spec["affinity"] == aff
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert not {"nodeSelector", "tolerations", "affinity", "priorityClassName"} & set(pod_spec(render()))


def test_deployment_and_pod_labels_and_annotations_keep_the_roles_own():
    d = render(
        mpi_operator_deployment_labels={"team": "ops", "app.kubernetes.io/name": "mine"},
        mpi_operator_deployment_annotations={"owner": "ops"},
        mpi_operator_pod_labels={"team": "ops"},
        mpi_operator_pod_annotations={"prometheus.io/scrape": "true", "sidecar.istio.io/inject": "true"},
    )
    assert d["metadata"]["labels"]["team"] == "ops"
    assert d["metadata"]["labels"]["app.kubernetes.io/name"] == "mpi-operator"  # removal and the selector need it
    assert d["metadata"]["annotations"] == {"owner": "ops"}
    template = d["spec"]["template"]["metadata"]
    assert template["labels"]["team"] == "ops"
    assert d["spec"]["selector"]["matchLabels"].items() <= template["labels"].items()
    assert template["annotations"] == {"prometheus.io/scrape": "true", "sidecar.istio.io/inject": "true"}
    assert "annotations" not in render()["metadata"]


def test_pod_security_context_merges_and_null_lets_the_platform_assign_the_uid():
    spec = pod_spec(render(mpi_operator_pod_security_context={"runAsUser": None, "runAsGroup": None}))
    assert spec["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    spec = pod_spec(render(mpi_operator_pod_security_context={"runAsUser": 2000, "fsGroup": 2000}))
    assert spec["securityContext"]["runAsUser"] == 2000 and spec["securityContext"]["fsGroup"] == 2000
    assert spec["securityContext"]["runAsNonRoot"] is True


def test_container_security_context_merges():
    c = container(
        render(
            mpi_operator_container_security_context={
                "readOnlyRootFilesystem": None,
                "seLinuxOptions": {"level": "s0:c1"},
            }
        )
    )
    assert "readOnlyRootFilesystem" not in c["securityContext"]
    assert c["securityContext"]["seLinuxOptions"] == {"level": "s0:c1"}
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize(
    ("variable", "value", "flag"),
    [
        ("mpi_operator_log_level", "debug", "--log-level=debug"),
        ("mpi_operator_log_format", "json", "--log-format=json"),
        ("mpi_operator_max_batch", 10, "--max-batch=10"),
        ("mpi_operator_runner_timeout", 600, "--runner-timeout=600"),
        ("mpi_operator_watch_namespace", "team-a", "--namespace=team-a"),
        ("mpi_operator_gang_scheduling", "volcano", "--gang-scheduling=volcano"),
        ("mpi_operator_threadiness", 4, "--threadiness=4"),
        ("mpi_operator_cluster_domain", "cluster.local", "--cluster-domain=cluster.local"),
        ("mpi_operator_apis", ["kubeflow.org"], "--apis=kubeflow.org"),
        ("mpi_operator_record_lines", 20, "--record-lines=20"),
        ("mpi_operator_accelerators", [], "--accelerators="),
        ("mpi_operator_accelerators", ["amd.com/gpu", "habana.ai/gaudi"], "--accelerators=amd.com/gpu,habana.ai/gaudi"),
        ("mpi_operator_record_pod_bytes", "4Ki", "--record-pod-bytes=4Ki"),
        ("mpi_operator_record_total_bytes", "128Ki", "--record-total-bytes=128Ki"),
        ("mpi_operator_apis", ["kubeflow.org", "batch.tensorstack.dev"], "--apis=kubeflow.org,batch.tensorstack.dev"),
    ],
)
def test_operator_flags(variable, value, flag):
    assert flag in container(render(**{variable: value}))["args"]


def test_rendered_flags_parse(tmp_path, monkeypatch):
    """Every flag the role renders is one the operator knows (its parser is the judge)."""
    from mpijob_operator import config

    kc = tmp_path / "kc"
    kc.write_text("{}")
    args = container(render(mpi_operator_extra_args=["-watch-timeout=120"]))["args"]
    cfg = config.parse([*args, "--kubeconfig", str(kc), "--work-dir", str(tmp_path)])
    assert (cfg.max_batch, cfg.runner_timeout, cfg.health_port, cfg.watch_timeout) == (50, 300, 8081, 120)
    assert cfg.apis == ("kubeflow.org",)


def test_the_launch_gate_runs_the_operator_image_unless_told_otherwise():
    def flag(**variables) -> str:
        args = container(render(**variables))["args"]
        (found,) = [a for a in args if a.startswith("--launch-gate-image=")]
        return found.partition("=")[2]

    assert flag() == "localhost/mpi-operator:0.1.0"
    assert flag(mpi_operator_image_repository="r.example.com/op", mpi_operator_image_digest="sha256:" + "a" * 64) == (
        "r.example.com/op@sha256:" + "a" * 64
    )
    assert flag(mpi_operator_launch_gate_image="r.example.com/gate:1") == "r.example.com/gate:1"
    assert flag(mpi_operator_launch_gate=False) == ""


def test_extra_args_come_last_and_win():
    args = container(render(mpi_operator_extra_args=["--threadiness=8", "-watch-timeout=120"]))["args"]
    assert args[-2:] == ["--threadiness=8", "-watch-timeout=120"]


def test_extra_env():
    env = [
        {"name": "HTTPS_PROXY", "value": "http://proxy:3128"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    ]
    got = container(render(mpi_operator_extra_env=env))["env"]
    assert [e["name"] for e in got] == ["POD_NAME", "POD_NAMESPACE", "HTTPS_PROXY", "TOKEN"] and got[2:] == env


def test_startup_timeout_sets_the_startup_probe_budget():
    probe = container(render(mpi_operator_startup_timeout=600))["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] == 600
    live = container(render())["livenessProbe"]
    # a starved process answering slowly is not dead: about 90 s of failures before a restart
    assert live["timeoutSeconds"] >= 5 and live["periodSeconds"] * live["failureThreshold"] >= 60


def test_probe_timings_merge_and_keep_their_endpoints():
    c = container(
        render(
            mpi_operator_liveness_probe={
                "periodSeconds": 30,
                "failureThreshold": 10,
                "httpGet": {"path": "/elsewhere"},
            },
            mpi_operator_readiness_probe={"initialDelaySeconds": 3},
            mpi_operator_startup_probe={"periodSeconds": 10},
        )
    )
    assert c["livenessProbe"] == {
        "periodSeconds": 30,
        "timeoutSeconds": 10,
        "failureThreshold": 10,
        "httpGet": {"path": "/healthz", "port": "health"},
    }
    assert c["readinessProbe"]["initialDelaySeconds"] == 3 and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["startupProbe"]["periodSeconds"] == 10


def test_env_from_topology_spread_and_extra_volumes():
    env_from = [{"configMapRef": {"name": "proxy"}}, {"secretRef": {"name": "tokens", "optional": True}}]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "mpi-operator"}},
        }
    ]
    volumes = [{"name": "ca", "configMap": {"name": "corp-ca"}}]
    mounts = [{"name": "ca", "mountPath": "/etc/ssl/corp", "readOnly": True}]
    d = render(
        mpi_operator_extra_env_from=env_from,
        mpi_operator_topology_spread_constraints=spread,
        mpi_operator_extra_volumes=volumes,
        mpi_operator_extra_volume_mounts=mounts,
    )
    assert container(d)["envFrom"] == env_from and pod_spec(d)["topologySpreadConstraints"] == spread
    assert pod_spec(d)["volumes"][-1] == volumes[0] and container(d)["volumeMounts"][-1] == mounts[0]
    assert [v["name"] for v in pod_spec(d)["volumes"]][:2] == ["tmp", "runner"]
    plain = render()
    assert "envFrom" not in container(plain) and "topologySpreadConstraints" not in pod_spec(plain)


def test_service_account_name_annotations_and_create():
    irsa = {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/mpi-operator"}
    named = {"mpi_operator_service_account_name": "mpi-ops", "mpi_operator_service_account_annotations": irsa}
    assert pod_spec(render(**named))["serviceAccountName"] == "mpi-ops"
    objects = {o["kind"]: o for o in render_all("operator-namespace.yaml.j2", **named)}
    assert objects["ServiceAccount"]["metadata"]["name"] == "mpi-ops"
    assert objects["ServiceAccount"]["metadata"]["annotations"] == irsa
    assert objects["RoleBinding"]["subjects"][0]["name"] == "mpi-ops"
    rbac = render_all("rbac.yaml.j2", **named)
    assert {s["name"] for o in rbac for s in o.get("subjects", [])} == {"mpi-ops"}
    kinds = [o["kind"] for o in render_all("operator-namespace.yaml.j2", mpi_operator_service_account_create=False)]
    assert "ServiceAccount" not in kinds and "RoleBinding" in kinds
    assert (
        "annotations"
        not in {o["kind"]: o for o in render_all("operator-namespace.yaml.j2")}["ServiceAccount"]["metadata"]
    )


def test_pod_disruption_budget_selects_the_operators_pods():
    assert "PodDisruptionBudget" not in [o["kind"] for o in render_all("operator-namespace.yaml.j2")]
    objects = {
        o["kind"]: o
        for o in render_all("operator-namespace.yaml.j2", mpi_operator_pod_disruption_budget={"minAvailable": 1})
    }
    pdb = objects["PodDisruptionBudget"]
    assert pdb["apiVersion"] == "policy/v1" and pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == render()["spec"]["selector"]["matchLabels"]
    assert pdb["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "mpi.operator"  # pruned and removed by it


def test_leader_election_timings_are_flags():
    args = container(
        render(
            mpi_operator_leader_elect_lease_duration=60,
            mpi_operator_leader_elect_renew_deadline=40,
            mpi_operator_leader_elect_retry_period=10,
        )
    )["args"]
    assert {
        "--leader-elect-lease-duration=60",
        "--leader-elect-renew-deadline=40",
        "--leader-elect-retry-period=10",
    } <= set(args)


def test_rbac_create_false_leaves_out_the_leader_election_role():
    kinds = [o["kind"] for o in render_all("operator-namespace.yaml.j2", mpi_operator_rbac_create=False)]
    assert kinds == ["ServiceAccount"]
    assert [o["kind"] for o in render_all("operator-namespace.yaml.j2")] == ["ServiceAccount", "Role", "RoleBinding"]
    # Every combination renders only objects (an empty document between them failed the install).
    for sa in (True, False):
        for rbac in (True, False):
            rendered = render_all(
                "operator-namespace.yaml.j2",
                mpi_operator_service_account_create=sa,
                mpi_operator_rbac_create=rbac,
                mpi_operator_pod_disruption_budget={"minAvailable": 1},
            )
            assert [o["kind"] for o in rendered] == (["ServiceAccount"] if sa else []) + (
                ["Role", "RoleBinding"] if rbac else []
            ) + ["PodDisruptionBudget"]
