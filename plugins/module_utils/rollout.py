# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Is the operator Deployment rolled out, still coming, or stuck for a reason a person must fix? Pure: fed the
Deployment, its pods and the namespace's events as the API returns them, no I/O (plugins/modules/operator_rollout.py
reads them and fails with the verdict)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

# Container waiting reasons that do not go away by waiting: the kubelet retries them with a growing backoff.
IMAGE_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable")
CONFIG_REASONS = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError")
CRASH_REASONS = ("CrashLoopBackOff",)
# A pod the scheduler cannot place for this long is reported (a cluster autoscaler announces a scale-up by event,
# and then it is waited for).
UNSCHEDULABLE_GRACE = 10.0
# A container that has died this often without becoming ready is crash looping even before the kubelet says so.
CRASH_RESTARTS = 2

DOCS = "docs/install.md"
ADVICE = {
    "image": f"build the operator image and push it where the nodes can pull it (or load it into the nodes), then set "
    f"mpi_operator_image_repository / mpi_operator_image_tag (and mpi_operator_image_pull_secrets for a "
    f"private registry): {DOCS}#image",
    "config": f"the container could not be created: check mpi_operator_extra_env, mpi_operator_extra_args and the "
    f"security context variables: {DOCS}#diagnostics",
    "crash": f"the operator exits at start; its log above says why (RBAC denied: re-run install.yml without "
    f"changing the RBAC by hand; no MPIJob CRD: run the crds role): {DOCS}#diagnostics",
    "unschedulable": f"no node can run the pod: check mpi_operator_node_selector, mpi_operator_tolerations, "
    f"mpi_operator_affinity, mpi_operator_resources and mpi_operator_priority_class_name: "
    f"{DOCS}#diagnostics",
    "timeout": f"the operator did not become ready in time; its log and events above may say why: {DOCS}#diagnostics",
    "simulated": f"pin the operator to a node that runs containers with mpi_operator_node_selector and "
    f"mpi_operator_tolerations (on this project's local cluster: -e @examples/local/install-real-node.yml, "
    f"the real node): {DOCS}#diagnostics",
}
# kwok marks the nodes it simulates with this annotation: their pods are reported Running and nothing runs.
SIMULATED_NODE_ANNOTATION = "kwok.x-k8s.io/node"


@dataclass
class Verdict:
    state: str  # "ready", "waiting" or "failed"
    summary: str = ""
    pod: str | None = None  # the pod the verdict is about
    container: str | None = None
    previous_log: bool = False  # the useful log is the last terminated container's
    advice: str = ""
    events: list[str] = field(default_factory=list)

    def message(self, log_tail: str = "") -> str:
        parts = [f"The operator did not start: {self.summary}."]
        if self.events:
            parts.append("Events of pod {}:\n  {}".format(self.pod, "\n  ".join(self.events)))
        if log_tail.strip():
            which = "previous container" if self.previous_log else "container"
            parts.append(f"Log tail ({which} {self.container}):\n  " + "\n  ".join(log_tail.rstrip().splitlines()))
        if self.advice:
            parts.append(f"What to do: {self.advice}")
        return "\n".join(parts)


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def rolled_out(deployment: dict) -> bool:
    """The Deployment controller saw the current spec and every replica is updated and available (what
    `kubectl rollout status` waits for)."""
    meta, spec, status = deployment.get("metadata") or {}, deployment.get("spec") or {}, deployment.get("status") or {}
    want = spec.get("replicas", 1)
    return (
        status.get("observedGeneration", 0) >= meta.get("generation", 0)
        and status.get("updatedReplicas", 0) >= want
        and status.get("availableReplicas", 0) >= want
        and status.get("replicas", 0) <= want
    )  # old pods gone


def pod_events(events: list[dict], pod: str) -> list[dict]:
    """The events about one pod, oldest first."""
    mine = [
        e
        for e in events
        if (e.get("involvedObject") or {}).get("kind") == "Pod" and (e.get("involvedObject") or {}).get("name") == pod
    ]
    return sorted(mine, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")


def event_lines(events: list[dict], limit: int = 8) -> list[str]:
    out = []
    for e in events[-limit:]:
        count = e.get("count") or 1
        times = f" (x{count})" if count > 1 else ""
        out.append(f"{e.get('type', '')} {e.get('reason', '')}{times}: {(e.get('message') or '').strip()}")
    return out


def _condition(pod: dict, ctype: str) -> dict:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), {})


