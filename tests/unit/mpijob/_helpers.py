"""Shared test helpers: MPIJob manifests, a clock, golden YAML files."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import os
import pathlib
from datetime import datetime, timedelta, timezone

import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.planner import plan_job
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.record import record_config_map

GOLDEN = pathlib.Path(__file__).parent / "golden"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
KEYS = (b"-----BEGIN EC PRIVATE KEY-----\ntest\n-----END EC PRIVATE KEY-----\n", b"ecdsa-sha2-nistp521 AAAA test\n")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def keys() -> tuple[bytes, bytes]:
    return KEYS


def manifest(name: str = "pi", workers: int | None = 2, **spec) -> dict:
    """A v2beta1 MPIJob like Kubeflow's `pi` example; keyword arguments are merged into spec."""
    obj = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "launcher", "image": "mpi-pi", "command": ["mpirun", "-n", "2", "/home/pi"]}
                            ]
                        }
                    },
                },
            },
        },
    }
    if workers is not None:
        obj["spec"]["mpiReplicaSpecs"]["Worker"] = {
            "replicas": workers,
            "template": {"spec": {"containers": [{"name": "worker", "image": "mpi-pi"}]}},
        }
    for key, value in spec.items():
        obj["spec"][key] = value
    return obj


def with_status(obj: dict, status: dict) -> dict:
    return {**copy.deepcopy(obj), "status": copy.deepcopy(status)}


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(docs: list) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def assert_golden(name: str, docs: list) -> None:
    """Compares with golden/<name>.yaml; UPDATE_GOLDEN=1 rewrites the file instead."""
    path = GOLDEN / f"{name}.yaml"
    text = dump(docs)
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        if not path.exists() and os.environ.get("UPDATE_GOLDEN") != "1":
            raise AssertionError(f"{path} is missing: run with UPDATE_GOLDEN=1 to create it")
        path.write_text(text)
        return
    assert list(yaml.safe_load_all(path.read_text())) == list(yaml.safe_load_all(text)), (
        f"{path.name} differs from what the builders make now (UPDATE_GOLDEN=1 to accept):\n{text}"
    )


def world_after(world: P.World, plan: P.Plan) -> P.World:
    """The world once a plan's creates, patches and deletes took effect (a stand-in for the API server's storage,
    enough to check that a second plan is empty)."""
    w = copy.deepcopy(world)
    slots = {
        "Service": "service",
        "ConfigMap": "config_map",
        "Secret": "secret",
        "Job": "launcher",
        "PodGroup": "pod_group",
    }
    for a in plan.actions:
        if a.action == "record":  # the shell's reads: each pod's log is one line
            logs = {e["uid"] or e["name"]: (f"log of {e['name']}\n", "") for e in (a.body or {}).get("pods") or []}
            w.record = record_config_map(a.body or {}, logs, [], "2026-01-01T00:00:00Z")
            w.record["metadata"]["uid"] = f"uid-{a.name}"
        elif a.kind == "Pod":
            if a.action == "create":
                w.pods.append(copy.deepcopy(a.body))
            elif a.action == "delete":
                w.pods = [p for p in w.pods if p["metadata"]["name"] != a.name]
            elif a.action == "patch":
                w.pods = [_merge(p, a.body) if p["metadata"]["name"] == a.name else p for p in w.pods]
        elif a.kind in ("ServiceAccount", "Role", "RoleBinding") and a.action == "create":
            obj = copy.deepcopy(a.body)
            obj["metadata"]["uid"] = f"uid-{a.kind}-{a.name}"
            w.launcher_rbac[a.kind] = obj
        elif a.kind in slots:
            attr = slots[a.kind]
            if a.action == "create":
                obj = copy.deepcopy(a.body)
                obj["metadata"]["uid"] = f"uid-{a.name}"
                setattr(w, attr, obj)
            elif a.action == "delete":
                setattr(w, attr, None)
            elif a.action == "patch" and not a.subresource:
                setattr(w, attr, _merge(getattr(w, attr), a.body))
        elif a.action == "status":
            w.mpijob = with_status(w.mpijob, a.body)
    return w


