"""mpi.operator.k8s_objects as the operator role runs it (ansible-playbook against the local cluster): one task
applies a set of objects, reports each one's change, previews in check mode, prunes only what its selector finds,
names a bad field, and deletes and waits."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.integration]

APP = "app.kubernetes.io/managed-by=k8s-objects-test"


def config_map(namespace: str, name: str, labelled: bool = True, **data: str) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labelled:
        meta["labels"] = {"app.kubernetes.io/managed-by": "k8s-objects-test"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def objects_task(name: str, **params: Any) -> dict:
    return {"name": name, "mpi.operator.k8s_objects": params, "register": "r", "ignore_errors": True}


def actions(result: dict) -> dict[str, str]:
    return {f"{o['kind']} {o['name']}": o["action"] for o in result["objects"]}


def test_apply_prune_check_diff_and_delete(ansible_play: Any, kubectl: Any, namespace: str) -> None:
    prune = [{"api_version": "v1", "kind": "ConfigMap", "namespace": namespace, "selector": APP}]
    first = [
        config_map(namespace, "a", x="1"),
        config_map(namespace, "b", x="1"),
        config_map(namespace, "theirs", labelled=False, x="1"),
    ]
    run = ansible_play([objects_task("apply", definitions=first, prune=prune)])
    assert actions(run["apply"]) == {"ConfigMap a": "created", "ConfigMap b": "created", "ConfigMap theirs": "created"}
    assert "apply" in run.changed and not run.failed

    # The same set again: nothing changes.
    run = ansible_play([objects_task("again", definitions=first, prune=prune)])
    assert "again" not in run.changed and set(actions(run["again"]).values()) == {"unchanged"}

    # A preview of b changed and a dropped (and the unlabelled one left out of the set): diffs, no writes.
    second = [config_map(namespace, "b", x="2")]
    run = ansible_play([objects_task("preview", definitions=second, prune=prune)], check=True, diff=True)
    assert actions(run["preview"]) == {"ConfigMap b": "updated", "ConfigMap a": "deleted"}
    headers = sorted(d["before_header"] for d in run["preview"]["diff"])
    assert headers == [f"ConfigMap {namespace}/a", f"ConfigMap {namespace}/b"]
    assert kubectl("get", "configmap", "a", "-n", namespace).returncode == 0
    assert kubectl("get", "configmap", "b", "-n", namespace, "-o", "jsonpath={.data.x}").stdout == "1"

    # Applied: a is pruned; the object without the selector's labels is never found, so it stays.
    run = ansible_play([objects_task("apply", definitions=second, prune=prune)])
    assert actions(run["apply"]) == {"ConfigMap b": "updated", "ConfigMap a": "deleted"}
    assert kubectl("get", "configmap", "a", "-n", namespace).returncode != 0
    assert kubectl("get", "configmap", "theirs", "-n", namespace).returncode == 0

    # A misspelt field is named, and the task fails without writing.
    bad = {**config_map(namespace, "c"), "dataa": {"x": "1"}}
    run = ansible_play([objects_task("bad", definitions=[bad])])
    assert "bad" in run.failed and "dataa" in run["bad"]["msg"] and f"ConfigMap {namespace}/c" in run["bad"]["msg"]
    run = ansible_play([objects_task("no name", definitions=[{"apiVersion": "v1", "kind": "ConfigMap"}])])
    assert "definitions[0]: metadata.name missing" in run["no name"]["msg"]

    # Deleted, and waited for; deleting again changes nothing.
    gone = [config_map(namespace, "b"), config_map(namespace, "theirs")]
    run = ansible_play([objects_task("delete", state="absent", definitions=gone, wait=True)])
    assert actions(run["delete"]) == {"ConfigMap b": "deleted", "ConfigMap theirs": "deleted"}
    run = ansible_play([objects_task("delete", state="absent", definitions=gone, wait=True)])
    assert "delete" not in run.changed and set(actions(run["delete"]).values()) == {"absent"}


# The ServiceMonitor CRD must not be served meanwhile: tests/integration/test_install_metrics.py installs it (in the
# installs group), and a run of both at once failed this read (CI of 2887f56).
@pytest.mark.xdist_group("installs")
def test_read_the_version_objects_lists_and_kinds_not_served(ansible_play: Any, kubectl: Any, namespace: str) -> None:
    """mpi.operator.k8s_read as the preflight and removal run it: one task, every answer in the order asked."""
    ansible_play(
        [
            objects_task(
                "apply",
                definitions=[
                    config_map(namespace, "a"),
                    config_map(namespace, "b"),
                    config_map(namespace, "theirs", labelled=False),
                ],
            )
        ]
    )
    queries = [
        {"api_version": "v1", "kind": "Namespace", "name": namespace},
        {"api_version": "v1", "kind": "ConfigMap", "namespace": namespace, "selector": APP},
        {"api_version": "v1", "kind": "ConfigMap", "namespace": namespace, "name": "theirs", "selector": APP},
        {"api_version": "v1", "kind": "ConfigMap", "namespace": namespace, "name": "missing"},
        {"api_version": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "namespace": namespace},
    ]
    run = ansible_play([{"name": "read", "mpi.operator.k8s_read": {"queries": queries}, "register": "r"}], check=True)
    read = run["read"]
    assert "read" not in run.changed and not run.failed, read.get("msg")
    version = kubectl("version", "-o", "json")
    assert read["server_version"]["gitVersion"] in version.stdout
    ns, listed, unlabelled, missing, not_served = read["results"]
    assert [o["metadata"]["name"] for o in ns["resources"]] == [namespace] and ns["resources"][0]["kind"] == "Namespace"
    assert sorted(o["metadata"]["name"] for o in listed["resources"]) == ["a", "b"]
    assert all(o["kind"] == "ConfigMap" and o["apiVersion"] == "v1" for o in listed["resources"])
    assert unlabelled["resources"] == [] and missing["resources"] == [] and missing["served"] is True
    assert not_served == {**not_served, "served": False, "resources": []}
