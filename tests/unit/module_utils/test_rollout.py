"""The install's diagnosis of an operator pod that cannot start (plugins/module_utils/rollout.py), fed objects shaped
as the API server returns them."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils import rollout as R

NOW = R.parse_time("2026-01-01T00:01:00Z")


def deployment(available=0, updated=1, replicas=1, generation=2, observed=2, conditions=()):
    return {
        "metadata": {"name": "mpi-operator", "generation": generation},
        "spec": {"replicas": 1},
        "status": {
            "observedGeneration": observed,
            "updatedReplicas": updated,
            "availableReplicas": available,
            "replicas": replicas,
            "conditions": list(conditions),
        },
    }


def pod(
    name="mpi-operator-abc",
    waiting=None,
    restarts=0,
    last=None,
    scheduled=None,
    ready=False,
    deleting=False,
    created="2026-01-01T00:00:00Z",
):
    status: dict = {"conditions": []}
    if scheduled is not None:
        status["conditions"].append(scheduled)
    else:
        status["containerStatuses"] = [
            {
                "name": "mpi-operator",
                "image": "localhost/mpi-operator:0.1.0",
                "ready": ready,
                "restartCount": restarts,
                "state": {"waiting": waiting} if waiting else {"running": {}},
                "lastState": {"terminated": last} if last else {},
            }
        ]
    meta = {"name": name, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    return {"metadata": meta, "status": status}


def event(pod_name, reason, message, type_="Warning", count=1):
    return {
        "involvedObject": {"kind": "Pod", "name": pod_name},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": count,
        "lastTimestamp": "2026-01-01T00:00:50Z",
    }


def test_rolled_out_is_ready_and_a_new_generation_is_not():
    assert R.verdict(deployment(available=1), [], [], NOW).state == "ready"
    assert R.verdict(deployment(available=1, observed=1), [], [], NOW).state == "waiting"
    # a rolling update: the old pod is still there
    assert R.verdict(deployment(available=1, replicas=2), [], [], NOW).state == "waiting"
    assert R.verdict(None, [], [], NOW).state == "waiting"


def test_a_bad_image_fails_at_once_with_events_and_advice():
    p = pod(waiting={"reason": "ErrImagePull", "message": 'failed to pull "localhost/mpi-operator:0.1.0": not found'})
    v = R.verdict(
        deployment(),
        [p],
        [event("mpi-operator-abc", "Failed", "Failed to pull image", count=3), event("other", "Failed", "not ours")],
        NOW,
    )
    assert v.state == "failed" and "cannot get its image localhost/mpi-operator:0.1.0 (ErrImagePull" in v.summary
    assert v.events == ["Warning Failed (x3): Failed to pull image"]
    msg = v.message()
    assert "docs/install.md#image" in msg and "mpi_operator_image_repository" in msg
    back_off = pod(waiting={"reason": "ImagePullBackOff", "message": "Back-off pulling image"})
    assert R.verdict(deployment(), [back_off], [], NOW).state == "failed"


def test_a_crash_loop_shows_the_previous_containers_log():
    p = pod(
        waiting={"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"},
        restarts=1,
        last={"exitCode": 1, "reason": "Error"},
    )
    v = R.verdict(deployment(), [p], [], NOW)
    assert v.state == "failed" and v.previous_log and v.container == "mpi-operator"
    assert "keeps exiting (exit code 1, Error; restarted 1 times, CrashLoopBackOff)" in v.summary
    msg = v.message("line 1\nnot allowed to list MPIJobs (403 Forbidden): check RBAC\n")
    assert "Log tail (previous container mpi-operator):\n  line 1\n  not allowed to list MPIJobs" in msg
    assert "RBAC" in msg.split("What to do:")[1]


def test_restarts_without_readiness_are_a_crash_loop_before_the_kubelet_says_so():
    running_again = pod(restarts=2, last={"exitCode": 137, "reason": "OOMKilled"})
    v = R.verdict(deployment(), [running_again], [], NOW)
    assert v.state == "failed" and "exit code 137, OOMKilled" in v.summary
    assert R.verdict(deployment(), [pod(restarts=1, last={"exitCode": 1})], [], NOW).state == "waiting"


def test_unschedulable_after_a_grace_and_not_while_an_autoscaler_adds_a_node():
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        "lastTransitionTime": "2026-01-01T00:00:55Z",
    }
    p = pod(scheduled=cond)
    assert R.verdict(deployment(), [p], [], NOW).state == "waiting"  # 5 s: the scheduler may still find a node
    cond["lastTransitionTime"] = "2026-01-01T00:00:40Z"
    v = R.verdict(deployment(), [p], [], NOW)
    assert v.state == "failed" and "cannot be scheduled: 0/3 nodes are available" in v.summary
    assert "mpi_operator_node_selector" in v.advice
    scale_up = [event("mpi-operator-abc", "TriggeredScaleUp", "pod triggered scale-up", type_="Normal")]
    assert R.verdict(deployment(), [p], scale_up, NOW).state == "waiting"


def test_a_terminating_pod_of_the_old_revision_is_not_diagnosed():
    old = pod(name="old", waiting={"reason": "CrashLoopBackOff"}, restarts=5, deleting=True)
    assert R.verdict(deployment(), [old, pod(name="new")], [], NOW).state == "waiting"


def test_replica_failure_and_progress_deadline():
    quota = {
        "type": "ReplicaFailure",
        "status": "True",
        "reason": "FailedCreate",
        "message": 'pods "mpi-operator-x" is forbidden: exceeded quota',
    }
    v = R.verdict(deployment(conditions=[quota]), [], [], NOW)
    assert v.state == "failed" and "exceeded quota" in v.summary
    deadline = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "m"}
    assert R.verdict(deployment(conditions=[deadline]), [], [], NOW).state == "failed"


def test_timeout_names_the_unready_pod_and_its_events():
    p = pod(name="slow", restarts=0)
    p["status"]["conditions"].append(
        {"type": "Ready", "status": "False", "message": "containers with unready status: [mpi-operator]"}
    )
    v = R.timed_out(deployment(), [p], [event("slow", "Unhealthy", "Readiness probe failed: HTTP 503")], 300)
    assert v.state == "failed" and v.pod == "slow" and v.container == "mpi-operator"
    assert v.summary.startswith("not ready after 300s (0 of 1 replicas available); pod slow: containers with unready")
    assert v.events == ["Warning Unhealthy: Readiness probe failed: HTTP 503"]


def test_a_pod_on_a_simulated_node_fails_even_when_rolled_out():
    """kwok reports a pod Running on its nodes and runs nothing: an operator there would never reconcile."""
    on_kwok = pod(ready=True)
    on_kwok["spec"] = {"nodeName": "kwok-node-0"}
    nodes = {"kwok-node-0": {"metadata": {"name": "kwok-node-0", "annotations": {"kwok.x-k8s.io/node": "fake"}}}}
    v = R.verdict(deployment(available=1), [on_kwok], [], NOW, nodes)
    assert v.state == "failed" and v.pod == "mpi-operator-abc"
    assert "scheduled to kwok-node-0, a simulated node (kwok.x-k8s.io/node=fake" in v.summary
    msg = v.message()
    assert "mpi_operator_node_selector" in msg and "examples/local/install-real-node.yml" in msg
    # A real node, an unread node (no RBAC) and a pod being deleted are not judged.
    real = {"kwok-node-0": {"metadata": {"name": "kwok-node-0", "annotations": {"node.alpha.kubernetes.io/ttl": "0"}}}}
    assert R.verdict(deployment(available=1), [on_kwok], [], NOW, real).state == "ready"
    assert R.verdict(deployment(available=1), [on_kwok], [], NOW, {"kwok-node-0": {}}).state == "ready"
    assert R.verdict(deployment(available=1), [on_kwok], [], NOW).state == "ready"
    leaving = pod(ready=True, deleting=True)
    leaving["spec"] = {"nodeName": "kwok-node-0"}
    assert R.verdict(deployment(available=1), [leaving], [], NOW, nodes).state == "ready"
