"""The store of what the watches saw (mpijob_operator/store.py): each job's world as the warm run's batch gets it."""

from __future__ import annotations

import json

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import job_key
from mpijob_operator.store import Store, encode, kept
from mpijob_operator.watch import resources

RESOURCES = resources("app")
NAMES = {r.name for r in RESOURCES}
KEY = job_key("ns", "pi")


def obj(name: str, rv: str = "1", **extra) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, **extra}}


def listed_store() -> Store:
    store = Store(NAMES)
    for r in RESOURCES:
        store.relisting(r.name, r.kind, r.api_version)
        store.relisted(r.name)
    return store


def put(store: Store, kind: str, o: dict, event: str = "ADDED") -> None:
    store.put(kind, [KEY], o, encode(o), event)


def world(store: Store) -> dict | None:
    return json.loads(store.entry(KEY)).get("seen")


def full_store() -> Store:
    store = listed_store()
    put(store, "MPIJob", obj("pi", "10"))
    put(store, "Service", obj("pi"))
    put(store, "ConfigMap", obj("pi-config"))
    put(store, "ConfigMap", obj("pi-record"))
    put(store, "ConfigMap", obj("other-config"))
    put(store, "Secret", obj("pi-ssh"))
    put(store, "Job", obj("pi-launcher"))
    for pod in ("pi-worker-0", "pi-worker-1"):
        put(store, "Pod", obj(pod, labels={"training.kubeflow.org/job-name": "pi"}))
    put(store, "Pod", obj("x-worker-0", labels={"training.kubeflow.org/job-name": "x"}))
    return store


def test_a_world_holds_the_job_and_its_children_by_name() -> None:
    seen = world(full_store())
    assert seen is not None
    assert seen["mpijob"]["metadata"]["resourceVersion"] == "10"
    assert {k: v["metadata"]["name"] for k, v in seen.items() if k not in ("mpijob", "pods")} == {
        "service": "pi",
        "config_map": "pi-config",
        "record": "pi-record",
        "secret": "pi-ssh",
        "launcher": "pi-launcher",
    }
    assert sorted(p["metadata"]["name"] for p in seen["pods"]) == ["pi-worker-0", "pi-worker-1"]
    assert json.loads(full_store().entry(KEY))["name"] == "pi"  # the entry is the key's, with the world in it


def test_no_world_until_every_watch_has_listed_or_while_one_relists() -> None:
    store = Store(NAMES)
    put(store, "MPIJob", obj("pi"))
    assert world(store) is None  # nothing listed yet: the module reads the job
    store = full_store()
    pods = next(r for r in RESOURCES if r.kind == "Pod")
    store.relisting(pods.name, pods.kind, pods.api_version)
    assert world(store) is None  # a relist forgets the pods it kept and holds the worlds back
    store.relisted(pods.name)
    assert world(store)["pods"] == []


def test_a_job_not_seen_yet_is_read_and_a_deleted_object_leaves_the_world() -> None:
    store = listed_store()
    assert world(store) is None
    store = full_store()
    put(store, "Pod", obj("pi-worker-1", labels={"training.kubeflow.org/job-name": "pi"}), "DELETED")
    put(store, "Secret", obj("pi-ssh"), "DELETED")
    seen = world(store)
    assert [p["metadata"]["name"] for p in seen["pods"]] == ["pi-worker-0"] and "secret" not in seen
    put(store, "MPIJob", obj("pi"), "DELETED")
    assert world(store) is None


def test_after_a_retry_the_next_run_reads_then_trusts_again() -> None:
    store = full_store()
    store.distrust(KEY)
    assert world(store) is None
    assert world(store) is not None


def test_a_status_write_updates_the_kept_job_unless_the_watch_brought_a_newer_one() -> None:
    store = full_store()
    store.wrote_status(KEY, "10", {"resourceVersion": "11", "status": {"conditions": []}})
    seen = world(store)["mpijob"]
    assert seen["metadata"]["resourceVersion"] == "11" and seen["status"] == {"conditions": []}
    put(store, "MPIJob", obj("pi", "13"))
    store.wrote_status(KEY, "11", {"resourceVersion": "12", "status": {}})  # the watch is ahead: kept as it is
    assert world(store)["mpijob"]["metadata"]["resourceVersion"] == "13"


def test_what_is_kept_leaves_the_managed_fields_out() -> None:
    o = {"metadata": {"name": "pi", "managedFields": [{"manager": "kubectl"}]}, "spec": {"a": [1, 2]}}
    assert json.loads(kept("Job", o)) == {"metadata": {"name": "pi"}, "spec": {"a": [1, 2]}}
    assert kept("Job", {"kind": "Status"}) == encode({"kind": "Status"})


def test_of_a_pod_only_its_node_and_containers_names_are_kept_of_its_spec_and_of_a_secret_no_value() -> None:
    spec = {"nodeName": "n1", "containers": [{"name": "main", "env": [{"name": "X", "value": "1"}]}], "volumes": [{}]}
    pod = {"metadata": {"name": "pi-worker-0", "managedFields": [{}]}, "spec": spec, "status": {"phase": "Running"}}
    assert json.loads(kept("Pod", pod)) == {
        "metadata": {"name": "pi-worker-0"},
        "spec": {"nodeName": "n1", "containers": [{"name": "main"}]},
        "status": {"phase": "Running"},
    }
    assert pod["spec"] is spec and "volumes" in spec  # the watch's fingerprint still reads the object it decoded
    secret = {"metadata": {"name": "pi-ssh"}, "data": {"ssh-privatekey": "c2VjcmV0", "ssh-publickey": "cHVi"}}
    assert json.loads(kept("Secret", secret))["data"] == {"ssh-privatekey": "", "ssh-publickey": ""}
    assert b"c2VjcmV0" not in kept("Secret", secret) and secret["data"]["ssh-privatekey"] == "c2VjcmV0"


