# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What applying, pruning or deleting a set of Kubernetes objects changes. Pure: fed the objects as the API returns
them, no I/O (plugins/modules/k8s_objects.py reads and writes them; this decides what to write and what it changed)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from .kube.paths import group_path
from .mpijob import submit as S
from .mpijob.spec import label_key


def ref(obj: dict) -> tuple[str, str, str, str]:
    """(apiVersion, kind, namespace, name): the identity of an object ("" namespace for a cluster-scoped one)."""
    meta = obj.get("metadata") or {}
    return obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace") or "", meta.get("name") or ""


def label(obj: dict) -> str:
    """ "Kind namespace/name" (or "Kind name"): how a task names an object."""
    kind, namespace, name = ref(obj)[1:]
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def invalid(definitions: list[Any]) -> list[str]:
    """What is wrong with each definition that has no apiVersion, kind or metadata.name, named by its index."""
    errors = []
    for index, obj in enumerate(definitions):
        if not isinstance(obj, dict):
            errors.append(f"definitions[{index}]: an object (a dict) is needed, got {type(obj).__name__}")
            continue
        missing = [
            field
            for field, value in (
                ("apiVersion", obj.get("apiVersion")),
                ("kind", obj.get("kind")),
                ("metadata.name", (obj.get("metadata") or {}).get("name")),
            )
            if not value
        ]
        if missing:
            errors.append(f"definitions[{index}]: {', '.join(missing)} missing")
    return errors


def comparable(obj: dict | None) -> dict:
    """The object as the user wrote it can differ in: without status and the server's own metadata (the mpijob
    module's comparison)."""
    return S.comparable(obj) or {}


def changed(before: dict | None, after: dict | None) -> bool:
    """Whether an apply changed the object (before None: it was created)."""
    return before is None or S.differs(before, after)


def diff(before: dict | None, after: dict | None, obj: dict) -> dict:
    """One entry of the task's diff (Ansible shows a list of them, each under its headers)."""
    name = label(obj)
    return {"before": comparable(before), "after": comparable(after), "before_header": name, "after_header": name}


def resources(discovery: dict) -> dict[str, tuple[str, bool]]:
    """{kind: (plural, namespaced)} from an API group version's discovery document (/api/v1, /apis/GROUP/VERSION);
    subresources (pods/log) are left out."""
    out: dict[str, tuple[str, bool]] = {}
    for resource in discovery.get("resources") or []:
        name = resource.get("name") or ""
        if name and "/" not in name and resource.get("kind"):
            out.setdefault(resource["kind"], (name, bool(resource.get("namespaced"))))
    return out


def path(api_version: str, plural: str, namespaced: bool, namespace: str = "", name: str = "") -> str:
    """The URL path of an object (with `name`) or of a collection: a namespace's, or every namespace's when a namespaced
    kind is listed without one."""
    base = group_path(api_version)
    if namespaced and namespace:
        base += f"/namespaces/{quote(namespace)}"
    base += f"/{plural}"
    return f"{base}/{quote(name)}" if name else base


def stale(found: list[dict], keep: list[dict]) -> list[dict]:
    """The objects found (by a prune's selector) that are not among those kept, each once, in the order found."""
    kept = {ref(obj)[1:] for obj in keep}
    out, seen = [], set()
    for obj in found:
        key = ref(obj)[1:]
        if key not in kept and key not in seen:
            seen.add(key)
            out.append(obj)
    return out


def found(items: list[dict | None], api_version: str, kind: str) -> list[dict]:
    """The objects a read returned, each with its apiVersion and kind (a list's items carry neither), without a missing
    one (None)."""
    out = []
    for obj in items:
        if obj is None:
            continue
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        out.append(obj)
    return out


def established(crd: dict | None) -> bool:
    """Whether a CustomResourceDefinition's kind is served: its Established condition is True."""
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_VALUE = re.compile("^(" + _NAME + ")?$")


def invalid_metadata(option: str, values: dict, label_values: bool) -> list[str]:
    """What is wrong with the keys (and, for labels, the values) of a labels or annotations option, each named."""
    errors = []
    for key, value in values.items():
        where = f"{option}[{key!r}]"
        if not label_key(str(key)):
            errors.append(
                f"{where}: not a valid key (an optional DNS-subdomain prefix and '/', then at most 63 "
                f"letters, digits, '-', '_' or '.', beginning and ending with a letter or digit)"
            )
        elif not isinstance(value, str):
            errors.append(f"{where}: the value must be a string, got {type(value).__name__} {value!r} (quote it)")
        elif label_values and not _LABEL_VALUE.match(value):
            errors.append(
                f"{where}: {value!r} is not a valid label value (at most 63 letters, digits, '-', '_' or "
                f"'.', beginning and ending with a letter or digit, or empty)"
            )
    return errors


def with_common_metadata(obj: dict, labels: dict, annotations: dict) -> dict:
    """The object with labels and annotations added to its metadata, and the labels to its pod template's (a
    Deployment's, a Job's): the object's own keys win, so no selector or removal label is ever overridden."""
    if not labels and not annotations:
        return obj
    out = dict(obj)
    out["metadata"] = _merged(obj.get("metadata") or {}, labels, annotations)
    template = (obj.get("spec") or {}).get("template")
    if labels and isinstance(template, dict):
        pods = dict(template, metadata=_merged(template.get("metadata") or {}, labels, {}))
        out["spec"] = dict(obj["spec"], template=pods)
    return out


def _merged(meta: dict, labels: dict, annotations: dict) -> dict:
    out = dict(meta)
    if labels:
        out["labels"] = {**labels, **(meta.get("labels") or {})}
    if annotations:
        out["annotations"] = {**annotations, **(meta.get("annotations") or {})}
    return out
