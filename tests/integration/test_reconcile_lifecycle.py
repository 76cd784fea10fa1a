"""The mpijob_reconcile module over a job's life, against the local cluster, run as a user or the operator runs it
(`ansible` ad hoc): check mode, kwok running and ending the pods, cleanup and TTL, failures, malformed jobs, children
it does not own, elastic scaling, suspend/resume, conflicts, a batch of fifty. (tests/integration/
test_reconcile_kubeflow.py: the Kubeflow contract of what it creates.)
"""

from __future__ import annotations

import hashlib
import time

import pytest
import yaml

from hack.lib.wait import wait_until
from tests.integration._fixtures.reconcile import NOWHERE, _core, _on_kwok, create_as_written, load, run_reconcile
from tests.support.mpijob import condition, create_mpijob, event_reasons, get_mpijob, patch_mpijob

pytestmark = pytest.mark.integration


def test_check_mode_plans_and_changes_nothing(reconcile, api_client, namespace) -> None:
    create_mpijob(api_client, namespace, _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE))
    run = reconcile([{"namespace": namespace, "name": "openmpi-helloworld"}], check=True)
    assert run.result["changed"]
    assert ("create", "Job", "openmpi-helloworld-launcher") in [
        (a["action"], a["kind"], a["name"]) for a in run.job("openmpi-helloworld")["actions"]
    ]
    core, batch = _core(api_client)
    assert core.list_namespaced_pod(namespace).items == []
    assert batch.list_namespaced_job(namespace).items == []
    assert "status" not in get_mpijob(api_client, namespace, "openmpi-helloworld")


def test_lifecycle_cleanup_and_ttl(loop, api_client, namespace) -> None:
    """kwok runs the workers and completes the launcher: Running, Succeeded, cleanPodPolicy All (launcher pods
    too), then ttlSecondsAfterFinished deletes the MPIJob itself."""
    body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
    body["spec"]["runPolicy"] = {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 20}
    create_mpijob(api_client, namespace, body)
    name = body["metadata"]["name"]
    job = loop(namespace, name, lambda j, _: condition(j, "Succeeded") is not None)
    assert condition(job, "Succeeded")["status"] == "True" and job["status"]["completionTime"]
    core, _ = _core(api_client)

    def pods_gone(_j, _run):
        return not [p for p in core.list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp]

    loop(namespace, name, pods_gone, timeout=30)
    assert "MPIJobSucceeded" in event_reasons(api_client, namespace, name)
    loop(namespace, name, lambda j, run: j is None and run.job(name)["deleted"], timeout=60)


def test_failed_worker_shows_in_conditions(loop, api_client, namespace) -> None:
    body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    worker.setdefault("metadata", {})["annotations"] = {"kwok.mpi.operator/outcome": "fail"}
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"].setdefault("metadata", {})["annotations"] = {
        "kwok.mpi.operator/outcome": "run"
    }
    create_mpijob(api_client, namespace, body)
    job = loop(
        namespace,
        "openmpi-helloworld",
        lambda j, _: (condition(j, "Running") or {}).get("reason") == "MPIJobWorkerFailed",
    )
    assert "workers failed: openmpi-helloworld-worker-" in condition(job, "Running")["message"]
    assert job["status"]["replicaStatuses"]["Worker"].get("failed")
    assert "MPIJobWorkerFailed" in event_reasons(api_client, namespace, "openmpi-helloworld")


MALFORMED = [  # shapes an older or looser CRD lets through; the first one this cluster's CRD accepts is used
    ("spec.mpiReplicaSpecs.Launcher.replicas", lambda s: s["mpiReplicaSpecs"]["Launcher"].update(replicas=2)),
    ("spec.mpiReplicaSpecs.Worker.replicas", lambda s: s["mpiReplicaSpecs"]["Worker"].update(replicas=0)),
    ("spec.mpiImplementation", lambda s: s.update(mpiImplementation="MVAPICH")),
    ("spec.runPolicy.cleanPodPolicy", lambda s: s["runPolicy"].update(cleanPodPolicy="Sometimes")),
    (
        "spec.runPolicy.schedulingPolicy.minAvailable",
        lambda s: s["runPolicy"].update(schedulingPolicy={"minAvailable": -1}),
    ),  # the CRD of this collection lets it by
]


