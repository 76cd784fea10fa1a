"""The loop's watches against a real API server: list then watch, resume after the server ends a watch,
relist on 410 Gone."""

from __future__ import annotations

import threading

import pytest

from hack.lib.wait import wait_until
from mpijob_operator.client import api_client as operator_client
from mpijob_operator.watch import Watcher, resources
from tests.support.mpijob import create_mpijob, new_mpijob

pytestmark = [pytest.mark.integration]


def _mpijobs():
    return next(r for r in resources("app") if r.name == "mpijobs")


class CountingWatcher(Watcher):
    """The real Watcher, counting the watch requests it opens: the server ending one shows as the next one."""

    watches = 0

    def stream(self):
        self.watches += 1
        yield from super().stream()


def test_watch_lists_resumes_and_relists_on_gone(kubeconfig, operator_crd, api_client, namespace):
    api = operator_client(kubeconfig, 50, 100)
    seen: list[tuple[str, str]] = []
    restarts: list[str] = []
    lock = threading.Lock()

    def enqueue(key, change):
        with lock:
            seen.append((key.name, change.event))

    create_mpijob(api_client, namespace, new_mpijob("before", workers=1))
    w = CountingWatcher(
        api, _mpijobs(), namespace, enqueue, on_restart=lambda _n, why: restarts.append(why), watch_timeout=2
    )  # the server ends each watch after 2 s: the watcher must resume
    w.start()
    try:
        wait_until(lambda: ("before", "LIST") in seen, 20, what="the initial list")
        wait_until(lambda: w.state.resource_version is not None and w.state.synced, 10, what="synced")
        wait_until(lambda: w.watches >= 3, 20, what="two server-side watch timeouts, each resumed")
        create_mpijob(api_client, namespace, new_mpijob("after", workers=1))
        wait_until(lambda: ("after", "ADDED") in seen, 20, what="the ADDED event after resuming")
        assert "gone" not in restarts and seen.count(("before", "LIST")) == 1  # resumed, never relisted

        # a resourceVersion older than the watch cache: the server answers 410 Gone and the watcher relists
        listed = seen.count(("before", "LIST"))
        w.state.resource_version = "1"
        w.stop_current_watch()
        wait_until(lambda: seen.count(("before", "LIST")) > listed, 30, what="a relist after 410 Gone")
        assert "gone" in restarts
    finally:
        w.stop()


def test_deleted_podgroup_is_put_back(operator_factory, podgroup_crd, api_client, namespace):
    """With gang scheduling the operator watches PodGroups: one deleted by hand comes back at once (as Kubeflow's
    PodGroup informer does it), with no other change to the job to wake the operator."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)

    def podgroup():
        found = custom.list_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups")
        return next((p for p in found["items"] if p["metadata"]["name"] == "gang"), None)

    op = operator_factory("--namespace", namespace, "--no-leader-elect", "--gang-scheduling", podgroup_crd)
    assert any(r.name == "podgroups" for r in resources("app", podgroup_crd))
    create_mpijob(api_client, namespace, new_mpijob("gang", workers=2))
    wait_until(lambda: podgroup() is not None, 30, what="the PodGroup")
    first = podgroup()["metadata"]["uid"]
    # Let the job settle (its pods stay Pending: nothing runs this scheduler), so that only the PodGroup's own
    # DELETED event can wake the operator.
    wait_until(op.idle, 30, what="the operator idle after creating the job's children")
    custom.delete_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups", "gang")
    wait_until(
        lambda: (pg := podgroup()) is not None and pg["metadata"]["uid"] != first, 10, what="the PodGroup put back"
    )
    assert op.proc.poll() is None
