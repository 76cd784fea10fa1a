"""Event -> MPIJob mapping and watch bookkeeping."""

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Key, job_key
from mpijob_operator.watch import (
    Relevance,
    WatchError,
    WatchState,
    content_fingerprint,
    job_fingerprint,
    mpijob_fingerprint,
    mpijob_keys,
    owner_keys,
    pod_fingerprint,
    pod_keys,
    pod_keys_for,
    resources,
)


def owned(kind="MPIJob", name="pi", api="kubeflow.org/v2beta1", controller=True, ns="team"):
    return {
        "metadata": {
            "name": "x",
            "namespace": ns,
            "ownerReferences": [{"apiVersion": api, "kind": kind, "name": name, "controller": controller, "uid": "u"}],
        }
    }


def test_mpijob_maps_to_itself():
    assert mpijob_keys({"metadata": {"name": "pi", "namespace": "team"}}) == [job_key("team", "pi")]
    assert mpijob_keys({"metadata": {}}) == []


def test_children_map_by_controller_owner_reference():
    assert owner_keys(owned()) == [job_key("team", "pi")]
    assert owner_keys(owned(api="kubeflow.org/v1")) == [job_key("team", "pi")]
    assert owner_keys(owned(controller=False)) == []
    assert owner_keys(owned(kind="Deployment")) == []
    assert owner_keys(owned(api="example.com/v1")) == []
    assert owner_keys({"metadata": {"name": "lonely"}}) == []


def test_worker_pod_maps_by_owner_and_launcher_pod_through_its_job_label():
    assert pod_keys(owned(name="pi")) == [job_key("team", "pi")]
    launcher = {
        "metadata": {
            "name": "pi-launcher-x",
            "namespace": "team",
            "labels": {"training.kubeflow.org/job-name": "pi"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi-launcher", "controller": True}],
        }
    }
    assert pod_keys(launcher) == [job_key("team", "pi")]
    stray = {"metadata": {"name": "p", "namespace": "team", "labels": {"training.kubeflow.org/job-name": "pi"}}}
    assert pod_keys(stray) == []


def test_every_child_kind_is_watched_and_pods_by_the_kubeflow_label():
    by_name = {r.name: r for r in resources("app")}
    assert set(by_name) == {"mpijobs", "pods", "jobs", "services", "configmaps", "secrets"}
    assert by_name["pods"].label_selector == "training.kubeflow.org/operator-name=mpi-operator"
    assert by_name["mpijobs"].url("") == "/apis/kubeflow.org/v2beta1/mpijobs"
    assert by_name["pods"].url("team") == "/api/v1/namespaces/team/pods"
    assert by_name["jobs"].url("") == "/apis/batch/v1/jobs"


T9K, BDAP = "batch.tensorstack.dev/v1beta1", "batch.test.bdap.com/v1"


def test_jobs_of_the_other_apis_key_with_their_api_version():
    """A T9k or bdap job of the same name as a kubeflow.org job in one namespace is another job (another key)."""
    assert mpijob_keys({"apiVersion": T9K, "metadata": {"name": "pi", "namespace": "team"}}) == [Key("team", "pi", T9K)]
    assert mpijob_keys({"apiVersion": "kubeflow.org/v1", "metadata": {"name": "pi", "namespace": "team"}}) == [
        job_key("team", "pi")
    ]
    assert owner_keys(owned(api=BDAP)) == [Key("team", "pi", BDAP)]
    assert owner_keys(owned(api=T9K)) == [Key("team", "pi", T9K)]
    assert owner_keys(owned(api="batch.tensorstack.dev/v2")) == [Key("team", "pi", T9K)]  # keys name the served version


def test_a_launcher_pods_label_concerns_that_name_in_every_watched_api():
    launcher = {
        "metadata": {
            "name": "pi-launcher-x",
            "namespace": "team",
            "labels": {"training.kubeflow.org/job-name": "pi"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi-launcher", "controller": True}],
        }
    }
    assert pod_keys_for(("kubeflow.org", "batch.tensorstack.dev"))(launcher) == [
        job_key("team", "pi"),
        Key("team", "pi", T9K),
    ]
    assert pod_keys_for(("batch.tensorstack.dev",))(owned(api=BDAP)) == [Key("team", "pi", BDAP)]


def test_each_chosen_api_has_its_own_mpijob_watch():
    by_name = {
        r.name: r for r in resources("app", apis=("kubeflow.org", "batch.tensorstack.dev", "batch.test.bdap.com"))
    }
    assert by_name["mpijobs"].url("") == "/apis/kubeflow.org/v2beta1/mpijobs"
    assert (
        by_name["mpijobs.batch.tensorstack.dev"].url("t") == "/apis/batch.tensorstack.dev/v1beta1/namespaces/t/mpijobs"
    )
    assert by_name["mpijobs.batch.test.bdap.com"].url("") == "/apis/batch.test.bdap.com/v1/mpijobs"
    assert "mpijobs" not in {r.name for r in resources("app", apis=("batch.test.bdap.com",))}
    with pytest.raises(ValueError, match=r"example\.com"):
        resources("app", apis=("example.com",))


def test_watch_resumes_from_the_last_resource_version_and_bookmarks():
    s = WatchState()
    s.listed("100")
    assert s.event({"type": "ADDED", "object": {"metadata": {"resourceVersion": "101"}}}) == "dispatch"
    assert s.resource_version == "101"
    assert s.event({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "150"}}}) == "skip"
    assert s.resource_version == "150"
    assert s.event({"type": "DELETED", "object": {"metadata": {"resourceVersion": "151"}}}) == "dispatch"


