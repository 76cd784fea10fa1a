# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The failure policy's parse: one shape on every API (kubeflow.org's `spec.runPolicy.failurePolicy`, T9k's
`spec.runPolicy.failurePolicy`, batch.test.bdap.com's `spec.failurePolicy`), read into spec.FailurePolicy by each API's
parse with the path of its own field. Modelled on JobSet's failurePolicy (maxRestarts, rules) and on a Job's
podFailurePolicy (rules with an action, onExitCodes, onPodConditions); what a restart does is restart.py's.

    failurePolicy:
      maxRestarts: 3               # program failures: a non-zero exit of a rank or of mpirun, an OOM kill (default 0)
      maxDisruptionRestarts: 10    # disruptions: eviction, preemption, drain, a node lost (default 10)
      nodeLostSeconds: 60          # a pod's node NotReady (or gone) this long is a disruption (default 60)
      workerFailure: RestartWorld  # or ReplaceWorker; default: ReplaceWorker for elastic jobs, else RestartWorld
      rules:                       # the first rule a failed pod matches decides; none: the built-in classification
      - action: FailJob            # FailJob (fail at once), Ignore (a disruption), Count (a program failure)
        onExitCodes: {containerName: worker, operator: In, values: [42]}
      - action: Ignore
        onPodConditions: [{type: DisruptionTarget, status: "True"}]
"""

from __future__ import annotations

from typing import Any

from . import constants as C
from .spec import ExitCodes, FailurePolicy, FailureRule, Reader

FIELDS = ("maxRestarts", "maxDisruptionRestarts", "nodeLostSeconds", "workerFailure", "rules")


def read_failure_policy(r: Reader, value: Any, path: str) -> FailurePolicy | None:
    """The failure policy at `path` (None when absent); each bad field is a FieldError named by its path."""
    fp = r.obj(value, path)
    if fp is None:
        return None
    for key in fp:
        if key not in FIELDS:
            r.fail(f"{path}.{key}", f"unknown field: supported fields: {', '.join(FIELDS)}")
    max_restarts = r.int(fp.get("maxRestarts"), f"{path}.maxRestarts", minimum=0)
    max_disruptions = r.int(fp.get("maxDisruptionRestarts"), f"{path}.maxDisruptionRestarts", minimum=0)
    node_lost = r.int(fp.get("nodeLostSeconds"), f"{path}.nodeLostSeconds", minimum=0)
    scope = None
    if fp.get("workerFailure") is not None:
        scope = r.choice(fp.get("workerFailure"), f"{path}.workerFailure", C.WORKER_FAILURE_SCOPES, C.RESTART_WORLD)
    return FailurePolicy(
        max_restarts=0 if max_restarts is None else max_restarts,
        max_disruption_restarts=C.DEFAULT_MAX_DISRUPTION_RESTARTS if max_disruptions is None else max_disruptions,
        node_lost_seconds=C.DEFAULT_NODE_LOST_SECONDS if node_lost is None else node_lost,
        rules=_rules(r, fp.get("rules"), f"{path}.rules"),
        worker_failure=scope,
    )


def _rules(r: Reader, value: Any, path: str) -> tuple[FailureRule, ...]:
    rules: list[FailureRule] = []
    for i, item in enumerate(_list(r, value, path, "a list of rules")):
        rpath = f"{path}[{i}]"
        rule = r.obj(item, rpath, required=True)
        if rule is None:
            continue
        for key in rule:
            if key not in ("action", "onExitCodes", "onPodConditions"):
                r.fail(f"{rpath}.{key}", "unknown field: supported fields: action, onExitCodes, onPodConditions")
        action = r.str(rule.get("action"), f"{rpath}.action")
        if action is None:
            r.fail(f"{rpath}.action", f"required: one of {', '.join(C.RULE_ACTIONS)}")
        elif action not in C.RULE_ACTIONS:
            r.fail(f"{rpath}.action", f"unsupported value {action!r}: supported values: {', '.join(C.RULE_ACTIONS)}")
        codes = _exit_codes(r, rule.get("onExitCodes"), f"{rpath}.onExitCodes")
        conditions = _pod_conditions(r, rule.get("onPodConditions"), f"{rpath}.onPodConditions")
        if (rule.get("onExitCodes") is None) == (rule.get("onPodConditions") is None):
            r.fail(rpath, "must set exactly one of onExitCodes and onPodConditions")
        if action in C.RULE_ACTIONS:
            rules.append(FailureRule(action=action, on_exit_codes=codes, on_pod_conditions=conditions))
    return tuple(rules)


def _list(r: Reader, value: Any, path: str, what: str) -> list:
    """`value` when it is a list of at most C.MAX_FAILURE_RULES items; else [] (absent) or [] and an error."""
    if value is None:
        return []
    if not isinstance(value, list):
        r.fail(path, f"must be {what}, got {type(value).__name__}")
        return []
    if len(value) > C.MAX_FAILURE_RULES:
        r.fail(path, f"must have at most {C.MAX_FAILURE_RULES} items, got {len(value)}")
        return []
    return value


def _exit_codes(r: Reader, value: Any, path: str) -> ExitCodes | None:
    spec = r.obj(value, path)
    if spec is None:
        return None
    container = r.str(spec.get("containerName"), f"{path}.containerName") or None
    operator = r.str(spec.get("operator"), f"{path}.operator")
    if operator not in C.EXIT_CODE_OPERATORS:
        r.fail(
            f"{path}.operator",
            f"unsupported value {operator!r}: supported values: {', '.join(C.EXIT_CODE_OPERATORS)}",
        )
    raw = spec.get("values")
    if not isinstance(raw, list) or not raw:
        r.fail(f"{path}.values", "must be a non-empty list of exit codes")
        return None
    if len(raw) > C.MAX_EXIT_CODES:
        r.fail(f"{path}.values", f"must have at most {C.MAX_EXIT_CODES} items, got {len(raw)}")
        return None
    values = [r.int(v, f"{path}.values[{i}]") for i, v in enumerate(raw)]
    if any(v is None for v in values):
        return None
    codes = [int(v) for v in values if v is not None]
    if len(set(codes)) != len(codes):
        r.fail(f"{path}.values", "must not repeat a value")
    if operator == "In" and 0 in codes:
        r.fail(f"{path}.values", "must not contain 0 with the operator In: exit code 0 is a success")
    if operator not in C.EXIT_CODE_OPERATORS:
        return None
    return ExitCodes(operator=operator, values=tuple(codes), container_name=container)


def _pod_conditions(r: Reader, value: Any, path: str) -> tuple[tuple[str, str], ...]:
    if value == []:
        r.fail(path, "must be a non-empty list of {type, status}")
    out = []
    for i, item in enumerate(_list(r, value, path, "a non-empty list of {type, status}")):
        cpath = f"{path}[{i}]"
        cond = r.obj(item, cpath, required=True) or {}
        ctype = r.str(cond.get("type"), f"{cpath}.type")
        if not ctype:
            r.fail(f"{cpath}.type", "required: a pod condition type, e.g. DisruptionTarget")
            continue
        status = r.choice(cond.get("status"), f"{cpath}.status", C.CONDITION_STATUSES, "True")
        out.append((ctype, status))
    return tuple(out)
