"""A job whose hostfile cannot be stored is refused before any child is built: the ConfigMap holds at most 1 MiB,
and the CRDs' int32 lets a manifest ask for two billion workers (building their pods would take the reconcile's
memory, and every job batched with it would fail with it)."""

from __future__ import annotations

import copy
import time

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import api_for, kubeflow
from tests.support.paths import ROOT

from ._helpers import manifest, plan
from ._t9k import t9k

# The batch.test.bdap.com README's example, as the API server stores it but for the uid.
BDAP_EXAMPLE = ROOT / "tests/integration/manifests/bdap-simple-train-cpu.yaml"

INT32_MAX = 2**31 - 1


def data_bytes(config_map: dict) -> int:
    """What the API server counts against the limit: every key and value of data."""
    return sum(len(k) + len(v) for k, v in config_map["data"].items())


@pytest.mark.parametrize("workers", [1, 9, 10, 11, 99, 100, 101, 1234])
@pytest.mark.parametrize(
    ("spec", "opts"),
    [
        ({}, K.Options()),
        ({"mpiImplementation": "Intel", "slotsPerWorker": 16}, K.Options(cluster_domain="cluster.local")),
        ({"runLauncherAsWorker": True, "mpiImplementation": "MPICH"}, K.Options()),
    ],
)
def test_the_computed_size_is_the_built_configmaps(workers: int, spec: dict, opts: K.Options) -> None:
    job = kubeflow.parse(manifest("pi", workers, **spec))
    every_worker = [K.worker_name(job, i) for i in range(workers)]
    assert K.config_bytes(job, opts) == data_bytes(K.config_map(job, every_worker, opts))


def test_the_kubexec_script_counts_too() -> None:
    obj = yaml.safe_load(BDAP_EXAMPLE.read_text())
    obj["metadata"]["uid"] = "uid-bdap"
    job = api_for(obj).parse(obj)
    every_worker = [K.worker_name(job, i) for i in range(job.worker_replicas)]
    assert job.launch_agent == C.LAUNCH_KUBEXEC
    assert K.config_bytes(job, K.Options()) == data_bytes(K.config_map(job, every_worker, K.Options()))


def bdap_with(workers: int) -> dict:
    obj = yaml.safe_load(BDAP_EXAMPLE.read_text())
    obj["metadata"]["uid"] = "uid-bdap"
    obj["spec"]["numWorkers"] = workers
    return obj


def t9k_with(workers: int) -> dict:
    obj = t9k()
    obj["spec"]["worker"] = {**copy.deepcopy(obj["spec"]["worker"]), "replicas": workers}
    return obj


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (manifest("pi", INT32_MAX), "spec.mpiReplicaSpecs.Worker.replicas"),
        (bdap_with(INT32_MAX), "spec.numWorkers"),
        (t9k_with(INT32_MAX), "spec.worker.replicas"),
    ],
)
def test_two_billion_workers_fail_at_once_naming_the_apis_field(obj: dict, field: str) -> None:
    start = time.process_time()
    p = plan(obj)
    assert time.process_time() - start < 1  # nothing built
    assert [a.kind for a in p.actions if a.action == "create"] == []
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == C.REASON_VALIDATION
    assert f"{field}: {INT32_MAX} workers do not fit: their hostfile and discover_hosts.sh take" in failed["message"]
    assert "which holds at most 1048576" in failed["message"]


def test_the_largest_job_that_fits_runs_and_one_more_worker_does_not() -> None:
    opts = K.Options()
    fits = max(
        n
        for n in range(14_000, 16_000, 1)
        if K.config_bytes(kubeflow.parse(manifest("pi", n)), opts) <= C.CONFIG_MAP_MAX_BYTES
    )
    assert {a.kind for a in plan(manifest("pi", fits)).actions if a.action == "create"} >= {"ConfigMap", "Pod"}
    over = plan(manifest("pi", fits + 1))
    assert not [a for a in over.actions if a.action == "create"] and over.error