def test_sizes_count_what_is_kept() -> None:
    sizes = full_store().sizes()
    assert sizes["objects"] == 10 and sizes["bytes"] > 0


def launcher_pod(name: str, uid: str, restarts: int) -> dict:
    """A launcher pod as the watch shows it: its container failed `restarts` times (restartPolicy OnFailure)."""
    term = {"exitCode": 1, "reason": "Error", "message": "mpirun: --allow-run-as-root\n"}
    labels = {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/job-role": "launcher"}
    pod = obj(name, uid=uid, labels=labels, deletionTimestamp="2026-01-01T00:00:09Z")
    pod["status"] = {
        "containerStatuses": [{"name": "launcher", "restartCount": restarts, "state": {"terminated": term}}]
    }
    return pod


def test_a_failed_launcher_pod_deleted_before_a_pass_saw_it_stays_in_the_world_until_its_record_has_it() -> None:
    store = full_store()
    failed, clean = launcher_pod("pi-launcher-a", "uid-a", 1), launcher_pod("pi-launcher-b", "uid-b", 0)
    for pod in (failed, clean):
        put(store, "Pod", pod)
        put(store, "Pod", pod, "DELETED")
    seen = world(store)
    # the failed one, as its DELETED event last showed it; the one that ended by the deletion itself is not kept
    assert [p["metadata"]["name"] for p in seen["gone_pods"]] == ["pi-launcher-a"]
    assert seen["gone_pods"][0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    assert "pi-launcher-a" not in [p["metadata"]["name"] for p in seen["pods"]]
    # a record that names another pod changes nothing; one that names it ends it
    other = {"pods": [{"uid": "uid-other"}]}
    put(store, "ConfigMap", {**obj("pi-record", "2"), "data": {"record.json": json.dumps(other)}})
    assert len(world(store)["gone_pods"]) == 1
    put(
        store, "ConfigMap", {**obj("pi-record", "3"), "data": {"record.json": json.dumps({"pods": [{"uid": "uid-a"}]})}}
    )
    assert "gone_pods" not in world(store)


def test_a_launcher_pod_is_kept_as_it_was_last_seen_failing_not_as_its_deletion_ended_it() -> None:
    # The kubelet drops the container's lastState (the failure that restarted it) once the pod is deleted, and the
    # container running again then ends by the deletion's kill.
    store = full_store()
    failing = launcher_pod("pi-launcher-a", "uid-a", 1)
    del failing["metadata"]["deletionTimestamp"]
    status = failing["status"]["containerStatuses"][0]
    status["lastState"], status["state"] = status.pop("state"), {"running": {}}
    put(store, "Pod", failing, "MODIFIED")
    killed = launcher_pod("pi-launcher-a", "uid-a", 1)
    killed["status"]["containerStatuses"][0]["state"]["terminated"] = {"exitCode": 137, "reason": "Error"}
    put(store, "Pod", killed, "MODIFIED")  # being deleted: not what is kept
    put(store, "Pod", killed, "DELETED")
    (kept_pod,) = world(store)["gone_pods"]
    assert kept_pod["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    # nothing is kept of a job's launcher pods once the job itself is gone (its deletion takes them), nor of one its
    # record has already
    put(store, "Pod", failing, "MODIFIED")
    put(store, "MPIJob", obj("pi", "11"), "DELETED")
    put(store, "Pod", killed, "DELETED")
    put(store, "MPIJob", obj("pi", "12"))
    assert "gone_pods" not in world(store)
    put(
        store, "ConfigMap", {**obj("pi-record", "4"), "data": {"record.json": json.dumps({"pods": [{"uid": "uid-a"}]})}}
    )
    put(store, "Pod", failing, "MODIFIED")
    put(store, "Pod", killed, "DELETED")
    assert "gone_pods" not in world(store) and store.sizes() == full_size(store)


def full_size(store: Store) -> dict:
    """What `store` would hold without gone or failing pods."""
    return {
        "objects": len(store._mpijobs) + sum(map(len, store._named.values())) + sum(map(len, store._pods.values())),
        "bytes": sum(map(len, store._mpijobs.values()))
        + sum(sum(map(len, v.values())) for v in store._named.values())
        + sum(sum(map(len, v.values())) for v in store._pods.values()),
    }


def test_the_gone_pods_are_bounded_per_job_and_go_with_the_job_or_a_relist() -> None:
    store = full_store()
    for i in range(5):
        pod = launcher_pod(f"pi-launcher-{i}", f"uid-{i}", 1)
        put(store, "Pod", pod, "DELETED")
    assert [p["metadata"]["name"] for p in world(store)["gone_pods"]] == [f"pi-launcher-{i}" for i in (2, 3, 4)]
    before = store.sizes()["objects"]
    put(store, "MPIJob", obj("pi", "11"), "DELETED")
    assert store.sizes()["objects"] == before - 1 - 3  # the job and its gone pods
    put(store, "MPIJob", obj("pi", "12"))
    put(store, "Pod", launcher_pod("pi-launcher-9", "uid-9", 2), "DELETED")
    pods = next(r for r in RESOURCES if r.kind == "Pod")
    store.relisting(pods.name, pods.kind, pods.api_version)
    store.relisted(pods.name)
    assert "gone_pods" not in world(store)