def pod_problem(pod: dict, now: float) -> Verdict | None:
    """Why one pod cannot start, or None while it may still come up by itself."""
    name = (pod.get("metadata") or {}).get("name")
    status = pod.get("status") or {}
    scheduled = _condition(pod, "PodScheduled")
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        since = parse_time(scheduled.get("lastTransitionTime"))
        if since is None or now - since >= UNSCHEDULABLE_GRACE:
            return Verdict(
                "failed",
                f"pod {name} cannot be scheduled: {scheduled.get('message', '')}".rstrip(": "),
                pod=name,
                advice=ADVICE["unschedulable"],
            )
        return None
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason, detail = waiting.get("reason", ""), (waiting.get("message") or "").strip()
        said = f"{reason}: {detail}" if detail else reason
        container = cs.get("name")
        if reason in IMAGE_REASONS:
            return Verdict(
                "failed",
                f"pod {name} cannot get its image {cs.get('image', '')} ({said})",
                pod=name,
                container=container,
                advice=ADVICE["image"],
            )
        if reason in CONFIG_REASONS:
            return Verdict(
                "failed",
                f"pod {name}: container {container} cannot be created ({said})",
                pod=name,
                container=container,
                advice=ADVICE["config"],
            )
        last = (cs.get("lastState") or {}).get("terminated") or {}
        restarts = cs.get("restartCount", 0)
        if reason in CRASH_REASONS or (restarts >= CRASH_RESTARTS and not cs.get("ready")):
            exit_code = last.get("exitCode")
            how = f"exit code {exit_code}" + (f", {last['reason']}" if last.get("reason") else "")
            if exit_code is None:
                how = "no exit code"
            return Verdict(
                "failed",
                f"pod {name}: container {container} keeps exiting ({how}; restarted "
                f"{restarts} times{', ' + reason if reason else ''})",
                pod=name,
                container=container,
                previous_log=bool(last),
                advice=ADVICE["crash"],
            )
    return None


def on_simulated_node(pods: list[dict], nodes: dict[str, dict]) -> Verdict | None:
    """A live pod placed on a node that only simulates pods (kwok's): it would look Running and do nothing. `nodes`
    maps node names to the nodes read (a node not in it is not judged)."""
    for pod in pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        node = nodes.get(spec.get("nodeName") or "")
        if meta.get("deletionTimestamp") or node is None:
            continue
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        if SIMULATED_NODE_ANNOTATION in annotations:
            return Verdict(
                "failed",
                f"pod {meta.get('name')} was scheduled to {spec['nodeName']}, a simulated node "
                f"({SIMULATED_NODE_ANNOTATION}={annotations[SIMULATED_NODE_ANNOTATION]}: its "
                f"pods are reported Running and nothing runs)",
                pod=meta.get("name"),
                advice=ADVICE["simulated"],
            )
    return None


def verdict(
    deployment: dict | None, pods: list[dict], events: list[dict], now: float, nodes: dict[str, dict] | None = None
) -> Verdict:
    """Ready when rolled out; failed as soon as any of its live pods shows a cause that waiting will not cure, or
    sits on a simulated node (`nodes`: the nodes of the pods, by name, where they could be read)."""
    if deployment is None:
        return Verdict("waiting", "the Deployment does not exist yet")
    simulated = on_simulated_node(pods, nodes or {})
    if simulated is not None:
        return simulated
    if rolled_out(deployment):
        return Verdict("ready", "rolled out")
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    for pod in sorted(live, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True):
        problem = pod_problem(pod, now)
        if problem is not None:
            problem.events = event_lines(pod_events(events, problem.pod or ""))
            if problem.advice == ADVICE["unschedulable"] and any(
                e.get("reason") == "TriggeredScaleUp" for e in pod_events(events, problem.pod or "")
            ):
                continue  # a cluster autoscaler is adding a node for it
            return problem
    for cond in (deployment.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "ReplicaFailure" and cond.get("status") == "True":
            # e.g. a quota or an admission webhook refused the pod: there is no pod to look at
            return Verdict(
                "failed",
                f"the Deployment cannot create its pods ({cond.get('reason')}: {cond.get('message', '')})",
                advice=ADVICE["config"],
            )
        if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
            return Verdict(
                "failed",
                f"the rollout exceeded its progress deadline ({cond.get('message', '')})",
                advice=ADVICE["timeout"],
            )
    status = deployment.get("status") or {}
    return Verdict(
        "waiting",
        f"{status.get('availableReplicas', 0)} of "
        f"{(deployment.get('spec') or {}).get('replicas', 1)} replicas available",
    )


def timed_out(deployment: dict | None, pods: list[dict], events: list[dict], timeout: float) -> Verdict:
    """The verdict when the wait ran out: the newest unready pod, its events, to show what it was doing."""
    waiting = [
        p
        for p in pods
        if not (p.get("metadata") or {}).get("deletionTimestamp") and _condition(p, "Ready").get("status") != "True"
    ]
    waiting.sort(key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True)
    last = verdict(deployment, pods, events, float("inf")) if deployment is not None else None
    summary = f"not ready after {timeout:.0f}s" + (f" ({last.summary})" if last and last.summary else "")
    v = Verdict("failed", summary, advice=ADVICE["timeout"])
    if waiting:
        pod = waiting[0]
        v.pod = (pod.get("metadata") or {}).get("name")
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        v.container = statuses[0].get("name") if statuses else None
        v.events = event_lines(pod_events(events, v.pod or ""))
        cond = _condition(pod, "Ready")
        if cond.get("message"):
            v.summary += f"; pod {v.pod}: {cond['message']}"
    return v
