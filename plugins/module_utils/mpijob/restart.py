# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What a failure policy decides (spec.FailurePolicy, parsed by failure_policy.py): which pods of the current attempt
have failed and why (a Fault each), and what the job does about the first of them (a Decision): restart the whole
world, replace one worker (elastic jobs), or fail. The planner carries a decision out (planner.py, restart_world).

How a pod's fault is classified: the first rule of the policy it matches decides (FailJob, Ignore: a disruption,
Count: a program failure); without a match, a disruption is a pod with the condition DisruptionTarget=True (an
eviction through the API, a preemption, a drain, the taint manager, a node shutdown), a pod the kubelet evicted
(reason Evicted), or a pod whose node has been NotReady (or gone) for nodeLostSeconds; anything else that failed (a
non-zero exit, an OOM kill) is a program failure. Among several faults the worst decides: FailJob, then a disruption
(the launcher's mpirun failing because a worker was evicted is the eviction's fault), then a program failure; the
earliest of a kind first.

The attempt is status.restartCount (0 on the first run). Every pod and the launcher Job carry it as a label
(C.ATTEMPT_LABEL): after a restart, what carries another attempt is the old world, deleted before the new one starts,
also by a pass that comes after an operator crash.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime

from . import constants as C
from . import status as S
from .spec import FailurePolicy, FailureRule, MPIJob


@dataclass(frozen=True)
class Fault:
    """A pod of the current attempt that failed, or is being disrupted, or whose node is lost."""

    pod: str
    role: str  # C.ROLE_LAUNCHER or C.ROLE_WORKER
    node: str  # "" when not scheduled
    detail: str  # what happened to it, e.g. "exited with code 1 (Error)"
    action: str  # C.RULE_ACTIONS: what the policy does about it
    at: str = ""  # when (RFC 3339; "" unknown): the earliest fault of a kind decides
    rule: int | None = None  # the index of the rule that matched; None: the built-in classification
    kind: str = "pod"  # "Job": the launcher Job failed with no pod left to say why

    @property
    def cause(self) -> str:
        return C.CAUSE_DISRUPTION if self.action == C.ACTION_IGNORE else C.CAUSE_PROGRAM

    def describe(self) -> str:
        where = f" on node {self.node}" if self.node else ""
        return f"{self.role} {self.kind} {self.pod}{where} {self.detail}"


@dataclass(frozen=True)
class Decision:
    kind: str  # "restart" (the whole world), "replace" (the faulty worker), "fail"
    fault: Fault
    reason: str  # the condition's and the Event's
    message: str

    @property
    def cause(self) -> str:
        return self.fault.cause


# ---- attempts and counts -----------------------------------------------------------------------------------------


def attempt_of(obj: dict) -> int:
    """The attempt an object belongs to, by its label (no label: the first, 0)."""
    value = ((obj.get("metadata") or {}).get("labels") or {}).get(C.ATTEMPT_LABEL)
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def restart_count(status: dict) -> int:
    value = status.get("restartCount")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def restarts(status: dict) -> dict[str, int]:
    """status.restarts: the recoveries by cause (world restarts and replaced workers)."""
    seen = status.get("restarts")
    seen = seen if isinstance(seen, dict) else {}
    return {c: v if isinstance(v := seen.get(c), int) and not isinstance(v, bool) else 0 for c in C.CAUSES}


def counted(status: dict, cause: str, world: bool) -> dict:
    """`status` with one more recovery of `cause`; a world restart is also a new attempt (restartCount)."""
    out = copy.deepcopy(status)
    out["restarts"] = {**restarts(status), cause: restarts(status)[cause] + 1}
    out["restartCount"] = restart_count(status) + (1 if world else 0)
    return out


def carry(old: dict, new: dict) -> dict:
    """`new` (an API's status stage builds its own) with the restart counts of `old`."""
    keep = {k: old[k] for k in ("restartCount", "restarts") if k in old and k not in new}
    return {**new, **keep} if keep else new


# ---- faults --------------------------------------------------------------------------------------------------------


def elastic(job: MPIJob) -> bool:
    """The launcher finds its hosts with the hosts discovery script (elastic Horovod's --host-discovery-script): the
    job survives a worker's loss by itself."""
    for container in (job.launcher.template.get("spec") or {}).get("containers") or []:
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if any(isinstance(w, str) and C.DISCOVER_HOSTS in w for w in words):
            return True
    return False


def worker_failure(job: MPIJob, policy: FailurePolicy) -> str:
    if policy.worker_failure is not None:
        return policy.worker_failure
    return C.REPLACE_WORKER if elastic(job) else C.RESTART_WORLD