def test_malformed_job_gets_failed_condition_and_warning(reconcile, api_client, namespace) -> None:
    from kubernetes.client.exceptions import ApiException

    for i, (field, mutate) in enumerate(MALFORMED):  # noqa: B007 (field is used after the loop)
        body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
        body["metadata"]["name"] = f"bad{i}"
        mutate(body["spec"])
        try:
            create_mpijob(api_client, namespace, body)
            break
        except ApiException as exc:
            if exc.status != 422:
                raise
    else:
        pytest.skip("this cluster's CRD rejects every malformed shape")
    good = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
    create_mpijob(api_client, namespace, good)
    run = reconcile(
        [{"namespace": namespace, "name": f"bad{i}"}, {"namespace": namespace, "name": "openmpi-helloworld"}]
    )
    bad = run.job(f"bad{i}")
    assert field in bad["error"] and not bad["retry"]
    cond = condition(get_mpijob(api_client, namespace, f"bad{i}"), "Failed")
    assert (cond["status"], cond["reason"]) == ("True", "ValidationError") and field in cond["message"]
    core, _ = _core(api_client)
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name=bad{i}").items
    assert any(e.type == "Warning" and e.reason == "ValidationError" and field in e.message for e in events)
    assert run.job("openmpi-helloworld")["error"] is None  # one job's failure never fails the others
    assert not reconcile([{"namespace": namespace, "name": f"bad{i}"}]).result["changed"]


def test_a_child_the_api_server_refuses_fails_the_job_naming_its_templates_field(
    reconcile, api_client, namespace
) -> None:
    """The CRD lets a container named "Pi" through; the launcher Job built from it is refused (422). The job is then
    Failed (ValidationError) naming its own template's field, once: the next reconcile writes nothing."""
    body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["name"] = "Pi"
    create_mpijob(api_client, namespace, body)
    name = body["metadata"]["name"]
    job_ref = [{"namespace": namespace, "name": name}]
    run = reconcile(job_ref)
    assert "422" in run.job(name)["error"] and run.job(name)["outcome"] == "error"
    field = "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].name"
    cond = condition(get_mpijob(api_client, namespace, name), "Failed")
    assert (cond["status"], cond["reason"]) == ("True", "ValidationError")
    assert cond["message"].startswith(f'Found validation errors: {field}: Invalid value: "Pi"')
    core, _ = _core(api_client)

    def validation_events() -> int:
        return sum(
            e.count or 1
            for e in core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
            if e.reason == "ValidationError"
        )

    assert validation_events() == 1
    again = reconcile(job_ref)
    assert "status" not in [a["action"] for a in again.job(name)["actions"]]
    assert validation_events() == 1


def test_child_owned_by_someone_else_is_not_taken_over(reconcile, api_client, namespace) -> None:
    from kubernetes import client

    core, _ = _core(api_client)
    core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="mine-config"), data={"hostfile": "users own this\n"}),
    )
    for name in ("mine", "other"):
        body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
        body["metadata"]["name"] = name
        create_mpijob(api_client, namespace, body)
    run = reconcile([{"namespace": namespace, "name": "mine"}, {"namespace": namespace, "name": "other"}])
    mine = run.job("mine")
    assert mine["retry"]
    assert mine["error"] == 'Resource "mine-config" of Kind "ConfigMap" already exists and is not managed by MPIJob'
    assert core.read_namespaced_config_map("mine-config", namespace).data == {"hostfile": "users own this\n"}
    assert "ErrResourceExists" in event_reasons(api_client, namespace, "mine")
    assert run.job("other")["error"] is None and core.read_namespaced_pod("other-worker-1", namespace)


def test_vanished_job_is_reported_deleted(reconcile, namespace) -> None:
    run = reconcile([{"namespace": namespace, "name": "never-was"}])
    job = run.job("never-was")
    assert (job["deleted"], job["status"], job["error"], job["actions"]) == (True, None, None, [])
    assert not run.result["changed"]


