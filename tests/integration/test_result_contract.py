"""The result contract end to end: the core's plan for a job, the reconcile module run through the operator's own
runner (ansible-runner, the real module, the cluster), and the loop's parse of what the module reported, agree."""

from __future__ import annotations

import pathlib
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from tests.support.mpijob import create_mpijob, get_mpijob

pytestmark = pytest.mark.integration

MANIFEST = pathlib.Path(__file__).parent / "manifests" / "openmpi-helloworld.v2beta1.yaml"

TIMES = ("startTime", "completionTime", "lastUpdateTime", "lastTransitionTime")


def _timeless(value: Any) -> Any:
    """A status with its times blanked: the core's plan here and the module's there run a few seconds apart."""
    if isinstance(value, dict):
        return {k: "T" if k in TIMES else _timeless(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_the_loop_reads_back_what_the_core_decided(
    api_client: Any, namespace: str, operator_crd: None, kubeconfig: str, tmp_path: Any
) -> None:
    from ansible_collections.mpi.operator.plugins.module_utils.kube.apply import split_after_status
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.children import Options
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import World
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.planner import plan_job
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult, job_key
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.status import Transition
    from mpijob_operator.runner import BatchRunner

    body = yaml.safe_load(MANIFEST.read_text())
    for replica in body["spec"]["mpiReplicaSpecs"].values():  # on no node: its pods stay Pending, the world still
        replica["template"]["spec"]["nodeSelector"] = {"type": "no-such-node"}
    create_mpijob(api_client, namespace, body)
    key = job_key(namespace, "openmpi-helloworld")
    obj = get_mpijob(api_client, key.namespace, key.name)
    # A new job has no children yet: the module reads exactly this world.
    plan = plan_job(obj, World(mpijob=obj), Options(), datetime.now(UTC), lambda: (b"", b""))
    head, tail = split_after_status(plan)  # the order the shell carries the plan out in
    expected = JobResult(
        key.namespace,
        key.name,
        uid=obj["metadata"]["uid"],
        actions=[a.summary() for a in head + tail],
        transitions=list(plan.transitions),
    )
    plan.fill(expected)

    runner = BatchRunner(str(tmp_path), slot=0, kubeconfig=kubeconfig, timeout=120)
    ran = runner.run([key])
    assert ran.status == "successful", ran
    got = ran.jobs[key]
    assert got.transitions == [Transition("Created", "True", "MPIJobCreated")] and not got.finished
    assert got.status == get_mpijob(api_client, key.namespace, key.name)["status"]  # the status as written
    # the versions the store keeps its copy current with: planned from the job as created, after the status write
    expected.read_version = obj["metadata"]["resourceVersion"]
    expected.resource_version = get_mpijob(api_client, key.namespace, key.name)["metadata"]["resourceVersion"]
    for result in (got, expected):
        result.status = _timeless(result.status)
    assert got == expected

    again = runner.run([key]).jobs[key]  # the Created condition is still there, and fresh: no transition
    assert (again.transitions, again.error, again.finished) == ([], None, False)
    assert again.status == get_mpijob(api_client, key.namespace, key.name)["status"]
