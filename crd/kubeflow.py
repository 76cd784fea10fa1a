"""The CRD source of kubeflow.org's MPIJob (v2beta1, the storage version, and v1): the MPIJob types (spec, runPolicy,
status) written out field for field as in the Kubeflow operator, with its defaults and rules; both versions share
one schema (YAML anchors), v1 differing only in its replicas default."""

from __future__ import annotations

from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import Api
from crd.failure_policy import backoff_rule, failure_policy, restart_status
from crd.openapi import Inliner, quantity_schema
from crd.schema import Dumper, columns, crd_object, int32, record_status, root, string

CLEAN_POD_POLICY = list(C.CLEAN_POD_POLICIES)
MANAGED_BY = list(C.MANAGED_BY_VALUES)


def replica_spec(inliner: Inliner) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["template"],
        "properties": {
            "replicas": int32(
                "Number of replicas. The Launcher has exactly 1 (the default); the Worker needs at least 1.",
                minimum=0,
            ),
            "restartPolicy": string(
                "Restart policy of the replica's pods: Never or OnFailure. Defaults to OnFailure for the "
                "Launcher and Never for the Worker. Overrides template.spec.restartPolicy.",
                maxLength=32,  # bounds the CEL cost estimate
                **{
                    "x-kubernetes-validations": [
                        {
                            "rule": f"self in {list(C.RESTART_POLICIES)}",
                            "message": "restartPolicy must be " + " or ".join(C.RESTART_POLICIES),
                        }
                    ]
                },
            ),
            "template": inliner.pod_template(),
        },
    }


def replica_specs(inliner: Inliner) -> dict[str, Any]:
    # A map like Kubeflow's (one pod-template schema instead of two); the keys are checked by a rule.
    return {
        "type": "object",
        "description": "The replica specs by type: Launcher (required) and Worker.",
        "additionalProperties": replica_spec(inliner),
        "maxProperties": 2,
        "x-kubernetes-validations": [
            {
                "rule": f"self.all(k, k in {list(C.REPLICA_TYPES)})",
                "message": "spec.mpiReplicaSpecs keys must be " + " or ".join(C.REPLICA_TYPES),
            },
            {"rule": "'Launcher' in self", "message": "spec.mpiReplicaSpecs.Launcher is required"},
            {
                "rule": "!('Launcher' in self) || !has(self.Launcher.replicas) || self.Launcher.replicas == 1",
                "message": "spec.mpiReplicaSpecs.Launcher.replicas must be 1",
            },
            {
                "rule": "!('Worker' in self) || (has(self.Worker.replicas) && self.Worker.replicas >= 1)",
                "message": "spec.mpiReplicaSpecs.Worker.replicas must be set and at least 1 when the Worker spec is present",
            },
        ],
    }


def run_policy(inliner: Inliner) -> dict[str, Any]:
    return {
        "type": "object",
        "default": {},
        "description": "Policies of the job run: cleanup, deadlines, retries, gang scheduling, suspension.",
        "properties": {
            "cleanPodPolicy": string(
                "Which pods to delete when the job finishes: All, Running or None (the default).", enum=CLEAN_POD_POLICY
            ),
            "ttlSecondsAfterFinished": int32(
                "Seconds after the job finished (Succeeded or Failed) before it is deleted.", minimum=0
            ),
            "activeDeadlineSeconds": {
                "type": "integer",
                "format": "int64",
                "minimum": 0,
                "description": "Seconds the launcher may run before the job is failed (DeadlineExceeded).",
            },
            "backoffLimit": int32("Retries of the launcher before the job is failed.", minimum=0),
            C.FAILURE_POLICY: failure_policy(),
            "schedulingPolicy": {
                "type": "object",
                "description": "Gang-scheduling settings, used when the operator runs with a gang scheduler.",
                "properties": {
                    "minAvailable": int32("PodGroup minMember; defaults to workers + 1."),
                    "queue": string("Volcano queue of the PodGroup."),
                    "minResources": {
                        "type": "object",
                        "description": "PodGroup minResources; computed from the pod templates when unset.",
                        "additionalProperties": quantity_schema(),
                    },
                    "priorityClass": string("PriorityClass of the PodGroup (Volcano)."),
                    "scheduleTimeoutSeconds": int32("scheduleTimeoutSeconds of the PodGroup (scheduler-plugins)."),
                },
            },
            "suspend": {
                "type": "boolean",
                "default": False,
                "description": "Suspends the job: pods are deleted (or not created) until it is set back to false.",
            },
            "managedBy": string(
                "The controller that reconciles this job: kubeflow.org/mpi-operator (this operator, when unset) "
                "or kueue.x-k8s.io/multikueue. Immutable.",
                maxLength=63,
                **{
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "spec.runPolicy.managedBy is immutable"},
                        {
                            "rule": f"self in {MANAGED_BY}",
                            "message": "spec.runPolicy.managedBy must be one of " + ", ".join(MANAGED_BY),
                        },
                    ]
                },
            ),
        },
        "x-kubernetes-validations": [backoff_rule("spec.runPolicy")],
    }


