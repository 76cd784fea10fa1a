"""The failure policy's schema and the restart counts in status, the same on every MPIJob CRD (kubeflow.org's and T9k's
`spec.runPolicy.failurePolicy`, batch.test.bdap.com's `spec.failurePolicy`): the API server refuses what the core's
parse refuses (plugins/module_utils/mpijob/failure_policy.py), naming the field."""

from __future__ import annotations

from typing import Any

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from crd.schema import int32, string


def failure_policy() -> dict[str, Any]:
    exit_codes = {
        "type": "object",
        "description": "Matches a failed pod by its containers' exit codes.",
        "required": ["operator", "values"],
        "properties": {
            "containerName": string("Only this container's exit code; any container's when unset.", maxLength=253),
            "operator": string(
                "In: an exit code is one of values; NotIn: a non-zero exit code is none of them.",
                enum=list(C.EXIT_CODE_OPERATORS),
            ),
            "values": {
                "type": "array",
                "description": "Exit codes (0 is not allowed with In).",
                "items": {"type": "integer", "format": "int32"},
                "minItems": 1,
                "maxItems": C.MAX_EXIT_CODES,
                "x-kubernetes-list-type": "set",
            },
        },
        "x-kubernetes-validations": [
            {
                "rule": "self.operator != 'In' || !self.values.exists(v, v == 0)",
                "message": "onExitCodes.values must not contain 0 with the operator In: exit code 0 is a success",
                "fieldPath": ".values",
            }
        ],
    }
    pod_condition = {
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": string("A pod condition type, e.g. DisruptionTarget.", minLength=1, maxLength=316),
            "status": string("Its status (True by default).", enum=list(C.CONDITION_STATUSES), default="True"),
        },
    }
    rule = {
        "type": "object",
        "required": ["action"],
        "properties": {
            "action": string(
                "FailJob: the job fails at once (a bug); Ignore: a disruption, counted against "
                "maxDisruptionRestarts; Count: a program failure, counted against maxRestarts.",
                enum=list(C.RULE_ACTIONS),
            ),
            "onExitCodes": exit_codes,
            "onPodConditions": {
                "type": "array",
                "description": "Matches a pod that has any of these conditions.",
                "items": pod_condition,
                "minItems": 1,
                "maxItems": C.MAX_FAILURE_RULES,
            },
        },
        "x-kubernetes-validations": [
            {
                "rule": "has(self.onExitCodes) != has(self.onPodConditions)",
                "message": "a failurePolicy rule must set exactly one of onExitCodes and onPodConditions",
            }
        ],
    }
    return {
        "type": "object",
        "description": (
            "Opt-in: the operator restarts the whole world (every worker and the launcher, made again once the old "
            "ones are gone) when a pod fails, with one budget for program failures and one for disruptions; the "
            "pods get the attempt in MPIJOB_RESTART_ATTEMPT. Without it, only the launcher's retries apply."
        ),
        "properties": {
            "maxRestarts": int32(
                "Restarts for program failures (a non-zero exit of a rank or of mpirun, an OOM kill); 0 by default.",
                minimum=0,
            ),
            "maxDisruptionRestarts": int32(
                "Restarts for disruptions (eviction, preemption, drain, a lost node); "
                f"{C.DEFAULT_MAX_DISRUPTION_RESTARTS} by default.",
                minimum=0,
            ),
            "nodeLostSeconds": int32(
                "Seconds a pod's node may be NotReady or unreachable before the pod counts as lost (a disruption); "
                f"{C.DEFAULT_NODE_LOST_SECONDS} by default.",
                minimum=0,
            ),
            "workerFailure": string(
                "What a worker's failure restarts: RestartWorld, or ReplaceWorker (only that worker, for elastic "
                "jobs); by default ReplaceWorker when the launcher runs the hosts discovery script, else "
                "RestartWorld.",
                enum=list(C.WORKER_FAILURE_SCOPES),
            ),
            "rules": {
                "type": "array",
                "description": "The first rule a failed pod matches decides; none: the built-in classification.",
                "items": rule,
                "maxItems": C.MAX_FAILURE_RULES,
            },
        },
    }


def backoff_rule(path: str) -> dict[str, Any]:
    """On a runPolicy that has backoffLimit: not both (the launcher's retries are the policy's)."""
    return {
        "rule": "!(has(self.failurePolicy) && has(self.backoffLimit))",
        "message": f"{path}.backoffLimit must not be set with {path}.failurePolicy: the operator restarts the job",
        "fieldPath": ".backoffLimit",
    }


def restart_status() -> dict[str, Any]:
    """status.restartCount and status.restarts, written by a failure policy's restarts."""
    return {
        "restartCount": int32(
            "World restarts so far: the attempt the pods belong to (MPIJOB_RESTART_ATTEMPT); absent until the "
            "first restart of a job with a failure policy.",
            minimum=0,
        ),
        "restarts": {
            "type": "object",
            "description": "Recoveries by cause (world restarts and replaced workers): program and disruption.",
            "properties": {
                C.CAUSE_PROGRAM: int32("Against failurePolicy.maxRestarts.", minimum=0),
                C.CAUSE_DISRUPTION: int32("Against failurePolicy.maxDisruptionRestarts.", minimum=0),
            },
        },
    }
