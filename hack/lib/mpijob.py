"""MPIJobs on a cluster: the one builder of a small MPIJob for the cluster tests and the bench, the collection's CRD
installed, and the API calls on a job (create, get, patch, delete, its conditions)."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.constants import GROUP, PLURAL, VERSION
from hack.lib.paths import ROOT

CRD = ROOT / "roles/crds/files/mpijobs.kubeflow.org.yaml"


def install_crd(api_client: Any, path: pathlib.Path = CRD) -> None:
    """Creates or updates an MPIJob CRD from the collection's file (kubeflow.org's by default), and waits until it is
    served."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    body = yaml.safe_load(path.read_text())
    ext = client.ApiextensionsV1Api(api_client)
    name = body["metadata"]["name"]
    for attempt in range(5):  # 409: another worker, test session or install test wrote it in between
        try:
            try:
                current = ext.read_custom_resource_definition(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                ext.create_custom_resource_definition(body)
                break
            # The labels and annotations an install added (its common labels) stay: a test beside an install test
            # must not change what that test's next run finds.
            meta = body["metadata"]
            meta["resourceVersion"] = current.metadata.resource_version
            meta["labels"] = {**(current.metadata.labels or {}), **meta.get("labels", {})}
            meta["annotations"] = {**(current.metadata.annotations or {}), **meta.get("annotations", {})}
            ext.replace_custom_resource_definition(name, body)
            break
        except ApiException as exc:
            if exc.status == 409 and attempt < 4:
                continue
            raise
    custom = client.CustomObjectsApi(api_client)
    end = time.monotonic() + 30
    while True:
        try:
            storage = next(v["name"] for v in body["spec"]["versions"] if v["storage"])
            custom.list_cluster_custom_object(body["spec"]["group"], storage, body["spec"]["names"]["plural"], limit=1)
            return
        except ApiException:
            if time.monotonic() > end:
                raise
            time.sleep(0.3)


def new_mpijob(
    name: str,
    workers: int = 2,
    *,
    launcher_annotations: dict[str, str] | None = None,
    worker_annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A small MPIJob; `spec` keys are merged into .spec (runPolicy, launcherCreationPolicy ...)."""

    def template(role: str, annotations: dict[str, str] | None) -> dict[str, Any]:
        meta = {"annotations": annotations} if annotations else {}
        return {"metadata": meta, "spec": {"containers": [{"name": role, "image": "mpioperator/mpi-pi:openmpi"}]}}

    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "None"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template("launcher", launcher_annotations)},
                "Worker": {"replicas": workers, "template": template("worker", worker_annotations)},
            },
        },
    }
    for k, v in spec.items():
        if isinstance(v, dict) and isinstance(body["spec"].get(k), dict):
            body["spec"][k].update(v)
        else:
            body["spec"][k] = v
    return body


def child_refs(name: str, workers: int) -> set[str]:
    """The children the operator makes for a job `name` of `workers` workers, as "Kind/name"."""
    return {f"Service/{name}", f"ConfigMap/{name}-config", f"Secret/{name}-ssh", f"Job/{name}-launcher"} | {
        f"Pod/{name}-worker-{i}" for i in range(workers)
    }


def create_mpijob(api_client: Any, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    from kubernetes import client

    return client.CustomObjectsApi(api_client).create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


def get_mpijob(api_client: Any, namespace: str, name: str) -> dict[str, Any] | None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        return client.CustomObjectsApi(api_client).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def patch_mpijob(api_client: Any, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    from kubernetes import client

    return client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, patch
    )


def delete_mpijob(api_client: Any, namespace: str, name: str) -> None:
    from kubernetes import client

    client.CustomObjectsApi(api_client).delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def condition(job: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    for c in ((job or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def has_condition(job: dict[str, Any] | None, ctype: str, status: str = "True") -> bool:
    c = condition(job, ctype)
    return c is not None and c.get("status") == status