def _merge(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def as_seen(world: P.World) -> P.World:
    """The world as the operator's store and the module's reads hand it to the planner (plan.py, pod_as_seen)."""
    secret = P.secret_as_seen(world.secret) if world.secret else None
    return dataclasses.replace(world, pods=[P.pod_as_seen(p) for p in world.pods], secret=secret)


def plan(
    obj: dict,
    world: P.World | None = None,
    opts: K.Options | None = None,
    now: datetime = T0,
    held_for: float | None = None,
) -> P.Plan:
    """The plan of `obj` in `world`; every test that plans checks on the way that the world as the planner is handed
    it (pods and the SSH Secret cut to what it reads, as_seen) plans the same."""
    world = world or P.World(mpijob=obj)
    world.mpijob = obj
    whole = plan_job(obj, copy.deepcopy(world), opts or K.Options(), now, keys, held_for)
    seen = plan_job(obj, as_seen(copy.deepcopy(world)), opts or K.Options(), now, keys, held_for)
    assert seen == whole, "the planner reads a field of a pod or Secret that a World does not hold (plan.pod_as_seen)"
    return whole


def kinds(p: P.Plan) -> list[tuple[str, str, str]]:
    return [(a.action, a.kind, a.name) for a in p.actions]


def set_phase(pod: dict, phase: str, ready: bool = False, reason: str = "") -> dict:
    pod = copy.deepcopy(pod)
    pod["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if reason:
        pod["status"]["reason"] = reason
    return pod


def settle(obj: dict, opts: K.Options | None = None, now=None, world: P.World | None = None) -> P.World:
    """Plans and applies until nothing is left to do; returns the world."""
    world = world or P.World(mpijob=obj)
    world.mpijob = obj
    for _ in range(5):
        p = plan(world.mpijob, world, opts, now or at(0))
        if not [a for a in p.actions if a.action != "event"]:
            return world
        world = world_after(world, p)
    raise AssertionError(f"no fixed point: {kinds(p)}")


def launcher_pod(world: P.World, phase: str, name: str = "pi-launcher-abcde") -> dict:
    return set_phase(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "creationTimestamp": "2026-01-01T00:00:10Z",
                "labels": {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/job-role": "launcher"},
                "ownerReferences": [{"controller": True, "uid": world.launcher["metadata"]["uid"]}],
            },
        },
        phase,
    )


def run_all(world: P.World, launcher_phase: str = "Running") -> P.World:
    world.pods = [set_phase(p, "Running", ready=True) for p in world.pods]
    world.pods.append(launcher_pod(world, launcher_phase))
    return world


def finish_launcher(world: P.World, ctype: str = "Complete", reason: str = "") -> P.World:
    world.launcher = copy.deepcopy(world.launcher)
    world.launcher["status"] = {
        "conditions": [{"type": ctype, "status": "True", "reason": reason}],
        "completionTime": "2026-01-01T00:05:00Z",
        "failed": 1 if ctype == "Failed" else 0,
    }
    return world


_GARBAGE = [None, 0, -3, 1.5, "", "x", True, [], [1], {}, {"a": 1}]


def _field_paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*prefix, k)
            yield from _field_paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield (*prefix, i)
            yield from _field_paths(v, (*prefix, i))


def malformed(base: dict):
    """(path, copy of `base` with the field at path replaced by one garbage JSON value), for every field and value."""
    for path, value in itertools.product(list(_field_paths(base)), _GARBAGE):
        obj = copy.deepcopy(base)
        target = obj
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        yield path, obj


def failure_policy_fields(path: str, with_rule_fields: bool) -> list[str]:
    """The failure policy's field paths under `path`, as a CRD's field list names them (its rules' own fields too when
    the walker steps into array items)."""
    fields = [path] + [
        f"{path}.{k}" for k in ("maxRestarts", "maxDisruptionRestarts", "nodeLostSeconds", "workerFailure", "rules")
    ]
    if with_rule_fields:
        rule = f"{path}.rules"
        fields += [f"{rule}.action", f"{rule}.onExitCodes", f"{rule}.onPodConditions"]
        fields += [f"{rule}.onExitCodes.{k}" for k in ("containerName", "operator", "values")]
        fields += [f"{rule}.onPodConditions.{k}" for k in ("type", "status")]
    return fields