def test_unreachable_api_server_fails_the_module(tmp_path, operator_crd) -> None:
    kubeconfig = tmp_path / "dead.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "dead",
                "clusters": [{"name": "dead", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "dead", "user": {"token": "x"}}],
                "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "dead"}}],
            }
        )
    )
    run = run_reconcile(str(kubeconfig), [{"namespace": "default", "name": "pi"}])
    assert run.result.get("failed") and "unreachable" in run.result["msg"]


def test_elastic_scaling(reconcile, api_client, namespace) -> None:
    body = _on_kwok(load("tensorflow-mnist-elastic.v1.yaml"))
    body["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {
        "annotations": {"kwok.mpi.operator/outcome": "run"}
    }  # horovodrun keeps running while workers come and go
    create_as_written(api_client, namespace, body)
    name = body["metadata"]["name"]
    key = [{"namespace": namespace, "name": name}]
    reconcile(key)
    core, _ = _core(api_client)
    wait_until(
        lambda: all(
            p.status.phase == "Running"
            for p in core.list_namespaced_pod(namespace, label_selector="training.kubeflow.org/job-role=worker").items
        ),
        30,
        what="workers Running",
    )
    reconcile(key)
    script = core.read_namespaced_config_map(f"{name}-config", namespace).data["discover_hosts.sh"]
    assert script.splitlines()[1:] == [f"echo {name}-worker-{i}.{name}.{namespace}.svc:1" for i in range(3)]
    patch_mpijob(api_client, namespace, name, {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    run = reconcile(key)
    assert not [a for a in run.job(name)["actions"] if a["action"] == "delete"]  # the launcher is told first
    data = core.read_namespaced_config_map(f"{name}-config", namespace).data
    assert data["hostfile"] == f"{name}-worker-0.{name}.{namespace}.svc slots=1\n"
    assert data["discover_hosts.sh"] == f"#!/bin/sh\necho {name}-worker-0.{name}.{namespace}.svc:1\n"
    reconcile(key)  # the running launcher pod learns of the new list (the kubelet rewrites its volumes)
    [launcher] = core.list_namespaced_pod(namespace, label_selector="training.kubeflow.org/job-role=launcher").items
    digest = hashlib.sha256(data["discover_hosts.sh"].encode()).hexdigest()[:16]
    assert launcher.metadata.annotations["mpi.operator/discover-hosts"].startswith(f"{digest}@")
    told = time.monotonic()
    deletes: list[str] = []
    while not deletes and time.monotonic() - told < 20:
        time.sleep(1)
        deletes = [a["name"] for a in reconcile(key).job(name)["actions"] if a["action"] == "delete"]
    assert deletes == [f"{name}-worker-2", f"{name}-worker-1"]  # highest index first
    assert time.monotonic() - told >= 3  # C.HOSTS_NOTICE_S (5 s) after the annotation's time, give or take a second


@pytest.mark.slow
def test_batch_of_fifty_jobs_in_one_call(reconcile, api_client, namespace, capsys, request) -> None:
    names = [f"b{i:02d}" for i in range(50)]
    for name in names:
        body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE)  # a still world for the no-op call
        body["metadata"]["name"] = name
        body["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 4
        create_mpijob(api_client, namespace, body)
    keys = [{"namespace": namespace, "name": n} for n in names]
    request.addfinalizer(
        lambda: _core(api_client)[0].delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    )  # 250 unschedulable pods would keep the scheduler busy for later tests
    first = reconcile(keys)
    assert all(j["error"] is None for j in first.jobs), [j for j in first.jobs if j["error"]]
    core, batch = _core(api_client)
    workers = core.list_namespaced_pod(namespace, label_selector="training.kubeflow.org/job-role=worker").items
    assert len(workers) == 200 and len(batch.list_namespaced_job(namespace).items) == 50
    started = time.monotonic()
    second = reconcile(keys)
    writes = [a for j in second.jobs for a in j["actions"] if a["action"] not in ("status", "event")]
    with capsys.disabled():
        print(
            f"\n50 jobs x 4 workers: first call {first.seconds:.1f}s {first.result['api_calls']} API calls; "
            f"second call {time.monotonic() - started:.1f}s {second.result['api_calls']} API calls"
        )
    assert writes == []
    # 5 creates + 1 status + 1 event per job plus the worker pods, and one LIST per kind: nothing per-job on reads
    assert first.result["api_calls"] <= 50 * (4 + 7) + 10


def test_wait_for_workers_ready_is_honoured_after_resume(reconcile, api_client, namespace) -> None:
    body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
    body["spec"].update(launcherCreationPolicy="WaitForWorkersReady")
    body["spec"]["runPolicy"]["suspend"] = True
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {
        "annotations": {"kwok.mpi.operator/outcome": "run"}
    }
    create_mpijob(api_client, namespace, body)
    key = [{"namespace": namespace, "name": "openmpi-helloworld"}]
    reconcile(key)
    core, batch = _core(api_client)
    launcher = batch.read_namespaced_job("openmpi-helloworld-launcher", namespace)
    assert launcher.spec.suspend is True and core.list_namespaced_pod(namespace).items == []
    assert condition(get_mpijob(api_client, namespace, "openmpi-helloworld"), "Suspended")["status"] == "True"

    patch_mpijob(api_client, namespace, "openmpi-helloworld", {"spec": {"runPolicy": {"suspend": False}}})
    reconcile(key)
    # Kubeflow unsuspends here, before any worker exists (kubeflow/mpi-operator#615); we wait for Ready workers
    assert batch.read_namespaced_job("openmpi-helloworld-launcher", namespace).spec.suspend is True
    wait_until(
        lambda: (
            all(
                any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
                for p in core.list_namespaced_pod(namespace).items
            )
            and len(core.list_namespaced_pod(namespace).items) == 2
        ),
        30,
        what="2 Ready workers",
    )
    reconcile(key)
    assert batch.read_namespaced_job("openmpi-helloworld-launcher", namespace).spec.suspend is False
    job = get_mpijob(api_client, namespace, "openmpi-helloworld")
    assert condition(job, "Suspended")["reason"] == "MPIJobResumed"


def test_stale_status_write_is_a_conflict_to_retry(api_client, namespace, operator_crd, kubeconfig) -> None:
    """The status goes through the status subresource with the resourceVersion that was read: a concurrent change
    makes it a 409, reported as `retry`, and nothing is overwritten."""
    from ansible_collections.mpi.operator.plugins.module_utils.kube import apply, auth, rest, sshkeys
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.children import Options
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import World
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.planner import plan_job
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult

    create_mpijob(api_client, namespace, _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE))
    client = rest.Rest(auth.api_client({"kubeconfig": kubeconfig}))
    stale = get_mpijob(api_client, namespace, "openmpi-helloworld")
    patch_mpijob(api_client, namespace, "openmpi-helloworld", {"metadata": {"labels": {"touched": "yes"}}})
    from datetime import UTC, datetime

    plan = plan_job(stale, World(mpijob=stale), Options(), datetime.now(UTC), sshkeys.generate_ssh_keys)
    status_only = type(plan)(
        [a for a in plan.actions if a.action == "status"], plan.status, transitions=plan.transitions
    )
    result = JobResult(namespace=namespace, name="openmpi-helloworld")
    apply.Applier(client, stale, result).apply(status_only)
    assert result.retry and "409" in result.error
    assert status_only.transitions and result.transitions == []  # the Created transition not written: not reported
    assert "status" not in get_mpijob(api_client, namespace, "openmpi-helloworld")


def test_vanished_children_are_recreated(reconcile, api_client, namespace) -> None:
    create_mpijob(api_client, namespace, _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE))
    key = [{"namespace": namespace, "name": "openmpi-helloworld"}]
    reconcile(key)
    core, _ = _core(api_client)
    core.delete_namespaced_config_map("openmpi-helloworld-config", namespace)
    core.delete_namespaced_pod("openmpi-helloworld-worker-1", namespace, grace_period_seconds=0)
    wait_until(
        lambda: (
            not [
                p for p in core.list_namespaced_pod(namespace).items if p.metadata.name == "openmpi-helloworld-worker-1"
            ]
        ),
        30,
        what="worker-1 gone",
    )
    run = reconcile(key)
    assert [(a["action"], a["kind"], a["name"]) for a in run.job("openmpi-helloworld")["actions"]] == [
        ("create", "ConfigMap", "openmpi-helloworld-config"),
        ("create", "Pod", "openmpi-helloworld-worker-1"),
    ]