def mpijob_spec(inliner: Inliner) -> dict[str, Any]:
    return {
        "type": "object",
        "description": "The desired state of an MPIJob.",
        "required": ["mpiReplicaSpecs"],
        "properties": {
            "slotsPerWorker": int32("Slots (MPI processes) per worker in the hostfile.", minimum=0, default=1),
            "runLauncherAsWorker": {
                "type": "boolean",
                "default": False,
                "description": "Run MPI processes on the launcher too: it becomes the first host of the hostfile.",
            },
            "sshAuthMountPath": string(
                "Where the job's SSH keys are mounted in the launcher and worker containers.",
                default=C.ROOT_SSH_PATH,
                minLength=1,
            ),
            "launcherCreationPolicy": string(
                "When the launcher is created: AtStartup, or WaitForWorkersReady (once every worker is Ready).",
                default=C.AT_STARTUP,
                enum=list(C.LAUNCHER_CREATION_POLICIES),
            ),
            "mpiImplementation": string(
                "MPI implementation of the images; selects the hostfile format and launcher environment.",
                default=C.OPENMPI,
                enum=list(C.MPI_IMPLEMENTATIONS),
            ),
            "runPolicy": run_policy(inliner),
            "mpiReplicaSpecs": replica_specs(inliner),
            "cleanPodPolicy": string(
                "Legacy (kubeflow.org/v1) place of runPolicy.cleanPodPolicy; runPolicy.cleanPodPolicy wins when both are set.",
                enum=CLEAN_POD_POLICY,
            ),
            "mainContainer": string(
                "Legacy (kubeflow.org/v1): name of the container that runs MPI; the first container when unset."
            ),
        },
        "x-kubernetes-validations": [
            {
                "rule": "(has(self.runPolicy) && has(self.runPolicy.managedBy)) == "
                "(has(oldSelf.runPolicy) && has(oldSelf.runPolicy.managedBy))",
                "message": "spec.runPolicy.managedBy is immutable: it cannot be added or removed",
            }
        ],
    }


