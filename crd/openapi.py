"""Kubernetes' own OpenAPI v3 schemas, made fit for a CRD: the document of k8s.io/kubernetes (from the Go module
cache) and Inliner, which turns its component schemas (a PodTemplateSpec above all) into self-contained structural
schemas."""

from __future__ import annotations

import copy
import json
import pathlib
import subprocess
import tempfile
from typing import Any

OPENAPI_IN_MODULE = "api/openapi-spec/v3/api__v1_openapi.json"
REF_PREFIX = "#/components/schemas/"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# The parts of ObjectMeta a client may set in a pod template (what controller-gen calls embedded object meta).
TEMPLATE_META_FIELDS = ("annotations", "finalizers", "generateName", "labels", "name", "namespace")
# OpenAPI keys the CRD schema language has no place for (patch strategies belong to strategic merge patch).
DROPPED_KEYS = {
    "description",
    "default",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-unions",
    "x-kubernetes-group-version-kind",
}
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def openapi_path(k8s_version: str) -> pathlib.Path:
    """The OpenAPI document inside the k8s.io/kubernetes module, downloaded into the Go module cache if needed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{k8s_version}"],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return pathlib.Path(json.loads(out)["Dir"]) / OPENAPI_IN_MODULE


class Inliner:
    """Turns OpenAPI v3 component schemas into self-contained structural CRD schemas."""

    def __init__(self, components: dict[str, Any]):
        self.components = components

    def ref(self, name: str) -> dict[str, Any]:
        if name == QUANTITY:
            return quantity_schema()
        if name == OBJECT_META:
            return self.template_metadata()
        return self.node(self.components[name])

    def node(self, schema: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in schema:
            return self.ref(schema["$ref"].removeprefix(REF_PREFIX))
        all_of = schema.get("allOf")
        if all_of:
            if len(all_of) != 1 or "$ref" not in all_of[0]:
                raise ValueError(f"unsupported allOf: {all_of}")
            # allOf[$ref] is how OpenAPI v3 attaches a description/default to a reference: the referenced schema wins.
            return self.ref(all_of[0]["$ref"].removeprefix(REF_PREFIX))
        if schema.get("format") == "int-or-string":
            return {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in DROPPED_KEYS or key == "oneOf":
                continue
            if key == "properties":
                out[key] = {name: self.node(prop) for name, prop in sorted(value.items())}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.node(value)
            else:
                out[key] = copy.deepcopy(value)
        self.keep_list_map_key_defaults(schema, out)
        if "oneOf" in schema or (not out.get("type") and "x-kubernetes-int-or-string" not in out):
            raise ValueError(f"schema without a structural type: {schema}")
        return out

    def keep_list_map_key_defaults(self, schema: dict[str, Any], out: dict[str, Any]) -> None:
        """A list-map key that is optional needs its default (e.g. ports' protocol: TCP) to identify an item."""
        keys = schema.get("x-kubernetes-list-map-keys")
        if not keys:
            return
        item_ref = schema["items"]
        source = self.components[(item_ref.get("$ref") or item_ref["allOf"][0]["$ref"]).removeprefix(REF_PREFIX)]
        for key in keys:
            if key in source.get("required", []):
                continue
            if "default" not in source["properties"][key]:
                raise ValueError(f"list-map key {key} is neither required nor defaulted")
            out["items"]["properties"][key]["default"] = source["properties"][key]["default"]

    def template_metadata(self) -> dict[str, Any]:
        meta = self.components[OBJECT_META]
        props = {name: self.node(meta["properties"][name]) for name in TEMPLATE_META_FIELDS}
        return {"type": "object", "properties": props}

    def pod_template(self) -> dict[str, Any]:
        template = self.ref("io.k8s.api.core.v1.PodTemplateSpec")
        # Kubeflow's validation: a replica needs a pod spec with at least one container.
        template["required"] = ["spec"]
        template["properties"]["spec"]["properties"]["containers"]["minItems"] = 1
        template["description"] = "Template is the pod template (a core/v1 PodTemplateSpec) of this replica type."
        return template


def quantity_schema() -> dict[str, Any]:
    # A Quantity is a string or a JSON number (`cpu: 0.1` is valid in a Pod); int-or-string would reject 0.1,
    # and a structural schema cannot say "number or string", so the node keeps any scalar and strings are checked.
    return {"x-kubernetes-preserve-unknown-fields": True, "pattern": QUANTITY_PATTERN}