def test_evicted_job_completes_and_is_cleaned_up(loop, api_client, namespace) -> None:
    """Kubeflow marks an evicted job Failed but never sets completionTime, so cleanup never runs
    (kubeflow/mpi-operator#647); here it does, and the still-running launcher Job is suspended."""
    body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"))
    body["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {
        "annotations": {"kwok.mpi.operator/outcome": "run"}
    }
    body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {"kwok.mpi.operator/outcome": "evict"}
    }
    create_mpijob(api_client, namespace, body)
    name = body["metadata"]["name"]
    job = loop(namespace, name, lambda j, _: (condition(j, "Failed") or {}).get("reason") == "MPIJobEvicted")
    assert job["status"]["completionTime"] and condition(job, "Failed")["message"].endswith("workers are evicted")
    core, batch = _core(api_client)
    loop(
        namespace,
        name,
        lambda _j, _r: not [p for p in core.list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp],
        timeout=60,
    )
    assert batch.read_namespaced_job(f"{name}-launcher", namespace).spec.suspend is True
    assert "MPIJobEvicted" in event_reasons(api_client, namespace, name)


def test_a_batch_writes_every_jobs_status_before_what_follows_it(
    api_client, namespace, operator_crd, kubeconfig
) -> None:
    """In a batch, each job's actions up to its status write (the Events of the transitions it writes just before
    it) go first for every job, then the rest (a finished job's clean-up, the other events): the last job's outcome
    does not wait for the other jobs' deletions."""
    from ansible_collections.mpi.operator.plugins.module_utils.kube.reconcile import reconcile_batch
    from ansible_collections.mpi.operator.plugins.module_utils.kube.rest import connect
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.children import Options

    names = [f"order-{i}" for i in range(3)]
    for name in names:
        body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE)
        body["metadata"]["name"] = name
        create_mpijob(api_client, namespace, body)
    calls: list[tuple[str, str]] = []

    class Recorded:  # the real transport, each request noted
        def __init__(self, inner):
            self.inner = inner

        def send(self, method, path, *args):
            calls.append((method, path))
            return self.inner.send(method, path, *args)

    rest = connect({"kubeconfig": kubeconfig}, wrap=Recorded)
    results = reconcile_batch(rest, [{"namespace": namespace, "name": n} for n in names], Options(), threads=2)
    assert [r.error for r in results] == [None] * 3
    statuses = [i for i, (m, p) in enumerate(calls) if m == "PUT" and p.endswith("/status")]
    events = [i for i, (m, p) in enumerate(calls) if m == "POST" and p.endswith("/events")]
    assert len(statuses) == 3 and len(events) == 3, calls
    # each status write comes after its job's MPIJobCreated Event (the only events of this pass)
    assert all(sum(e < s for e in events) >= k + 1 for k, s in enumerate(sorted(statuses))), calls


def test_a_transition_event_written_before_a_lost_status_is_not_counted_twice(reconcile, api_client, namespace) -> None:
    """The operator killed between a transition's Event and the status that records it: the next pass makes the
    same transition and finds its Event; it stays one Event, count 1 (make chaos found Events lost when they came
    after the status)."""
    from kubernetes import client

    create_mpijob(api_client, namespace, _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE))
    name = "openmpi-helloworld"
    reconcile([{"namespace": namespace, "name": name}])
    job = get_mpijob(api_client, namespace, name)
    assert condition(job, "Created")["status"] == "True"
    # the status write lost: the job as the next pass reads it has no condition, its Event exists
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object_status(
        "kubeflow.org", "v2beta1", namespace, "mpijobs", name, {**job, "status": {}}
    )
    run = reconcile([{"namespace": namespace, "name": name}])
    assert ("Created", "True") in [(t["type"], t["status"]) for t in run.job(name)["transitions"]]
    created = [
        e
        for e in client.CoreV1Api(api_client).list_namespaced_event(namespace).items
        if e.reason == "MPIJobCreated" and e.involved_object.name == name
    ]
    assert [(e.count or 1) for e in created] == [1]
