"""The parts every MPIJob CRD is built of: a CRD object of the collection from an API's registry entry (names,
versions, printer columns), the object schema with the name rule, conditions, typed leaves, and the YAML dumper
the CRD files are written with."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import Api
from crd.openapi import Inliner


def int32(description: str, minimum: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "format": "int32", "description": description}
    if minimum is not None:
        out["minimum"] = minimum
    out.update(extra)
    return out


def string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def name_rule(workers: str) -> dict[str, Any]:
    """The job name leaves room for its last worker pod's name; `workers` is the CEL expression of the count."""
    # Only sizes: a regex or a message built from the name costs too much in the API server's CEL cost estimate.
    return {
        "rule": f"size(self.metadata.name) + size('-worker-') + size(string({workers} - 1)) <= 63",
        "message": "metadata.name is too long for the number of workers: the last worker pod's name, "
        "<name>-worker-<replicas-1>, must be a DNS-1035 label of at most 63 characters",
        "fieldPath": ".metadata.name",
        "reason": "FieldValueInvalid",
    }


# Pods are named <name>-worker-<index>, and a pod's hostname must be a DNS-1035 label: a letter first.
NAME_PATTERN = "^[a-z][-a-z0-9]*$"


def names(api: Api) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": api.kind, "listKind": f"{api.kind}List", "plural": C.PLURAL, "singular": C.SINGULAR}
    if api.short_names:
        out["shortNames"] = list(api.short_names)
    return {**out, "categories": list(api.categories)}


def crd_object(api: Api, versions: list[dict[str, Any]]) -> dict[str, Any]:
    """A CRD of this collection: one MPIJob kind, namespaced, labelled as ours (preflight and removal read the label)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": api.crd_name,
            "labels": {
                "app.kubernetes.io/name": "mpi-operator",
                "app.kubernetes.io/managed-by": "mpi.operator",
            },
        },
        "spec": {
            "group": api.group,
            "names": names(api),
            "scope": "Namespaced",
            "conversion": {"strategy": "None"},
            "versions": versions,
        },
    }


TIME = {"type": "string", "format": "date-time"}


def template(inliner: Inliner, description: str) -> dict[str, Any]:
    return {**inliner.pod_template(), "description": description}


def columns(api: Api) -> list[dict[str, Any]]:
    """The API's printer columns (name, JSON path), then Age; Workers, Ready and Restarts are counts, the others
    words."""
    out = [
        {"name": name, "type": "integer" if name in ("Workers", "Ready", "Restarts") else "string", "jsonPath": path}
        for name, path in api.columns
    ]
    return [*out, {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]


def single_version(api: Api, schema: dict[str, Any], scale: dict[str, str]) -> list[dict[str, Any]]:
    """The API's one version; `scale` is its scale subresource (`kubectl scale` sets the workers)."""
    return [
        {
            "name": api.versions[0],
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": schema},
            "subresources": {"status": {}, "scale": scale},
            "additionalPrinterColumns": columns(api),
        }
    ]


def root(description: str, spec: dict[str, Any], status: dict[str, Any], workers: str) -> dict[str, Any]:
    """The object schema of an MPIJob: its spec and status, and a name short enough for its last worker's."""
    return {
        "type": "object",
        "description": description,
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 63, "pattern": NAME_PATTERN}},
            },
            "spec": spec,
            "status": status,
        },
        "x-kubernetes-validations": [name_rule(workers)],
    }


def record_status() -> dict[str, Any]:
    """status.record (every API's, written by mpi.operator): where the record of the job's pods is kept."""
    return {
        "type": "object",
        "description": "Where mpi.operator kept the record of the job's pods (how each ended, its log's last lines) "
        "before it deleted them or when the job failed: a ConfigMap owned by the job.",
        "properties": {
            "configMap": string("Name of the ConfigMap (<job>-record)."),
            "pods": int32("Pods the record holds (described, or counted when the record's size left no room)."),
            "lastUpdateTime": {**TIME, "description": "When the record was last added to."},
        },
    }


def job_conditions(types: str) -> dict[str, Any]:
    return {
        "type": "array",
        "description": "Conditions of the job, one per type.",
        "items": {
            "type": "object",
            "required": ["type", "status"],
            "properties": {
                "type": string(types),
                "status": string("True, False or Unknown.", enum=["True", "False", "Unknown"]),
                "reason": string("CamelCase reason of the last transition."),
                "message": string("Human-readable detail of the last transition."),
                "lastTransitionTime": TIME,
            },
        },
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    }


class Dumper(yaml.SafeDumper):
    """Block YAML; small leaf mappings on one line; named anchors only for what both versions share."""

    shared: ClassVar[dict[int, str]] = {}  # id of a shared object -> anchor name

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.anchor_names: dict[int, str] = {}

    def ignore_aliases(self, data: Any) -> bool:
        return id(data) not in self.shared

    def represent_data(self, data: Any) -> yaml.Node:
        node = super().represent_data(data)
        if id(data) in self.shared:
            self.anchor_names[id(node)] = self.shared[id(data)]
        return node

    def generate_anchor(self, node: yaml.Node) -> str:
        return self.anchor_names[id(node)]

    def represent_dict(self, data: Any) -> yaml.MappingNode:
        leaf = all(not isinstance(v, dict | list) or v == [] or v == {} for v in data.values())
        short = len(json.dumps(data)) <= 100
        return self.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=leaf and short)


Dumper.add_representer(dict, Dumper.represent_dict)
