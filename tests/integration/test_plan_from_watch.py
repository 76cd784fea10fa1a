"""A batch handed its jobs' worlds (what the operator watched, mpijob_operator/store.py) plans from them and reads
nothing; a world that is stale meets the API server's conflict answer and the job is retried, nothing overwritten."""

from __future__ import annotations

import json

import pytest

from hack.lib.wait import wait_until
from tests.integration._fixtures.reconcile import NOWHERE, _core, _on_kwok, load
from tests.support.mpijob import create_mpijob, get_mpijob

pytestmark = pytest.mark.integration

NAME = "openmpi-helloworld"


class Counted:
    """The shell's Rest, remembering each request's method and path."""

    def __init__(self, kubeconfig: str):
        from ansible_collections.mpi.operator.plugins.module_utils.kube import auth, rest

        outer = self
        self.requests: list[tuple[str, str]] = []

        class Rest(rest.Rest):
            def raw(self, method, path, *args, **kwargs):
                outer.requests.append((method, path))
                return super().raw(method, path, *args, **kwargs)

        self.rest = Rest(auth.api_client({"kubeconfig": kubeconfig}))


def reconcile(rest, namespace: str, seen: dict | None = None):
    from ansible_collections.mpi.operator.plugins.module_utils.kube.reconcile import reconcile_batch
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.children import Options

    entry: dict = {"namespace": namespace, "name": NAME}
    if seen is not None:
        entry["seen"] = json.loads(json.dumps(seen))  # as it comes through the hand-off: JSON
    return reconcile_batch(rest, [entry], Options())[0]


def as_json(obj) -> dict:
    from kubernetes.client import ApiClient

    return ApiClient().sanitize_for_serialization(obj)


def test_a_handed_world_is_planned_from_without_a_read(api_client, namespace, operator_crd, kubeconfig) -> None:
    create_mpijob(api_client, namespace, _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE))
    counted = Counted(kubeconfig)
    result = reconcile(counted.rest, namespace, {"mpijob": get_mpijob(api_client, namespace, NAME), "pods": []})
    assert result.outcome.value == "ok", result.error
    assert [m for m, _p in counted.requests if m == "GET"] == []  # nothing read: every request a write
    assert {(a["action"], a["kind"]) for a in result.actions} >= {("create", "ConfigMap"), ("create", "Pod")}
    assert result.read_version and result.resource_version  # the store's copy follows the status write
    assert get_mpijob(api_client, namespace, NAME)["metadata"]["resourceVersion"] == result.resource_version


def test_a_stale_world_is_refused_by_the_server_and_read_next_time(
    api_client, namespace, operator_crd, kubeconfig
) -> None:
    create_mpijob(api_client, namespace, _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE))
    counted = Counted(kubeconfig)
    assert reconcile(counted.rest, namespace).outcome.value == "ok"  # read: children made
    core, _ = _core(api_client)
    stale = as_json(core.read_namespaced_config_map(f"{NAME}-config", namespace))
    # Someone changes the ConfigMap after the world was taken; the world still has an older hostfile.
    current = core.patch_namespaced_config_map(f"{NAME}-config", namespace, {"metadata": {"labels": {"seen": "late"}}})
    stale["data"]["hostfile"] = "an-older-hostfile slots=1\n"
    seen = {"mpijob": get_mpijob(api_client, namespace, NAME), "config_map": stale, "pods": []}
    pods = core.list_namespaced_pod(namespace, label_selector=f"training.kubeflow.org/job-name={NAME}").items
    seen["pods"] = [as_json(p) for p in pods]
    for kind, field in (("Service", "service"), ("Secret", "secret")):
        read = getattr(core, f"read_namespaced_{kind.lower()}")
        seen[field] = as_json(read(NAME if kind == "Service" else f"{NAME}-ssh", namespace))
    result = reconcile(counted.rest, namespace, seen)
    assert ("patch", "ConfigMap") in {(a["action"], a["kind"]) for a in result.actions}  # planned from the world
    assert result.outcome.value == "retry"  # ... and refused: 409, the patch carried the stale resourceVersion
    after = core.read_namespaced_config_map(f"{NAME}-config", namespace)
    assert after.metadata.resource_version == current.metadata.resource_version  # not overwritten
    # The status write carries the MPIJob's version: a stale MPIJob is a conflict too.
    old_job = seen["mpijob"]
    api_client_patch = {"metadata": {"labels": {"touched": "yes"}}}
    from tests.support.mpijob import patch_mpijob

    patch_mpijob(api_client, namespace, NAME, api_client_patch)
    old_job.setdefault("status", {})["conditions"] = []  # a status that differs from the one written
    result = reconcile(counted.rest, namespace, {"mpijob": old_job, "pods": seen["pods"]})
    assert result.outcome.value == "retry" and "409" in (result.error or "")


def test_a_worker_coming_up_waits_in_a_warm_run_then_is_written_with_its_hosts(
    api_client, namespace, operator_crd, kubeconfig
) -> None:
    """Progress writes (docs/operator.md): the status that only counts a worker coming up, and its discover_hosts.sh,
    wait for progress_every while the shell remembers since when (a warm run's Held); then both are written."""
    from ansible_collections.mpi.operator.plugins.module_utils.kube.reconcile import Held, reconcile_batch
    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.children import Options

    create_mpijob(api_client, namespace, _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE))
    clock, core = [0.0], _core(api_client)[0]
    held = Held(clock=lambda: clock[0])

    def run():
        entry = {"namespace": namespace, "name": NAME}
        return reconcile_batch(Counted(kubeconfig).rest, [entry], Options(progress_every=30.0), held=held)[0]

    def versions() -> tuple[str, str]:
        cm = core.read_namespaced_config_map(f"{NAME}-config", namespace)
        return get_mpijob(api_client, namespace, NAME)["metadata"]["resourceVersion"], cm.metadata.resource_version

    assert run().outcome.value == "ok"  # children made, Created written: never held
    launcher = f"training.kubeflow.org/job-name={NAME},training.kubeflow.org/job-role=launcher"
    wait_until(lambda: core.list_namespaced_pod(namespace, label_selector=launcher).items, 30, "the launcher pod")
    run()  # whatever the launcher pod's coming changed
    core.patch_namespaced_pod_status(f"{NAME}-worker-0", namespace, {"status": {"phase": "Running"}})
    before = versions()
    waiting = run()
    assert waiting.outcome.value == "ok" and waiting.actions == [] and waiting.requeue_after == 30.0
    assert versions() == before  # neither the status nor discover_hosts.sh written yet
    clock[0] = 30.0
    due = run()
    assert {("status", "MPIJob"), ("patch", "ConfigMap")} <= {(a["action"], a["kind"]) for a in due.actions}
    assert get_mpijob(api_client, namespace, NAME)["status"]["replicaStatuses"]["Worker"]["active"] == 1
    hosts = core.read_namespaced_config_map(f"{NAME}-config", namespace).data["discover_hosts.sh"]
    assert f"{NAME}-worker-0." in hosts and f"{NAME}-worker-1." not in hosts
