"""The CRD source of batch.test.bdap.com/v1's MPIJob, the API of a kubebuilder MPI operator (numWorkers,
launcherTemplate, workerTemplate), with the small status mpi.operator writes (the original wrote none)."""

from __future__ import annotations

from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import Api
from crd.failure_policy import failure_policy, restart_status
from crd.openapi import Inliner
from crd.schema import TIME, crd_object, int32, job_conditions, record_status, root, single_version, string, template


def crd(inliner: Inliner, api: Api) -> dict[str, Any]:
    spec = {
        "type": "object",
        "description": "The desired state of an MPIJob.",
        "required": ["numWorkers", "launcherTemplate", "workerTemplate"],
        "properties": {
            "numWorkers": int32(
                "Number of worker pods, <name>-worker-0 .. <name>-worker-<numWorkers-1>; every one is a host of the "
                "hostfile (one slot each). Changing it adds or removes workers.",
                minimum=1,
            ),
            "launcherTemplate": template(
                inliner,
                "Pod template of the launcher, the pod <name>-launcher, created once every worker is Ready. Its first "
                "container gets OMPI_MCA_orte_default_hostfile (the hostfile's path) and the SSH keys. A change "
                "applies to the next launcher: delete the launcher pod to run it again.",
            ),
            "workerTemplate": template(
                inliner,
                "Pod template of the workers; its first container gets the SSH keys. A change replaces the workers "
                "one by one (a rolling update).",
            ),
            "failurePolicy": failure_policy(),
        },
    }
    status = {
        "type": "object",
        "description": "The observed state, written by mpi.operator (the original operator wrote none).",
        "properties": {
            "phase": string("Pending, Running, Succeeded or Failed (the printer column Phase).", enum=list(api.phases)),
            "readyWorkers": int32("Workers that are Ready."),
            "launcher": string("Name of the launcher pod, once created."),
            "selector": string("Label selector of the worker pods (the scale subresource's labelSelectorPath)."),
            "conditions": job_conditions(", ".join(api.condition_types[:-1]) + f" or {api.condition_types[-1]}."),
            "startTime": {**TIME, "description": "When the operator started working on the job."},
            "completionTime": {**TIME, "description": "When the launcher finished."},
            **restart_status(),
            "record": record_status(),
        },
    }
    schema = root(
        f"MPIJob ({api.group}) runs an MPI program from a launcher pod on a set of worker pods.",
        spec,
        status,
        "(self.spec.numWorkers > 0 ? self.spec.numWorkers : 1)",
    )
    scale = {
        "specReplicasPath": ".spec.numWorkers",
        "statusReplicasPath": ".status.readyWorkers",
        "labelSelectorPath": ".status.selector",
    }
    return crd_object(api, single_version(api, schema, scale))