def mpijob_status(inliner: Inliner) -> dict[str, Any]:
    time = {"type": "string", "format": "date-time"}
    replica_status = {
        "type": "object",
        "properties": {
            "active": int32("Running pods."),
            "succeeded": int32("Succeeded pods."),
            "failed": int32("Failed pods."),
            "labelSelector": inliner.ref("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"),
            "selector": string("Label selector of the replica's pods, in string form (used by the scale subresource)."),
        },
    }
    condition = {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": string("Created, Running, Restarting, Succeeded, Suspended or Failed."),
            "status": string("True, False or Unknown.", enum=["True", "False", "Unknown"]),
            "reason": string("CamelCase reason of the last transition."),
            "message": string("Human-readable detail of the last transition."),
            "lastUpdateTime": time,
            "lastTransitionTime": time,
        },
    }
    return {
        "type": "object",
        "description": "The observed state of an MPIJob, written by the operator.",
        "properties": {
            "conditions": {
                "type": "array",
                "description": "Conditions of the job, one per type.",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            "replicaStatuses": {
                "type": "object",
                "description": "Pod counts per replica type (Launcher, Worker).",
                "additionalProperties": replica_status,
            },
            "startTime": {**time, "description": "When the operator started working on the job."},
            "completionTime": {**time, "description": "When the job finished."},
            "lastReconcileTime": {**time, "description": "When the job was last reconciled."},
            # Ours (additive): Kubeflow's column read the last condition, which may be a False one.
            "phase": string(
                "One word for the job's state, from its conditions (the printer column State): Created, Running, "
                "Restarting, Suspended, Succeeded or Failed. Written by mpi.operator, absent until the operator saw "
                "the job.",
                enum=list(C.CONDITION_TYPES),
            ),
            **restart_status(),
            "record": record_status(),
        },
    }


# The CEL expression of the number of workers (for the name rule).
WORKERS = (
    "('Worker' in self.spec.mpiReplicaSpecs && has(self.spec.mpiReplicaSpecs.Worker.replicas)"
    " && self.spec.mpiReplicaSpecs.Worker.replicas > 0 ? self.spec.mpiReplicaSpecs.Worker.replicas : 1)"
)


def versions(inliner: Inliner, api: Api) -> list[dict[str, Any]]:
    # Both versions share one schema that holds both shapes, so conversion None is lossless (docs/crd.md).
    schema = {
        "openAPIV3Schema": root(
            "MPIJob runs an MPI program on a launcher and a set of workers.",
            mpijob_spec(inliner),
            mpijob_status(inliner),
            WORKERS,
        )
    }
    subresources = {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.mpiReplicaSpecs.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        },
    }
    printer = columns(api)
    v1_schema = with_v1_defaults(schema)
    spec_props = schema["openAPIV3Schema"]["properties"]["spec"]["properties"]
    replica = spec_props["mpiReplicaSpecs"]["additionalProperties"]["properties"]
    # What both versions share is written once (YAML anchors); the v1 schema differs only in its replicas default.
    Dumper.shared = {
        id(subresources): "subresources",
        id(printer): "columns",
        id(replica["template"]): "pod-template",
        id(replica["restartPolicy"]): "restart-policy",
        id(spec_props["runPolicy"]): "run-policy",
        id(schema["openAPIV3Schema"]["properties"]["status"]): "status",
    }
    v2beta1 = {"name": C.VERSION, "served": True, "storage": True}
    # Not marked deprecated: Kubernetes ranks a GA version above a beta one, so kubectl's plain `mpijob` resolves to
    # v1 and a deprecation warning would print on every kubectl command, also for v2beta1 users.
    v1 = {"name": C.LEGACY_VERSION, "served": True, "storage": False}
    for v, s in ((v2beta1, schema), (v1, v1_schema)):
        v.update({"schema": s, "subresources": subresources, "additionalPrinterColumns": printer})
    return [v2beta1, v1]


def with_v1_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The v1 schema: v2beta1's with `replicas` defaulting to 1 for every replica type, as kubeflow.org/v1 did.

    The API server applies the defaults of the version a request is sent in, before validation, and stores them:
    a v1 Worker without replicas is stored with 1 (old manifests apply as they are), a v2beta1 one is still rejected.
    Only the path down to `replicas` is copied; everything else is the same object as in `schema`.
    """
    path = [
        "openAPIV3Schema",
        "properties",
        "spec",
        "properties",
        "mpiReplicaSpecs",
        "additionalProperties",
        "properties",
        "replicas",
    ]
    top = dict(schema)
    node = top
    for key in path[:-1]:
        node[key] = dict(node[key])
        node = node[key]
    node["replicas"] = {
        **node["replicas"],
        "description": "Number of replicas; 1 when not set (kubeflow.org/v1). The Launcher has exactly 1.",
        "default": 1,
    }
    return top


def crd(inliner: Inliner, api: Api) -> dict[str, Any]:
    return crd_object(api, versions(inliner, api))
