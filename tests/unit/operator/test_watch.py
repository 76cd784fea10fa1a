"""Event -> MPIJob mapping and watch bookkeeping."""
import pytest

from mpijob_operator.watch import (
    WatchError,
    WatchState,
    mpijob_keys,
    owner_keys,
    pod_keys,
    resources,
)


def owned(kind="MPIJob", name="pi", api="kubeflow.org/v2beta1", controller=True, ns="team"):
    return {"metadata": {"name": "x", "namespace": ns, "ownerReferences": [
        {"apiVersion": api, "kind": kind, "name": name, "controller": controller, "uid": "u"}]}}


def test_mpijob_maps_to_itself():
    assert mpijob_keys({"metadata": {"name": "pi", "namespace": "team"}}) == [("team", "pi")]
    assert mpijob_keys({"metadata": {}}) == []


def test_children_map_by_controller_owner_reference():
    assert owner_keys(owned()) == [("team", "pi")]
    assert owner_keys(owned(api="kubeflow.org/v1")) == [("team", "pi")]
    assert owner_keys(owned(controller=False)) == []
    assert owner_keys(owned(kind="Deployment")) == []
    assert owner_keys(owned(api="example.com/v1")) == []
    assert owner_keys({"metadata": {"name": "lonely"}}) == []


def test_worker_pod_maps_by_owner_and_launcher_pod_through_its_job_label():
    assert pod_keys(owned(name="pi")) == [("team", "pi")]
    launcher = {"metadata": {"name": "pi-launcher-x", "namespace": "team",
                             "labels": {"training.kubeflow.org/job-name": "pi"},
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi-launcher",
                                                  "controller": True}]}}
    assert pod_keys(launcher) == [("team", "pi")]
    stray = {"metadata": {"name": "p", "namespace": "team", "labels": {"training.kubeflow.org/job-name": "pi"}}}
    assert pod_keys(stray) == []


def test_every_child_kind_is_watched_and_pods_by_the_kubeflow_label():
    by_name = {r.name: r for r in resources("app")}
    assert set(by_name) == {"mpijobs", "pods", "jobs", "services", "configmaps", "secrets"}
    assert by_name["pods"].label_selector == "training.kubeflow.org/operator-name=mpi-operator"
    assert by_name["mpijobs"].url("") == "/apis/kubeflow.org/v2beta1/mpijobs"
    assert by_name["pods"].url("team") == "/api/v1/namespaces/team/pods"
    assert by_name["jobs"].url("") == "/apis/batch/v1/jobs"


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
