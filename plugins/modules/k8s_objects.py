#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_objects
short_description: Apply, prune or delete a set of Kubernetes objects in one task
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Applies every object of O(definitions) by server-side apply (field manager O(field_manager)), in order, or with
    O(state=absent) deletes them.
  - Then deletes what O(prune) finds by label selector and O(definitions) leaves out (with O(state=absent), everything
    it finds); a kind the cluster does not serve has nothing to prune.
  - One process and one connection for the whole set, where a loop of M(kubernetes.core.k8s) starts one per object;
    each object's change is still reported on its own (RV(objects), and one diff per object with C(--diff)).
  - Used by the C(mpi.operator.operator) role to install and remove the operator's objects.
extends_documentation_fragment:
  - mpi.operator.auth
options:
  state:
    description: V(present) applies O(definitions); V(absent) deletes them.
    type: str
    choices: [present, absent]
    default: present
  definitions:
    description:
      - The objects, each with C(apiVersion), C(kind) and C(metadata.name) (and C(metadata.namespace) when namespaced).
    type: list
    elements: dict
    default: []
  prune:
    description:
      - Objects to delete when O(definitions) does not hold them, found by kind and label selector.
    type: list
    elements: dict
    default: []
    suboptions:
      api_version:
        description: API group version of the kind, e.g. V(rbac.authorization.k8s.io/v1).
        type: str
        required: true
      kind:
        description: The kind, e.g. V(Role).
        type: str
        required: true
      namespace:
        description: Only this namespace's objects; without it, every namespace's (or the cluster-scoped ones).
        type: str
      selector:
        description: Label selector, e.g. V(app.kubernetes.io/managed-by=mpi.operator); required, so that nothing
          another installer made is ever found.
        type: str
        required: true
  common_labels:
    description:
      - Labels added to every object of O(definitions) and to the pod template of each that has one (a Deployment's);
        an object's own labels win over them (Helm charts call these C(commonLabels)).
    type: dict
    default: {}
  common_annotations:
    description:
      - Annotations added to every object of O(definitions) (not to pod templates); an object's own win over them.
    type: dict
    default: {}
  field_manager:
    description: The field manager of the applies.
    type: str
    default: mpi.operator
  force_conflicts:
    description: Take over fields another field manager owns instead of failing on the conflict.
    type: bool
    default: false
  wait:
    description:
      - After deleting, wait until every deleted object is gone (a namespace's content takes a while).
      - After applying, wait until every CustomResourceDefinition applied is C(Established) (its kind is served); other
        kinds are complete once applied.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait with O(wait).
    type: int
    default: 120
attributes:
  check_mode:
    support: full
    description: Every write is sent as a server-side dry run.
  diff_mode:
    support: full
    description: One diff per object that changes (without status and server bookkeeping such as managedFields).
  idempotent:
    support: full
    description: C(changed) only when an object would be created, changed or deleted.
"""

EXAMPLES = r"""
- name: Apply two objects and remove the RoleBindings of this app that are no longer wanted
  mpi.operator.k8s_objects:
    definitions:
      - {apiVersion: v1, kind: ServiceAccount, metadata: {name: app, namespace: team}}
      - apiVersion: rbac.authorization.k8s.io/v1
        kind: RoleBinding
        metadata: {name: app, namespace: team, labels: {app.kubernetes.io/name: app}}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
        subjects: [{kind: ServiceAccount, name: app, namespace: team}]
    prune:
      - {api_version: rbac.authorization.k8s.io/v1, kind: RoleBinding, selector: app.kubernetes.io/name=app}

- name: Delete a namespace and wait until it is gone
  mpi.operator.k8s_objects:
    state: absent
    definitions:
      - {apiVersion: v1, kind: Namespace, metadata: {name: team}}
    wait: true
"""

RETURN = r"""
objects:
  description: Every object written, in order, with what happened to it.
  returned: always
  type: list
  elements: dict
  contains:
    api_version:
      description: Its apiVersion.
      type: str
    kind:
      description: Its kind.
      type: str
    namespace:
      description: Its namespace (empty when cluster-scoped).
      type: str
    name:
      description: Its name.
      type: str
    action:
      description: V(created), V(updated), V(unchanged), V(deleted) or V(absent) (nothing to delete).
      type: str
  sample:
    - {api_version: v1, kind: ServiceAccount, namespace: team, name: app, action: unchanged}
"""

import json  # noqa: E402
import time  # noqa: E402

from ..module_utils import objects as O  # noqa: E402
from ..module_utils.kube.auth import AUTH_ARG_SPEC  # noqa: E402
from ..module_utils.kube.kinds import Kinds  # noqa: E402
from ..module_utils.kube.module import run_module  # noqa: E402
from ..module_utils.kube.rest import Rest  # noqa: E402
from ..module_utils.mpijob.errors import ApiError, JobError, SubmitError  # noqa: E402

APPLY = "application/apply-patch+yaml"  # JSON is YAML: the manifest goes as JSON text
WAIT_POLL = 0.5


def argspec() -> dict:
    prune = dict(
        api_version=dict(type="str", required=True),
        kind=dict(type="str", required=True),
        namespace=dict(type="str"),
        selector=dict(type="str", required=True),
    )
    spec = dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        definitions=dict(type="list", elements="dict", default=[]),
        prune=dict(type="list", elements="dict", default=[], options=prune),
        common_labels=dict(type="dict", default={}),
        common_annotations=dict(type="dict", default={}),
        field_manager=dict(type="str", default="mpi.operator"),
        force_conflicts=dict(type="bool", default=False),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=120),
    )
    spec.update({k: dict(v) for k, v in AUTH_ARG_SPEC.items()})
    return spec


def failure(obj: dict, what: str, exc: ApiError) -> JobError:
    return JobError(f"cannot {what} {O.label(obj)}: {exc}")


def apply(rest: Rest, kinds: Kinds, obj: dict, p: dict, check: bool) -> tuple[dict | None, dict]:
    """(before, after) of one server-side apply (a dry run in check mode)."""
    where = kinds.path(obj)
    before = rest.get(where)
    query = {"fieldManager": p["field_manager"], "fieldValidation": "Strict"}  # an unknown field is named, not dropped
    if p["force_conflicts"]:
        query["force"] = "true"
    if check:
        query["dryRun"] = "All"
    try:
        after = rest.request("PATCH", where, json.dumps(obj), query=query, content_type=APPLY)
    except ApiError as exc:
        if exc.status == 404 and check and before is None:
            return None, obj  # its namespace is new in this same dry run: it would be created as given
        if exc.status == 409:
            raise JobError(
                f"cannot apply {O.label(obj)}: {exc.message} (another field manager owns these fields; "
                f"force_conflicts=true takes them over)"
            ) from exc
        raise failure(obj, "apply", exc) from exc
    return before, after


def delete(rest: Rest, path: str, obj: dict, check: bool) -> dict | None:
    """Deletes one object (a dry run in check mode): what it was, or None when it was not there."""
    # With a body, the API server reads the options from it alone (a dryRun query parameter would be ignored).
    options: dict = {"propagationPolicy": "Background"}
    if check:
        options["dryRun"] = ["All"]
    try:
        gone = rest.request("DELETE", path, options)
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise failure(obj, "delete", exc) from exc
    return gone if gone.get("kind") == obj.get("kind") else obj


def wait_until(rest: Rest, paths: list[tuple[str, dict]], done, timeout: int, not_done: str) -> None:
    """Polls each object until done(what GET returns: None when gone) holds for all, or fails naming the rest."""
    deadline = time.monotonic() + timeout
    left = list(paths)
    while left:
        left = [(where, obj) for where, obj in left if not done(rest.get(where))]
        if not left:
            return
        if time.monotonic() >= deadline:
            raise JobError(f"{not_done} after {timeout} s: {', '.join(O.label(pair[1]) for pair in left)}")
        time.sleep(WAIT_POLL)


def task(module, rest: Rest) -> dict:
    p, check = module.params, module.check_mode
    errors = (
        O.invalid(p["definitions"])
        + O.invalid_metadata("common_labels", p["common_labels"], True)
        + O.invalid_metadata("common_annotations", p["common_annotations"], False)
    )
    if errors:
        raise SubmitError("; ".join(errors))
    definitions = [O.with_common_metadata(obj, p["common_labels"], p["common_annotations"]) for obj in p["definitions"]]
    kinds = Kinds(rest)
    report: list[dict] = []
    diffs: list[dict] = []
    deleted: list[tuple[str, dict]] = []
    crds: list[tuple[str, dict]] = []

    def record(obj: dict, action: str, before: dict | None, after: dict | None) -> None:
        api_version, kind, namespace, name = O.ref(obj)
        report.append(dict(api_version=api_version, kind=kind, namespace=namespace, name=name, action=action))
        if action not in ("unchanged", "absent"):
            diffs.append(O.diff(before, after, obj))

    def remove(obj: dict, where: str) -> None:
        was = delete(rest, where, obj, check)
        record(obj, "absent" if was is None else "deleted", was, None)
        if was is not None:
            deleted.append((where, obj))

    for obj in definitions:
        if p["state"] == "present":
            before, after = apply(rest, kinds, obj, p, check)
            if obj.get("kind") == "CustomResourceDefinition" and not O.established(after):
                crds.append((kinds.path(obj), obj))
            record(
                obj,
                "created" if before is None else "updated" if O.changed(before, after) else "unchanged",
                before,
                after,
            )
        else:
            remove(obj, kinds.path(obj))
    keep = definitions if p["state"] == "present" else []
    for rule in p["prune"]:
        found = kinds.find(rule["api_version"], rule["kind"])
        if found is None:
            continue  # not served here (e.g. no ServiceMonitor CRD): nothing of that kind exists
        plural, namespaced = found
        listing = O.path(rule["api_version"], plural, namespaced, rule.get("namespace") or "")
        items = rest.list(listing, rule["selector"])
        for obj in items:
            obj.setdefault("apiVersion", rule["api_version"])
            obj.setdefault("kind", rule["kind"])
        for obj in O.stale(items, keep):
            namespace, name = O.ref(obj)[2:]
            remove(obj, O.path(rule["api_version"], plural, namespaced, namespace, name))
    if p["wait"] and deleted and not check:
        wait_until(rest, deleted, lambda found: found is None, p["wait_timeout"], "still there")
    if p["wait"] and crds and not check:
        wait_until(rest, crds, O.established, p["wait_timeout"], "not Established")
    result = {"changed": any(o["action"] not in ("unchanged", "absent") for o in report), "objects": report}
    if module._diff:
        result["diff"] = diffs
    return result


def main() -> None:
    run_module(argspec(), task, supports_check_mode=True)


if __name__ == "__main__":
    main()
