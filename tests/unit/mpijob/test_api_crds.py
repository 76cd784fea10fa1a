"""The CRDs of the other two MPIJob APIs (crd/gen.py): each API's own documented example manifest fits the
generated structural schema, every field its documentation names is in it, and the printer columns and subresources are
there.

The check below is the subset of the API server's structural validation a manifest meets first (unknown fields,
types, required, enums, minimum, patterns); the CEL rules are exercised on a real API server (tests/integration).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import by_group
from tests.support.paths import ROOT

FILES = ROOT / "roles" / "crds" / "files"
MANIFESTS = ROOT / "tests" / "integration" / "manifests"
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}


@functools.cache
def crd(group: str) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader: 300 kB files in milliseconds
    return yaml.load((FILES / f"mpijobs.{group}.yaml").read_text(), Loader=loader)


def schema_of(group: str) -> dict[str, Any]:
    (version,) = crd(group)["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def problems(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """What the API server's structural schema check would reject in `value`, one line per field."""
    if schema.get("x-kubernetes-int-or-string"):
        return [] if isinstance(value, (int, str)) else [f"{path}: not an integer or string"]
    kind = schema.get("type")
    if kind is None:
        return []  # x-kubernetes-preserve-unknown-fields scalars (quantities)
    if not isinstance(value, TYPES[kind]) or (kind in ("integer", "number") and isinstance(value, bool)):
        return [f"{path}: {type(value).__name__} is not {kind}"]
    out: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        out.append(f"{path}: {value} < {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if kind == "array":
        for i, item in enumerate(value):
            out += problems(item, schema.get("items", {}), f"{path}[{i}]")
    if kind == "object":
        out += [f"{path}.{key}: required" for key in schema.get("required", []) if key not in value]
        props, extra = schema.get("properties", {}), schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                out += problems(item, props[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                out += problems(item, extra, f"{path}.{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                out.append(f"{path}.{key}: unknown field")
    return out


def fields(schema: dict[str, Any], path: str = "") -> set[str]:
    """Every field path of a schema, down to (not into) the pod templates; map and list items as `*` and `[]`."""
    out: set[str] = set()
    for key, sub in schema.get("properties", {}).items():
        here = f"{path}.{key}"
        out.add(here)
        if not key.endswith("emplate"):  # template, launcherTemplate, workerTemplate: Kubernetes' PodTemplateSpec
            out |= fields(sub, here)
            if isinstance(sub.get("items"), dict):
                out |= fields(sub["items"], here + "[]")
    return out


# Every field each API's documentation names (batch.test.bdap.com: its example and README; T9k: its doc, field by
# field).
BDAP_FIELDS = {".spec.numWorkers", ".spec.launcherTemplate", ".spec.workerTemplate"}
T9K_FIELDS = {
    ".spec.worker.replicas",
    ".spec.worker.extraMPIArgs",
    ".spec.worker.cmd",
    ".spec.worker.template",
    ".spec.mca",
    ".spec.runPolicy.cleanUpWorkers",
    ".spec.ssh.sshdPath",
    ".spec.mpiHome",
    ".spec.scheduler.t9kScheduler.queue",
    ".spec.scheduler.t9kScheduler.priority",
    ".spec.runMode.debug.enabled",
    ".spec.runMode.debug.replicaSpecs[].type",
    ".spec.runMode.debug.replicaSpecs[].skipInitContainer",
    ".spec.runMode.debug.replicaSpecs[].command",
    ".spec.runMode.pause.enabled",
    ".spec.runMode.pause.resumeSpecs[].type",
    ".spec.runMode.pause.resumeSpecs[].skipInitContainer",
    ".spec.runMode.pause.resumeSpecs[].command",
    ".spec.runMode.pause.resumeSpecs[].args",
    ".status.conditions[].type",
    ".status.conditions[].status",
    ".status.conditions[].reason",
    ".status.conditions[].message",
    ".status.conditions[].lastTransitionTime",
    ".status.phase",
    ".status.tasks[].type",
    ".status.tasks[].restartCount",
    ".status.tasks[].status[].phase",
    ".status.tasks[].status[].name",
    ".status.tasks[].status[].uid",
    ".status.tasks[].status[].containers",
    *(
        f".status.aggregate.{k}"
        for k in ("creating", "pending", "running", "succeeded", "failed", "deleted", "unknown")
    ),
}


@pytest.mark.parametrize(
    ("group", "documented"), [("batch.test.bdap.com", BDAP_FIELDS), ("batch.tensorstack.dev", T9K_FIELDS)]
)
def test_every_documented_field_is_in_the_schema(group: str, documented: set[str]) -> None:
    assert documented - fields(schema_of(group)) == set()


@pytest.mark.parametrize(
    ("group", "name"),
    [("batch.test.bdap.com", "bdap-simple-train-cpu.yaml"), ("batch.tensorstack.dev", "t9k-mpi-example.yaml")],
)
def test_documented_example_fits_the_schema(group: str, name: str) -> None:
    obj = yaml.safe_load((MANIFESTS / name).read_text())
    assert obj["apiVersion"].split("/")[0] == group
    obj.pop("metadata")  # the API server checks ObjectMeta itself
    assert problems(obj, schema_of(group)) == []


def test_t9k_status_examples_fit_the_schema() -> None:
    """T9k's status examples, as its documentation writes them (its 'Initializing' condition type too)."""
    status = {
        "conditions": [
            {
                "lastTransitionTime": "2021-01-18T02:36:09Z",
                "status": "True",
                "reason": "-",
                "message": "The job has been initialized successfully.",
                "type": "Initializing",
            },
            {
                "lastTransitionTime": "2021-01-18T02:36:31Z",
                "status": "True",
                "reason": "Failed",
                "message": "The job exited with an error code.",
                "type": "Failed",
            },
        ],
        "phase": "Failed",
        "tasks": [
            {
                "type": "launcher",
                "restartCount": 0,
                "status": [
                    {
                        "phase": "Running",
                        "name": "mpi-example-launcher",
                        "uid": "66634db2-35e7-4641-a4dc-adbd5479734e",
                        "containers": [],
                    }
                ],
            }
        ],
        "aggregate": {
            "creating": 0,
            "deleted": 0,
            "failed": 0,
            "pending": 1,
            "running": 2,
            "succeeded": 0,
            "unknown": 0,
        },
    }
    assert problems(status, schema_of("batch.tensorstack.dev")["properties"]["status"], ".status") == []


@pytest.mark.parametrize(
    ("group", "obj", "expected"),
    [
        ("batch.test.bdap.com", {"spec": {"numWorkers": "5"}}, ".spec.numWorkers: str is not integer"),
        ("batch.test.bdap.com", {"spec": {"numWorkers": 0}}, ".spec.numWorkers: 0 < 1"),
        ("batch.test.bdap.com", {"spec": {"numworkers": 1}}, ".spec.numworkers: unknown field"),
        ("batch.test.bdap.com", {"spec": {}}, ".spec.launcherTemplate: required"),
        (
            "batch.tensorstack.dev",
            {"spec": {"worker": {"template": {"spec": {"containers": []}}, "cmd": "x"}}},
            ".spec.worker.cmd: str is not array",
        ),
        ("batch.tensorstack.dev", {"spec": {"worker": {}, "mca": {"btl": 1}}}, ".spec.mca.btl: int is not string"),
        (
            "batch.tensorstack.dev",
            {"spec": {"worker": {}, "ssh": {"sshdPath": "sshd"}}},
            ".spec.ssh.sshdPath: 'sshd' does not match ^/",
        ),
        ("batch.tensorstack.dev", {"spec": {"worker": {}, "mpiHome": "usr"}}, ".spec.mpiHome: 'usr' does not match ^/"),
        (
            "batch.tensorstack.dev",
            {"spec": {"worker": {}, "runMode": {"debug": {"replicaSpecs": [{"type": "ps"}]}}}},
            ".spec.runMode.debug.replicaSpecs[0].type: 'ps' not in ['launcher', 'worker']",
        ),
    ],
)
def test_the_check_rejects_what_the_schema_rejects(group: str, obj: dict, expected: str) -> None:
    """The structural check above can fail: each bad manifest names its field."""
    assert expected in problems(obj, schema_of(group))


def test_t9k_rules_from_its_doc() -> None:
    spec = schema_of("batch.tensorstack.dev")["properties"]["spec"]["properties"]
    rules = [r["rule"] for r in spec["worker"]["properties"]["template"]["x-kubernetes-validations"]]
    assert rules == ["self.spec.containers.exists(c, c.name == 'mpi-worker')"]
    resume = spec["runMode"]["properties"]["pause"]["properties"]["resumeSpecs"]
    assert [r["rule"] for r in resume["x-kubernetes-validations"]] == ["self == oldSelf"]


@pytest.mark.parametrize(
    ("group", "version", "columns", "scale"),
    [
        (
            "batch.test.bdap.com",
            "v1",
            ["Workers", "Ready", "Phase", "Restarts", "Age"],
            {
                "specReplicasPath": ".spec.numWorkers",
                "statusReplicasPath": ".status.readyWorkers",
                "labelSelectorPath": ".status.selector",
            },
        ),
        (
            "batch.tensorstack.dev",
            "v1beta1",
            ["Phase", "Workers", "Restarts", "Age"],
            {"specReplicasPath": ".spec.worker.replicas", "statusReplicasPath": ".status.aggregate.running"},
        ),
    ],
)
def test_names_columns_and_subresources(group: str, version: str, columns: list[str], scale: dict) -> None:
    obj = crd(group)
    assert obj["metadata"]["name"] == f"mpijobs.{group}"
    assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "mpi.operator"
    assert obj["spec"]["names"]["kind"] == "MPIJob" and obj["spec"]["scope"] == "Namespaced"
    (v,) = obj["spec"]["versions"]
    assert (v["name"], v["served"], v["storage"]) == (version, True, True)
    assert v["subresources"] == {"status": {}, "scale": scale}
    # `kubectl scale` sets the workers: the paths are in the schema, the spec's the one the core reads.
    assert scale["specReplicasPath"] == "." + ".".join(by_group(group).workers_path)
    props = v["schema"]["openAPIV3Schema"]
    for kind, path in scale.items():
        node = props
        for key in path.lstrip(".").split("."):
            node = node["properties"][key]
        assert node["type"] == ("string" if kind == "labelSelectorPath" else "integer"), path
    assert [c["name"] for c in v["additionalPrinterColumns"]] == columns
