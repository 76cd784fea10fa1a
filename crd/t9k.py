"""The CRD source of batch.tensorstack.dev/v1beta1's MPIJob, T9k's MPIJob API: the operator builds mpirun from
its fields; its status is T9k's shape (conditions, phase, tasks, aggregate)."""

from __future__ import annotations

from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import Api, t9k
from crd.failure_policy import failure_policy, restart_status
from crd.openapi import Inliner
from crd.schema import crd_object, int32, job_conditions, record_status, root, single_version, string, template


def replica_specs(description: str, command: str, with_args: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "type": string("The replica type: launcher or worker.", enum=[t9k.LAUNCHER, t9k.WORKER]),
        "skipInitContainer": {
            "type": "boolean",
            "default": False,
            "description": "Leave out the replica's init containers.",
        },
        "command": {"type": "array", "items": {"type": "string"}, "description": command},
    }
    if with_args:
        props["args"] = {"type": "array", "items": {"type": "string"}, "description": "Arguments of the command."}
    return {
        "type": "array",
        "description": description,
        "items": {"type": "object", "required": ["type"], "properties": props},
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    }


def crd(inliner: Inliner, api: Api) -> dict[str, Any]:
    strings = {"type": "array", "items": {"type": "string"}}
    worker_template = template(
        inliner,
        "Pod template of the workers and of the launcher. It must have a container named mpi-worker, which runs "
        "sshd (its command and args are ignored) and, on the launcher, mpirun.",
    )
    worker_template["x-kubernetes-validations"] = [
        {
            "rule": f"self.spec.containers.exists(c, c.name == '{t9k.MPI_CONTAINER}')",
            "message": f"spec.worker.template must have a container named {t9k.MPI_CONTAINER}",
        }
    ]
    spec = {
        "type": "object",
        "description": "The desired state of an MPIJob.",
        "required": ["worker"],
        "properties": {
            "worker": {
                "type": "object",
                "description": "The workers, and the mpirun line the launcher runs on them.",
                "required": ["template"],
                "properties": {
                    "replicas": int32("Number of workers.", minimum=1, default=1),
                    "extraMPIArgs": {**strings, "description": "More arguments of mpirun, before cmd."},
                    "cmd": {**strings, "description": "The program each MPI process runs, with its arguments."},
                    "template": worker_template,
                },
            },
            "mca": {
                "type": "object",
                "description": "MCA parameters: one `--mca <key> <value>` of mpirun per entry.",
                "additionalProperties": {"type": "string"},
            },
            "mpiHome": string(
                "Where MPI is installed (an absolute path): the launcher runs <mpiHome>/bin/mpirun (mpirun from the "
                "PATH when unset).",
                pattern="^/",
            ),
            "ssh": {
                "type": "object",
                "description": "SSH settings of the replicas.",
                "properties": {
                    "sshdPath": string(
                        "Absolute path of sshd in the worker image.", default="/usr/sbin/sshd", pattern="^/"
                    ),
                },
            },
            "runPolicy": {
                "type": "object",
                "description": "Policies of the job run.",
                "properties": {
                    "cleanUpWorkers": {
                        "type": "boolean",
                        "default": False,
                        "description": "Delete the workers once the job finished, to free the cluster's resources.",
                    },
                    "failurePolicy": failure_policy(),
                },
            },
            "scheduler": {
                "type": "object",
                "description": "The scheduler of the replicas; the cluster's default scheduler when unset.",
                "properties": {
                    "t9kScheduler": {
                        "type": "object",
                        "description": "Schedule with a queue and a priority (T9k Scheduler).",
                        "properties": {
                            "queue": string("The queue the replicas wait in."),
                            "priority": int32("Priority of the replicas in the queue."),
                        },
                    },
                },
            },
            "runMode": {
                "type": "object",
                "description": "Debug and pause modes.",
                "properties": {
                    "debug": {
                        "type": "object",
                        "description": "Debug mode: the replicas come up without training, for a person to exec in.",
                        "properties": {
                            "enabled": {"type": "boolean", "default": False, "description": "Turn debug mode on."},
                            "replicaSpecs": replica_specs(
                                "How each replica type runs in debug mode; defaults for the types not listed.",
                                "What the replica runs while waiting: `sleep inf` on the launcher and "
                                "`/usr/bin/sshd -D` on the workers by default.",
                                with_args=False,
                            ),
                        },
                    },
                    "pause": {
                        "type": "object",
                        "description": "Pause mode: the replicas are deleted (or not created) and training stops.",
                        "properties": {
                            "enabled": {"type": "boolean", "default": False, "description": "Pause the job."},
                            "resumeSpecs": {
                                **replica_specs(
                                    "How each replica type resumes after a pause; cannot be changed.",
                                    "What the replica runs when it resumes; the template's command by default.",
                                    with_args=True,
                                ),
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self == oldSelf",
                                        "message": "spec.runMode.pause.resumeSpecs is immutable",
                                    }
                                ],
                            },
                        },
                    },
                },
            },
        },
    }
    pod_status = {
        "type": "object",
        "properties": {
            "name": string("Name of the pod."),
            "uid": string("UID of the pod."),
            "phase": string("Phase of the pod."),
            "containers": {
                "type": "array",
                "description": "States of the pod's containers.",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    }
    count = int32("Replicas in this phase.", minimum=0)
    status = {
        "type": "object",
        "description": "The observed state of an MPIJob, written by the operator.",
        "properties": {
            "conditions": job_conditions(", ".join(api.condition_types) + "."),
            "phase": string("The job's phase: " + ", ".join(api.phases) + ".", enum=list(api.phases)),
            "tasks": {
                "type": "array",
                "description": "Per replica type: restart count and each pod's name, uid and phase.",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": string("launcher or worker."),
                        "restartCount": int32("Restarts of this type's pods, summed."),
                        "status": {"type": "array", "items": pod_status},
                    },
                },
            },
            "aggregate": {
                "type": "object",
                "description": "Number of replicas in each phase.",
                "properties": {
                    k: count for k in ("creating", "pending", "running", "succeeded", "failed", "deleted", "unknown")
                },
            },
            **restart_status(),
            "record": record_status(),
        },
    }
    schema = root(
        f"MPIJob ({api.group}) runs mpirun over a set of workers with OpenMPI.",
        spec,
        status,
        "(has(self.spec.worker.replicas) && self.spec.worker.replicas > 0 ? self.spec.worker.replicas : 1)",
    )
    # T9k's status (kept in its shape) has no count of the workers alone: the scale subresource's status.replicas is
    # aggregate.running, the job's running replicas, the launcher included (docs/apis.md says so). No selector either.
    scale = {"specReplicasPath": ".spec.worker.replicas", "statusReplicasPath": ".status.aggregate.running"}
    return crd_object(api, single_version(api, schema, scale))
