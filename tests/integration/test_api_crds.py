"""The CRDs of the other two MPIJob APIs on a real API server: each API's documented example is accepted with strict
field validation, the CEL rules from T9k's doc reject what it calls invalid or immutable, the printer columns show,
and preflight refuses another installer's CRD of either name, naming its owner."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration._fixtures.install import INSTALL_NAMESPACE, MANIFESTS
from tests.support.mpijob import install_crd
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
FILES = ROOT / "roles/crds/files"
BDAP, T9K = "batch.test.bdap.com", "batch.tensorstack.dev"


@pytest.fixture
def api_crds(api_client: Any) -> None:
    for group in (BDAP, T9K):
        install_crd(api_client, FILES / f"mpijobs.{group}.yaml")


def api_example(name: str, namespace: str) -> dict[str, Any]:
    obj = yaml.safe_load((MANIFESTS / name).read_text())
    obj["metadata"]["namespace"] = namespace  # the example's own namespace (sw-mpi-operator) is not ours to create
    return obj


def apply(kubectl: Kubectl, obj: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl(
        "apply",
        "--server-side",
        "--field-manager=api-crds-test",
        "--validate=strict",
        *args,
        "-f",
        "-",
        input=json.dumps(obj),
    )


@pytest.mark.parametrize("name", ["bdap-simple-train-cpu.yaml", "t9k-mpi-example.yaml"])
def test_documented_example_is_accepted_as_written(kubectl: Kubectl, api_crds: None, namespace: str, name: str) -> None:
    done = apply(kubectl, api_example(name, namespace))
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr  # strict: no unknown or duplicate field


def test_printer_columns(kubectl: Kubectl, api_crds: None, namespace: str) -> None:
    assert apply(kubectl, api_example("bdap-simple-train-cpu.yaml", namespace)).returncode == 0
    assert apply(kubectl, api_example("t9k-mpi-example.yaml", namespace)).returncode == 0
    bdap = kubectl("get", f"mpijobs.{BDAP}", "-n", namespace).stdout.splitlines()[0].split()
    t9k = kubectl("get", f"mpijobs.{T9K}", "-n", namespace).stdout.splitlines()[0].split()
    assert bdap == ["NAME", "WORKERS", "READY", "PHASE", "RESTARTS", "AGE"]
    assert t9k == ["NAME", "PHASE", "WORKERS", "RESTARTS", "AGE"]
    assert kubectl("get", f"mpijobs.{BDAP}", "-n", namespace).stdout.splitlines()[1].split()[1] == "5"


@pytest.mark.parametrize(
    ("group_file", "mutate", "message"),
    [
        (
            "t9k-mpi-example.yaml",
            lambda o: o["spec"]["worker"]["template"]["spec"]["containers"][0].update(name="main"),
            "spec.worker.template must have a container named mpi-worker",
        ),
        ("t9k-mpi-example.yaml", lambda o: o["spec"]["ssh"].update(sshdPath="sshd"), "spec.ssh.sshdPath"),
        ("bdap-simple-train-cpu.yaml", lambda o: o["spec"].update(numWorkers=0), "spec.numWorkers"),
        ("bdap-simple-train-cpu.yaml", lambda o: o["spec"].pop("workerTemplate"), "spec.workerTemplate: Required"),
        ("bdap-simple-train-cpu.yaml", lambda o: o["metadata"].update(name="x" * 55), "metadata.name is too long"),
    ],
)
def test_invalid_manifests_are_refused_naming_the_field(
    kubectl: Kubectl, api_crds: None, namespace: str, group_file: str, mutate: Callable, message: str
) -> None:
    obj = api_example(group_file, namespace)
    mutate(obj)
    done = apply(kubectl, obj, "--dry-run=server")
    assert done.returncode != 0 and message in done.stderr, done.stderr


def test_t9k_resume_specs_are_immutable(kubectl: Kubectl, api_crds: None, namespace: str) -> None:
    obj = api_example("t9k-mpi-example.yaml", namespace)
    obj["spec"]["runMode"] = {"pause": {"enabled": False, "resumeSpecs": [{"type": "worker", "command": ["a"]}]}}
    assert apply(kubectl, obj).returncode == 0
    paused = copy.deepcopy(obj)
    paused["spec"]["runMode"]["pause"]["enabled"] = True  # pausing is allowed at any time
    assert apply(kubectl, paused).returncode == 0
    paused["spec"]["runMode"]["pause"]["resumeSpecs"][0]["command"] = ["b"]
    done = apply(kubectl, paused)
    assert done.returncode != 0 and "spec.runMode.pause.resumeSpecs is immutable" in done.stderr, done.stderr


@pytest.mark.serial  # relabels the bdap CRD: every concurrent install or CRD write would see it
def test_preflight_refuses_another_installers_crd_naming_its_owner(
    playbook: Any, kubectl: Kubectl, api_crds: None, operator_crd: None, install_lock: None
) -> None:
    crd = f"mpijobs.{BDAP}"
    foreign = kubectl("label", "--overwrite", "crd", crd, "app.kubernetes.io/managed-by=sw-mpi-operator")
    assert foreign.returncode == 0, foreign.stderr
    try:
        run = playbook("install.yml", extra_vars={"mpi_operator_apis": ["kubeflow.org", BDAP]})
        assert run.returncode != 0
        assert f"The CRD {crd} already exists" in run.output and "owned by sw-mpi-operator" in run.output
        assert run.recap["changed"] == 0
    finally:
        restored = kubectl("label", "--overwrite", "crd", crd, "app.kubernetes.io/managed-by=mpi.operator")
        assert restored.returncode == 0, restored.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("installs")
def test_install_serves_the_chosen_api_and_uninstall_keeps_its_crd_and_jobs(
    playbook: Any, kubectl: Kubectl, uninstalled: None, operator_crd: None, api_crds: None, namespace: str
) -> None:
    apis = {"mpi_operator_apis": ["kubeflow.org", BDAP]}
    # The users' aggregated roles are shared by every install on the cluster (another one, e.g. the e2e suite's, may
    # serve T9k): this install must not add T9k's.
    t9k_roles_before = kubectl("get", "clusterrole", f"mpi-operator-mpijobs.{T9K}-edit").returncode == 0
    playbook("install.yml", extra_vars=apis).expect_ok()
    playbook("install.yml", extra_vars=apis).expect_unchanged()  # the loops are idempotent too
    crd = json.loads(kubectl("get", "crd", f"mpijobs.{BDAP}", "-o", "json").stdout)
    assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "mpi.operator"
    operator = f"system:serviceaccount:{INSTALL_NAMESPACE}:mpi-operator"

    def can(verb: str, resource: str, *extra: str) -> str:
        return kubectl("auth", "can-i", verb, resource, f"--as={operator}", *extra).stdout.strip()

    assert can("watch", f"mpijobs.{BDAP}") == "yes" and can("patch", f"mpijobs.{BDAP}", "--subresource=status") == "yes"
    assert can("list", f"mpijobs.{T9K}") == "no"  # not chosen: not granted
    assert kubectl("get", "clusterrole", f"mpi-operator-mpijobs.{BDAP}-edit").returncode == 0
    assert (kubectl("get", "clusterrole", f"mpi-operator-mpijobs.{T9K}-edit").returncode == 0) == t9k_roles_before
    assert apply(kubectl, api_example("bdap-simple-train-cpu.yaml", namespace)).returncode == 0

    playbook("uninstall.yml", extra_vars=apis).expect_ok()
    assert kubectl("get", "crd", f"mpijobs.{BDAP}").returncode == 0
    assert kubectl("get", f"mpijobs.{BDAP}", "simple-train-cpu", "-n", namespace).returncode == 0
