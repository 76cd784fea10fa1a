"""Random mutations of valid manifests, for the bad-input storm: what users' broken manifests look like (a type
swapped, a field removed, a huge value, a unicode name, an enum no API has), deterministic for a seed. Pure: the
unit tier feeds the same mutations to the core, the chaos harness applies them to the cluster."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterator
from typing import Any

Path = tuple[Any, ...]

# How the operator's ValidationError names the fields it refuses, by their path: "Found validation errors:
# metadata.name: ...", "spec.numWorkers: ...", "apiVersion: ..." (the unit tier and the storm on the cluster check it).
FIELD = re.compile(r"^Found validation errors: (<object>|apiVersion|kind|metadata|spec)[.\[:\w]")

HUGE = (2**31 - 1, 2**31, 2**63, -1, -(2**31), 10**30, 1e308, float("inf"), 0.5)
STRINGS = ("", " ", "Bogus", "x" * 70_000, "mpi-ß-😀", "../../etc/passwd", "1e3", "null", "true", "-1")
NAMES = ("mpi-ß-😀", "Pi", "-pi", "pi_", "a" * 64, "pi.worker", "", "9pi")


def paths(node: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path into `node` (dict keys, list indexes), parents before children."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from paths(value, (*prefix, index))


def get(node: Any, path: Path) -> Any:
    for part in path:
        node = node[part]
    return node


def swapped(value: Any, rng: random.Random) -> Any:
    """A value of another JSON type than `value`'s."""
    if isinstance(value, bool):
        return rng.choice(["true", 1, None, [value]])
    if isinstance(value, (int, float)):
        return rng.choice([str(value), [value], {"value": value}, True, None])
    if isinstance(value, str):
        return rng.choice([12, 1.5, [value], {"name": value}, False, None])
    if isinstance(value, list):
        return rng.choice([{"0": value[0] if value else None}, "a,b", 3, None])
    if isinstance(value, dict):
        return rng.choice([list(value.values()), "object", 7, None, True])
    return rng.choice(["x", 0, [], {}])


def replacement(path: Path, value: Any, rng: random.Random) -> tuple[str, Any]:
    """(what was done, the new value) for the node at `path`."""
    if path and path[-1] == "name" and isinstance(value, str):
        return "unicode or bad name", rng.choice(NAMES)
    kind = rng.choice(["swap", "huge", "string", "empty", "nest"])
    if kind == "huge":
        return "huge value", rng.choice(HUGE)
    if kind == "string":
        return "odd string", rng.choice(STRINGS)
    if kind == "empty":
        return "empty", rng.choice(["", [], {}, 0])
    if kind == "nest":
        deep: Any = value
        for _ in range(rng.randint(5, 60)):
            deep = {"a": deep}
        return "deep nesting", deep
    return "type swapped", swapped(value, rng)


def mutate(manifest: dict, rng: random.Random, count: int = 0) -> tuple[dict, list[str]]:
    """A copy of `manifest` with 1-3 mutations (or `count`), and what each did ("spec.x: type swapped").
    metadata.namespace is left alone: the harness decides where a manifest goes."""
    out = copy.deepcopy(manifest)
    done: list[str] = []
    for _ in range(count or rng.randint(1, 3)):
        candidates = [p for p in paths(out) if p and p[:2] != ("metadata", "namespace")]
        if not candidates:
            break
        path = rng.choice(candidates)
        parent = get(out, path[:-1])
        where = ".".join(str(p) for p in path)
        if isinstance(parent, dict) and rng.random() < 0.3:
            del parent[path[-1]]
            done.append(f"{where}: removed")
            continue
        what, value = replacement(path, get(out, path), rng)
        parent[path[-1]] = value
        done.append(f"{where}: {what}")
    return out, done


def storm(manifests: list[dict], n: int, seed: int = 0) -> Iterator[tuple[dict, list[str]]]:
    """`n` mutated manifests, cycling through `manifests` (one per API, say), reproducible from `seed`."""
    rng = random.Random(seed)
    for i in range(n):
        yield mutate(manifests[i % len(manifests)], rng)