def node_down(pod: dict, nodes: dict[str, dict | None], now: datetime) -> tuple[str, float] | None:
    """(how the pod's node is down, for how many seconds) when it is NotReady or gone; None when it is Ready or not
    known (not scheduled, or not read)."""
    name = (pod.get("spec") or {}).get("nodeName") or ""
    if not name or name not in nodes:
        return None
    node = nodes[name]
    if node is None:
        return f"node {name} is gone", float("inf")
    ready = next((c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") == "True":
        return None
    since = S.parse_time((ready or {}).get("lastTransitionTime"))
    seconds = (now - since).total_seconds() if since is not None else float("inf")
    state = "NotReady" if (ready or {}).get("status") == "False" else "unreachable"
    return f"node {name} {state}", max(seconds, 0.0)


def _matches(rule: FailureRule, pod: dict) -> bool:
    codes = rule.on_exit_codes
    if codes is not None:
        exits = [int(t.get("exitCode") or 0) for _n, t in S.terminated_containers(pod, codes.container_name)]
        if codes.operator == "In":
            return any(e in codes.values for e in exits)
        return any(e != 0 and e not in codes.values for e in exits)
    return any(
        (c := S.get_condition(pod.get("status") or {}, ctype)) is not None and c.get("status") == status
        for ctype, status in rule.on_pod_conditions
    )


def _detail(pod: dict) -> tuple[str, str]:
    """(what ended the pod, when) from its status: the first container that failed, its exit code and reason; else
    the pod's reason and message."""
    st = pod.get("status") or {}
    for _name, term in S.terminated_containers(pod):
        code = term.get("exitCode")
        if code:
            reason = term.get("reason") or "Error"
            what = (
                f"was OOM-killed (exit code {code})" if reason == "OOMKilled" else f"exited with code {code} ({reason})"
            )
            return what, str(term.get("finishedAt") or "")
    if st.get("reason"):
        message = f": {st['message']}" if st.get("message") else ""
        return f"failed ({st['reason']}{message})", ""
    return "failed", ""


def pod_fault(
    pod: dict, role: str, policy: FailurePolicy, nodes: dict[str, dict | None], now: datetime
) -> tuple[Fault | None, float | None]:
    """(the pod's fault or None, seconds until its node counts as lost when it is down but not yet long enough)."""
    name = pod["metadata"]["name"]
    node = (pod.get("spec") or {}).get("nodeName") or ""
    st = pod.get("status") or {}
    phase = st.get("phase") or ""
    if phase == "Succeeded":
        return None, None
    disruption = S.get_condition(pod.get("status") or {}, C.DISRUPTION_TARGET) or {}
    disrupted = disruption.get("status") == "True"
    down = node_down(pod, nodes, now)
    lost = down is not None and down[1] >= policy.node_lost_seconds
    if phase == "Failed":
        detail, at = _detail(pod)
        default = C.ACTION_IGNORE if disrupted or st.get("reason") == "Evicted" or lost else C.ACTION_COUNT
        if disrupted:
            detail += f", condition {C.DISRUPTION_TARGET}: {disruption.get('reason') or 'True'}"
    elif disrupted:
        message = f" ({disruption['message']})" if disruption.get("message") else ""
        detail = f"is being disrupted: {C.DISRUPTION_TARGET} {disruption.get('reason') or 'True'}{message}"
        at, default = str(disruption.get("lastTransitionTime") or ""), C.ACTION_IGNORE
    elif lost and down is not None:
        seconds = "" if down[1] == float("inf") else f" for {int(down[1])}s"
        detail, at, default = f"is lost: {down[0]}{seconds}", "", C.ACTION_IGNORE
    else:
        return None, (policy.node_lost_seconds - down[1] if down is not None else None)
    for i, rule in enumerate(policy.rules):
        if _matches(rule, pod):
            return Fault(name, role, node, detail, rule.action, at, i), None
    return Fault(name, role, node, detail, default, at), None


_ORDER = {C.ACTION_FAIL_JOB: 0, C.ACTION_IGNORE: 1, C.ACTION_COUNT: 2}


def first(faults: list[Fault]) -> Fault:
    """The fault that decides: the worst action, then the earliest (unknown times last), workers before the
    launcher (mpirun fails because a rank did), then by name."""
    return min(faults, key=lambda f: (_ORDER[f.action], f.at or "~", f.role != C.ROLE_WORKER, f.pod))


def decide(job: MPIJob, policy: FailurePolicy, status: dict, faults: list[Fault]) -> Decision:
    """What the job does about its faults (at least one)."""
    fault = first(faults)
    ref = f"MPIJob {job.namespace}/{job.name}"
    what = fault.describe()
    if fault.action == C.ACTION_FAIL_JOB:
        return Decision(
            "fail",
            fault,
            C.REASON_FAIL_JOB_RULE,
            f"{ref} has failed: {what}, which failurePolicy.rules[{fault.rule}] says is fatal (FailJob)",
        )
    used = restarts(status)[fault.cause]
    if fault.cause == C.CAUSE_PROGRAM:
        limit, field, reason = policy.max_restarts, "maxRestarts", C.REASON_PROGRAM_FAILURE
        spent, kind = C.REASON_MAX_RESTARTS, "program failures"
    else:
        limit, field, reason = policy.max_disruption_restarts, "maxDisruptionRestarts", C.REASON_DISRUPTION
        spent, kind = C.REASON_MAX_DISRUPTIONS, "disruptions"
    if used >= limit:
        return Decision(
            "fail",
            fault,
            spent,
            f"{ref} has failed: {what}; the budget for {kind} is spent: failurePolicy.{field} is {limit}, {used} used",
        )
    replace = (
        fault.role == C.ROLE_WORKER
        and worker_failure(job, policy) == C.REPLACE_WORKER
        and not any(f.role == C.ROLE_LAUNCHER for f in faults)
    )
    budget = f"{kind} {used + 1} of {limit} (failurePolicy.{field})"
    if replace:
        return Decision("replace", fault, C.REASON_WORKER_REPLACED, f"{ref} replaces a worker: {what}; {budget}")
    attempt = restart_count(status) + 1
    return Decision("restart", fault, reason, f"{ref} is restarting (attempt {attempt}): {what}; {budget}")
