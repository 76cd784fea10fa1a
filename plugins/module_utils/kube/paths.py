# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Where each kind lives on the API server: the paths of its collections and objects. Pure, standard library only
(make lint's import contracts): the modules' pure helpers (objects.py) build paths with it too."""

from __future__ import annotations

from urllib.parse import quote

from ..mpijob import constants as C

PLURALS = {
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "Pod": "pods",
    "Event": "events",
    "Job": "jobs",
    "MPIJob": C.PLURAL,
    "PodGroup": "podgroups",
    "ServiceAccount": "serviceaccounts",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "Lease": "leases",
    "PriorityClass": "priorityclasses",
    "Deployment": "deployments",
    "Node": "nodes",
    "Workload": "workloads",
}


def group_path(api_version: str) -> str:
    """An API group version's root (its discovery document): /api/v1 for the core group, else /apis/GROUP/VERSION."""
    return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"


def collection(api_version: str, kind: str, namespace: str) -> str:
    """Where the objects of `kind` live: those of `namespace`, or of every namespace (and a cluster-scoped kind's)
    when it is empty."""
    prefix = group_path(api_version)
    where = f"/namespaces/{quote(namespace)}" if namespace else ""
    return f"{prefix}{where}/{PLURALS[kind]}"


def item(api_version: str, kind: str, namespace: str, name: str) -> str:
    return f"{collection(api_version, kind, namespace)}/{quote(name)}"


def mpijob_path(api_version: str, namespace: str = "", name: str = "") -> str:
    """An MPIJob's path at `api_version` (a job's key names its API's storage version; a manifest, its own): a
    namespace's collection without `name`, every namespace's without `namespace` either."""
    return item(api_version, C.KIND, namespace, name) if name else collection(api_version, C.KIND, namespace)
