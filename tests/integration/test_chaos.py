"""`make chaos`'s first scenario, small enough for every run of the suite: 100 MPIJobs x 2 workers created while the
operator is SIGKILLed 5 times and the API server is killed and restarted once (its state kept). Nothing may be lost:
every job Running, then Succeeded when told, exactly its children, its phases only forward, one Event per
transition (hack/experiments/chaos/; docs/dev/chaos.md has the full-size run)."""

from __future__ import annotations

import pathlib

import pytest
from kubernetes import client

from hack.experiments.chaos import scenarios


@pytest.mark.serial  # it restarts the API server under every other test
@pytest.mark.slow
def test_operator_kills_and_an_api_server_restart_lose_nothing(
    api_client: client.ApiClient, kubeconfig: str, local_cluster: bool, tmp_path: pathlib.Path
) -> None:
    if not local_cluster:
        pytest.skip("restarts the API server: only on the local cluster (hack/worlds/cluster/restart.sh)")
    row = scenarios.kills_at_scale(
        api_client,
        kubeconfig,
        tmp_path,
        jobs=100,
        workers=2,
        operator_kills=5,
        apiserver_restarts=1,
        etcd_restarts=0,
        window=20,
        timeout=300,
        seed=7,
    )
    assert len(row.faults) == 6, row.faults
    assert row.ok, "\n".join(row.findings[:40])
    assert row.settle_s is not None and row.finish_s is not None
