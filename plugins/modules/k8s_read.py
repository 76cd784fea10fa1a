#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_read
short_description: Read the Kubernetes server version and several objects or lists in one task
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Reads the server version and, for each entry of O(queries), one object by name or every object of a kind (in a
    namespace, or everywhere), optionally by label selector.
  - One process and one connection for every read, where M(kubernetes.core.k8s_cluster_info) and a loop of
    M(kubernetes.core.k8s_info) start one each.
  - A kind the cluster does not serve (its CRD is not installed) is not an error; its entry has RV(results[].served)
    false and no resources.
  - Used by the C(mpi.operator.preflight) and C(mpi.operator.operator) roles.
extends_documentation_fragment:
  - mpi.operator.auth
options:
  queries:
    description: What to read, in order; RV(results) answers each in the same order.
    type: list
    elements: dict
    default: []
    suboptions:
      api_version:
        description: API group version of the kind, e.g. V(apps/v1).
        type: str
        required: true
      kind:
        description: The kind, e.g. V(Deployment).
        type: str
        required: true
      name:
        description: One object of this name; without it, every object of the kind.
        type: str
      namespace:
        description: The namespace of a namespaced kind; without it, every namespace's objects.
        type: str
      selector:
        description:
          - Label selector of a list, e.g. V(app.kubernetes.io/managed-by=mpi.operator).
          - With O(queries[].name), the object counts only when its labels match.
        type: str
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
  idempotent:
    support: full
    description: Never changes anything.
"""

EXAMPLES = r"""
- name: Read the server version, a CRD and a namespace's Deployments of this app
  mpi.operator.k8s_read:
    queries:
      - {api_version: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: mpijobs.kubeflow.org}
      - {api_version: apps/v1, kind: Deployment, namespace: team, selector: app.kubernetes.io/name=app}
  register: found

- name: Say whether the CRD is there
  ansible.builtin.debug:
    msg: "Kubernetes {{ found.server_version.gitVersion }}; CRD present: {{ found.results[0].resources | length > 0 }}"
"""

RETURN = r"""
server_version:
  description: The API server's C(/version) document.
  returned: always
  type: dict
  sample: {major: "1", minor: "35", gitVersion: v1.35.4}
results:
  description: One entry per query, in order.
  returned: always
  type: list
  elements: dict
  contains:
    api_version:
      description: The query's apiVersion.
      type: str
    kind:
      description: The query's kind.
      type: str
    name:
      description: The query's name (empty for a list).
      type: str
    namespace:
      description: The query's namespace (empty when none).
      type: str
    served:
      description: Whether the cluster serves the kind.
      type: bool
    resources:
      description: The objects found (each with its apiVersion and kind), as the API returns them.
      type: list
      elements: dict
"""

from ..module_utils import objects as O  # noqa: E402
from ..module_utils.kube.auth import AUTH_ARG_SPEC  # noqa: E402
from ..module_utils.kube.kinds import Kinds  # noqa: E402
from ..module_utils.kube.module import run_module  # noqa: E402
from ..module_utils.kube.rest import Rest  # noqa: E402
from ..module_utils.mpijob.errors import ApiError, JobError  # noqa: E402


def argspec() -> dict:
    query = dict(
        api_version=dict(type="str", required=True),
        kind=dict(type="str", required=True),
        name=dict(type="str"),
        namespace=dict(type="str"),
        selector=dict(type="str"),
    )
    spec = dict(queries=dict(type="list", elements="dict", default=[], options=query))
    spec.update({k: dict(v) for k, v in AUTH_ARG_SPEC.items()})
    return spec


def read(rest: Rest, kinds: Kinds, q: dict) -> dict:
    api_version, kind = q["api_version"], q["kind"]
    name, namespace, selector = q.get("name") or "", q.get("namespace") or "", q.get("selector") or ""
    found = kinds.find(api_version, kind)
    entry = dict(
        api_version=api_version, kind=kind, name=name, namespace=namespace, served=found is not None, resources=[]
    )
    if found is None:
        return entry
    plural, namespaced = found
    try:
        if name and not selector:
            items = [rest.get(O.path(api_version, plural, namespaced, namespace, name))]
        else:  # a list, or a named object only when its labels match: the API server applies the selector
            fields = f"metadata.name={name}" if name else ""
            items = rest.list(O.path(api_version, plural, namespaced, namespace), selector, fields)
    except ApiError as exc:
        raise JobError(
            f"cannot read {kind} {'/'.join(filter(None, (namespace, name)))} ({api_version}): {exc}"
        ) from exc
    entry["resources"] = O.found(items, api_version, kind)
    return entry


def task(module, rest: Rest) -> dict:
    try:
        version = rest.request("GET", "/version")
    except ApiError as exc:
        raise JobError(f"cannot read the server version: {exc}") from exc
    kinds = Kinds(rest)
    return {
        "changed": False,
        "server_version": version,
        "results": [read(rest, kinds, q) for q in module.params["queries"]],
    }


def main() -> None:
    run_module(argspec(), task, supports_check_mode=True)


if __name__ == "__main__":
    main()
