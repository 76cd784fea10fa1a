"""Helpers for the T9k (batch.tensorstack.dev/v1beta1) tests: its documentation's own examples, a world with real pods."""

from __future__ import annotations

import copy
import pathlib

import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P

from ._helpers import at, plan, set_phase, world_after

T9K_DOC = pathlib.Path(__file__).parent / "t9k_doc"  # the examples of T9k's MPIJob documentation, copied as they are


def doc_examples(name: str) -> list[dict]:
    """The documents of an example of T9k's documentation. The doc elides with `...`: a line that is only `...` is "the rest of the
    manifest" and `- ...` is "this list entry's other fields"; both are read as absent."""
    lines = T9K_DOC.joinpath(f"{name}.txt").read_text().splitlines()
    text = "\n".join("" if line.strip() == "..." else line.replace("- ...", "-") for line in lines)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _merge(base, over):
    """`over` on `base`: maps by key, lists by index (the doc's fragments complete the first example)."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in over.items()}}
    if isinstance(base, list) and isinstance(over, list):
        return [_merge(base[i] if i < len(base) else None, v) for i, v in enumerate(over)] + base[len(over) :]
    return copy.deepcopy(over) if over is not None else copy.deepcopy(base)


def random_walk() -> dict:
    """The documentation's first example, with the namespace and uid the API server would give it."""
    obj = doc_examples("random_walk")[0]
    obj["metadata"].update(namespace="ns", uid="uid-mpi-example")
    return obj


def completed(fragment: dict) -> dict:
    """A fragment of the doc on top of its first example."""
    return _merge(random_walk(), fragment)


def t9k(**spec) -> dict:
    """The first example with spec keys replaced."""
    obj = random_walk()
    obj["spec"].update(copy.deepcopy(spec))
    return obj


def with_uids(world: P.World) -> P.World:
    """Pods as the API server stores them: with a uid."""
    for pod in world.pods:
        pod["metadata"].setdefault("uid", "uid-" + pod["metadata"]["name"])
    return world


def settle(obj: dict, world: P.World | None = None, now=None) -> P.World:
    world = world or P.World(mpijob=obj)
    world.mpijob = obj
    for _ in range(6):
        p = plan(world.mpijob, world, now=now or at(0))
        if not [a for a in p.actions if a.action not in ("event",)]:
            return world
        world = with_uids(world_after(world, p))
    raise AssertionError("no fixed point")


def launcher_pod(world: P.World, phase: str) -> dict:
    name = world.mpijob["metadata"]["name"]
    return set_phase(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-launcher-abcde",
                "uid": "uid-launcher-pod",
                "creationTimestamp": "2026-01-01T00:00:10Z",
                "labels": {"training.kubeflow.org/job-name": name, "training.kubeflow.org/job-role": "launcher"},
                "ownerReferences": [{"controller": True, "uid": world.launcher["metadata"]["uid"]}],
            },
        },
        phase,
    )


def workers_ready(world: P.World, phase: str = "Running") -> P.World:
    world.pods = [{**set_phase(p, phase, ready=phase == "Running"), "metadata": p["metadata"]} for p in world.pods]
    return world


def step(world: P.World, now: float) -> tuple[P.Plan, P.World]:
    p = plan(world.mpijob, world, now=at(now))
    return p, with_uids(world_after(world, p))
