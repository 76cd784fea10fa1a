"""What module_utils/kube/jobs.py (Jobs, the API calls of the mpijob tasks) makes of an API error, without an API
server (the calls themselves are tested against the real one in tests/integration/test_mpijob_module.py)."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils.kube.jobs import _explain
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import ApiError


def test_api_errors_become_messages_that_say_what_to_do():
    typo = ApiError(
        500,
        "Internal Server Error",
        {
            "message": (
                "failed to create typed patch object (ns/pi; kubeflow.org/v1, Kind=MPIJob): .spec.mpiReplicaSpecs.Launcher"
                '.template.spec.containers[name="x"].resources.request: field not declared in schema'
            )
        },
    )
    assert _explain(typo, "applying MPIJob ns/pi") == (
        "applying MPIJob ns/pi: the API server rejected the MPIJob: unknown field "
        'spec.mpiReplicaSpecs.Launcher.template.spec.containers[name="x"].resources.request'
    )
    conflict = ApiError(
        409,
        "Conflict",
        {
            "message": 'Apply failed with 1 conflict: conflict with "mpi.operator-patch" '
            "using kubeflow.org/v2beta1: .spec.mpiReplicaSpecs.Worker.replicas"
        },
    )
    msg = _explain(conflict, "applying MPIJob ns/pi")
    assert "Worker.replicas" in msg and "workers/suspend option" in msg and "force_conflicts: true" in msg
    invalid = ApiError(422, "Unprocessable Entity", {"message": "spec.slotsPerWorker: Invalid value: -1"})
    assert _explain(invalid, "x") == "x: the API server rejected the MPIJob: spec.slotsPerWorker: Invalid value: -1"
