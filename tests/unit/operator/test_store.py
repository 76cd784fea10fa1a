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
