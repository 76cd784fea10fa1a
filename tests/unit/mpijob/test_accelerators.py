"""Slots and accelerators (accelerators.py): a worker that requests GPUs with other slots is told so at creation
(Warning event, the first condition's message), on every API; the annotation derives the slots from the GPU count;
the install's accelerator names are checked; the GPU example of examples/ is what it says."""

from __future__ import annotations

import copy

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import accelerators as A
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow
from tests.support.paths import ROOT

from . import _t9k
from ._helpers import at, manifest, plan, settle, world_after

EXAMPLE = ROOT / "examples" / "v2beta1" / "nccl-gpus.yaml"


def gpus(obj: dict, count: object, name: str = "nvidia.com/gpu", role: str = "Worker") -> dict:
    obj = copy.deepcopy(obj)
    container = obj["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]["containers"][0]
    container.setdefault("resources", {}).setdefault("limits", {})[name] = count
    return obj


def slots_from_gpus(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("annotations", {})[C.SLOTS_FROM_ACCELERATORS_ANNOTATION] = "true"
    return obj


def test_slots_that_differ_from_the_gpus_are_said_at_creation_and_only_then() -> None:
    obj = gpus(manifest("pi", 2), 8)
    p = plan(obj, now=at(0))
    (warning,) = [a for a in p.actions if a.name == A.REASON]
    assert warning.body["type"] == "Warning"
    assert warning.body["message"] == (
        "each worker requests 8 nvidia.com/gpu but has 1 slot in the hostfile: mpirun starts 1 rank per worker. Set "
        "the slots per worker (kubeflow.org: slotsPerWorker) to the accelerator count, or the annotation "
        'mpi.operator/slots-from-accelerators: "true"'
    )
    created = S.get_condition(p.status, C.CREATED)
    assert created["message"] == "MPIJob ns/pi is created. " + warning.body["message"]
    world = world_after(settle(obj), p)
    later = plan(world.mpijob, world, now=at(30))
    assert not [a for a in later.actions if a.name == A.REASON]  # once
    assert S.get_condition(later.status, C.CREATED)["message"] == created["message"]  # and it stays


@pytest.mark.parametrize(
    ("obj", "told"),
    [
        (manifest("pi", 2), False),  # no accelerators
        (gpus(manifest("pi", 2, slotsPerWorker=8), 8), False),  # they agree
        (gpus(manifest("pi", 2, slotsPerWorker=8), "8"), False),  # a quantity string
        (gpus(manifest("pi", 2), 8, role="Launcher"), False),  # only the workers count
        (gpus(manifest("pi", 2), 4, name="amd.com/gpu"), False),  # not an accelerator this install names
        (slots_from_gpus(gpus(manifest("pi", 2), 8)), False),  # derived
        (slots_from_gpus(manifest("pi", 2)), True),  # asked to derive, nothing to derive from
    ],
)
def test_when_the_job_is_told(obj: dict, told: bool) -> None:
    assert any(a.name == A.REASON for a in plan(obj).actions) is told


def test_the_install_names_more_accelerators() -> None:
    obj = gpus(manifest("pi", 2), 4, name="amd.com/gpu")
    opts = K.Options(accelerators=A.names(["amd.com/gpu"], "--accelerators"))
    assert opts.accelerators == ("nvidia.com/gpu", "amd.com/gpu")
    assert any(a.name == A.REASON for a in plan(obj, opts=opts).actions)


@pytest.mark.parametrize(
    "bad", ["gpu", "nvidia.com/", "kubernetes.io/gpu", "example.kubernetes.io/x", "Nvidia.com/gpu"]
)
def test_an_accelerator_name_that_is_not_an_extended_resource_is_refused_naming_the_option(bad: str) -> None:
    with pytest.raises(ValueError, match=r"^--accelerators: .* is not an extended resource name"):
        A.names([bad], "--accelerators")


def test_slots_from_accelerators_sets_the_hostfile_and_the_launchers_slots() -> None:
    obj = slots_from_gpus(gpus(manifest("pi", 2), 4))
    p = plan(obj)
    config = next(a.body for a in p.actions if a.kind == "ConfigMap")
    assert config["data"]["hostfile"] == "pi-worker-0.pi.ns.svc slots=4\npi-worker-1.pi.ns.svc slots=4\n"
    launcher = next(a.body for a in p.actions if a.kind == "Job")
    env = {e["name"]: e.get("value") for e in launcher["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["OMPI_MCA_orte_set_default_slots"] == "4" and env["PRTE_MCA_prte_set_default_slots"] == "4"


def test_t9k_is_told_too_in_its_initialized_condition() -> None:
    obj = _t9k.random_walk()
    container = obj["spec"]["worker"]["template"]["spec"]["containers"][0]
    container.setdefault("resources", {})["limits"] = {"nvidia.com/gpu": 2}
    p = plan(obj)
    assert any(a.name == A.REASON for a in p.actions)
    first = p.status["conditions"][0]
    assert first["type"] == "Initialized" and "requests 2 nvidia.com/gpu" in first["message"]


def test_the_gpu_example() -> None:
    obj = yaml.safe_load(EXAMPLE.read_text())
    obj["metadata"].update(namespace="ml", uid="uid-nccl")
    job = A.with_slots(kubeflow.parse(obj), C.ACCELERATORS)
    assert A.per_worker(job, C.ACCELERATORS) == {"nvidia.com/gpu": 8} and job.slots_per_worker == 8
    assert A.notice(kubeflow.parse(obj), C.ACCELERATORS) is None
    launcher = K.launcher_job(job, K.Options())["spec"]["template"]["spec"]["containers"][0]
    command = launcher["command"]
    assert command[command.index("-np") + 1] == str(job.worker_replicas * job.slots_per_worker)  # one rank per GPU
    forwarded = {command[i + 1] for i, arg in enumerate(command) if arg == "-x"}
    assert {e["name"] for e in launcher["env"] if e["name"].startswith("NCCL_")} <= forwarded  # NCCL env reaches ranks
    worker = K.worker_pod(job, 0, K.Options())["spec"]
    (shm,) = [v for v in worker["volumes"] if v["name"] == "dshm"]
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in worker["containers"][0]["volumeMounts"]
    assert K.hostfile(job, K.Options()).count("slots=8") == 2