def test_410_gone_forces_a_relist():
    s = WatchState()
    s.listed("100")
    assert s.event({"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}) == "relist"
    assert s.resource_version is None


def test_other_watch_errors_raise():
    s = WatchState()
    with pytest.raises(WatchError, match="500"):
        s.event({"type": "ERROR", "object": {"code": 500, "reason": "InternalError", "message": "boom"}})


def pod(phase, ready="True", uid="p1", deleting=False, node=None):
    meta = {"uid": uid, "name": "pi-worker-0"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]},
    }


def test_pod_events_count_only_when_what_the_status_reads_changes():
    relevant = Relevance(pod_fingerprint)
    assert relevant("ADDED", pod("Pending", "False"))
    assert not relevant("MODIFIED", pod("Pending", "False", node="n1"))  # bound to a node: nothing to do
    assert relevant("MODIFIED", pod("Running", "False", node="n1"))
    assert relevant("MODIFIED", pod("Running", "True", node="n1"))
    assert not relevant("MODIFIED", pod("Running", "True", node="n1"))
    assert relevant("MODIFIED", pod("Running", "True", deleting=True))
    assert relevant("DELETED", pod("Running", "True", deleting=True))
    assert relevant("LIST", pod("Running", "True"))  # a relist always counts


def test_a_status_only_write_to_an_mpijob_is_not_a_reason_to_reconcile():
    relevant = Relevance(mpijob_fingerprint)
    job = {"metadata": {"uid": "j", "generation": 1}, "status": {}}
    assert relevant("ADDED", job)
    assert not relevant("MODIFIED", {**job, "status": {"conditions": [{"type": "Created"}]}})
    assert relevant("MODIFIED", {"metadata": {"uid": "j", "generation": 2}})  # spec edit: scale, suspend ...
    assert relevant("MODIFIED", {"metadata": {"uid": "j", "generation": 2, "deletionTimestamp": "x"}})


def test_launcher_job_and_content_fingerprints():
    relevant = Relevance(job_fingerprint)
    job = {"metadata": {"uid": "l"}, "spec": {"suspend": False}, "status": {}}
    assert relevant("ADDED", job)
    assert not relevant("MODIFIED", {**job, "metadata": {"uid": "l", "annotations": {"x": "y"}}})
    assert relevant("MODIFIED", {**job, "status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    cm = Relevance(content_fingerprint)
    assert cm("ADDED", {"metadata": {"uid": "c"}, "data": {"hostfile": "a"}})
    assert not cm("MODIFIED", {"metadata": {"uid": "c", "resourceVersion": "9"}, "data": {"hostfile": "a"}})
    assert cm("MODIFIED", {"metadata": {"uid": "c"}, "data": {"hostfile": "b"}})
