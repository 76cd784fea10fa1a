"""The batch.test.bdap.com README's MPIJob through its life (created, workers ready, running, succeeded): the bdap API's
tests and the API documentation tests both walk it."""

from __future__ import annotations

import copy

import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from tests.support.paths import ROOT

from ._helpers import at, kinds, plan, set_phase, world_after

EXAMPLE = ROOT / "tests" / "integration" / "manifests" / "bdap-simple-train-cpu.yaml"
NAME, NS = "simple-train-cpu", "sw-mpi-operator"


def example() -> dict:
    """The README's example as the API server stores it (it adds the uid)."""
    obj = yaml.safe_load(EXAMPLE.read_text())
    obj["metadata"].update(uid="uid-bdap", resourceVersion="1")
    return obj


def settle(world: P.World, now: float = 0) -> P.World:
    for _ in range(5):
        p = plan(world.mpijob, world, now=at(now))
        if not [a for a in p.actions if a.action != "event"]:
            return world
        world = world_after(world, p)
    raise AssertionError(f"no fixed point: {kinds(p)}")


def ready_workers(world: P.World) -> P.World:
    world.pods = [set_phase(p, "Running", ready=True) for p in world.pods]
    return world


def launcher(world: P.World, phase: str, exit_code: int | None = None) -> P.World:
    """The world with the launcher pod <job>-launcher (which the plan created) in `phase`."""

    def moved(pod: dict) -> dict:
        if pod["metadata"]["name"] != f"{NAME}-launcher":
            return pod
        pod = set_phase(pod, phase)
        pod["metadata"]["uid"] = "uid-launcher-pod"
        if exit_code is not None:
            pod["status"]["containerStatuses"] = [
                {
                    "name": "horovod-master",
                    "state": {"terminated": {"exitCode": exit_code, "finishedAt": "2026-01-01T00:05:00Z"}},
                }
            ]
        return pod

    world = copy.deepcopy(world)
    world.pods = [moved(p) for p in world.pods]
    return world


def lifecycle() -> list[tuple[str, P.Plan, P.World]]:
    """(step, plan, world after it) from creation to success."""
    steps = []
    world = P.World(mpijob=example())
    p = plan(world.mpijob, world, now=at(0))
    world = world_after(world, p)
    steps.append(("created", p, world))
    world = ready_workers(settle(world))
    p = plan(world.mpijob, world, now=at(30))
    world = world_after(world, p)
    steps.append(("workers-ready", p, world))
    world = launcher(world, "Running")
    p = plan(world.mpijob, world, now=at(40))
    world = world_after(world, p)
    steps.append(("running", p, world))
    world = launcher(world, "Succeeded", exit_code=0)
    p = plan(world.mpijob, world, now=at(300))
    world = world_after(world, p)
    steps.append(("succeeded", p, world))
    return steps
