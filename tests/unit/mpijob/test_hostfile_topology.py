"""The hostfile in topology order (`mpi.operator/hostfile-topology`): the launcher waits until every worker is bound
to a node, and the hostfile lists the workers by their nodes' values of the named labels, then by index, so that
consecutive ranks are topology neighbours. A job that does not ask, or whose nodes lack the labels, keeps Kubeflow's
index order."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow

from ._helpers import at, kinds, manifest, plan, set_phase, settle, world_after

ZONE, RACK = "topology.kubernetes.io/zone", "example.com/rack"
# worker i -> its node; the nodes' racks interleave with the indices.
NODES = {"n-a": ("z1", "r2"), "n-b": ("z1", "r1"), "n-c": ("z1", "r2"), "n-d": ("z1", "r1")}
BOUND = ["n-a", "n-b", "n-c", "n-d"]


def asking(obj: dict, keys: str = f"{ZONE},{RACK}") -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("annotations", {})[C.HOSTFILE_TOPOLOGY_ANNOTATION] = keys
    return obj


def node(name: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def bind(world: P.World, nodes: list[str | None]) -> P.World:
    """The workers bound (spec.nodeName) to `nodes` by index (None: not yet), and the nodes as the shell reads them."""
    world = copy.deepcopy(world)
    for pod in world.pods:
        index = int(pod["metadata"]["name"].rsplit("-", 1)[1])
        if nodes[index]:
            pod.setdefault("spec", {})["nodeName"] = nodes[index]
    world.nodes = {n: node(n, {ZONE: z, RACK: r}) for n, (z, r) in NODES.items()}
    return world


def hostfile_lines(p: P.Plan, world: P.World) -> list[str]:
    """The hostfile's hosts once the plan took effect."""
    data = world_after(world, p).config_map["data"]
    return [line.split(".")[0] for line in data["hostfile"].splitlines()]


def test_topology_order_sorts_by_the_labels_widest_first_then_by_index() -> None:
    job = kubeflow.parse(asking(manifest(workers=5)))
    placement = {0: ("z2", "r1"), 1: ("z1", "r2"), 2: ("z1", "r1"), 3: ("z2", "r1"), 4: ("z1", "r2")}
    assert K.topology_order(job, placement) == [2, 1, 4, 0, 3]
    assert K.topology_order(job, {i: placement[i] for i in range(4)}) is None  # worker 4 not placed yet
    # Nodes without the labels: index order.
    assert K.topology_order(job, dict.fromkeys(range(5), ("", ""))) == [0, 1, 2, 3, 4]
    # A job that does not ask: index order always.
    assert K.topology_order(kubeflow.parse(manifest(workers=5)), placement) is None


def test_the_launcher_waits_until_every_worker_is_bound_then_the_hostfile_groups_the_racks() -> None:
    world = settle(asking(manifest(workers=4)))
    assert world.launcher is None  # no worker bound yet
    assert hostfile_lines(plan(world.mpijob, world), world) == [f"pi-worker-{i}" for i in range(4)]
    partly = bind(world, ["n-a", "n-b", None, "n-d"])
    p = plan(partly.mpijob, partly, now=at(1))
    assert not [a for a in p.actions if a.kind == "Job"], kinds(p)
    bound = bind(world, BOUND)
    p = plan(bound.mpijob, bound, now=at(2))
    order = [(a.action, a.kind) for a in p.actions if a.kind in ("ConfigMap", "Job")]
    assert order == [("patch", "ConfigMap"), ("create", "Job")]  # the hostfile first, then the launcher mounting it
    # r1's workers (1, 3) first, then r2's (0, 2): rank order keeps each rack together.
    assert hostfile_lines(p, bound) == ["pi-worker-1", "pi-worker-3", "pi-worker-0", "pi-worker-2"]
    # Settled: a second pass changes nothing.
    after = world_after(bound, p)
    assert not [a for a in plan(after.mpijob, after, now=at(3)).actions if a.action != "event"]


def test_the_order_stays_while_a_worker_is_away_and_without_the_nodes() -> None:
    world = bind(settle(asking(manifest(workers=4))), BOUND)
    world = world_after(world, plan(world.mpijob, world, now=at(2)))
    world.pods = [set_phase(p, "Running", ready=True) for p in world.pods]
    # The launcher runs: the shell no longer reads the nodes, and worker 2 is being remade (not bound).
    world.nodes = {}
    p = plan(world.mpijob, world, now=at(9))
    assert hostfile_lines(p, world) == ["pi-worker-1", "pi-worker-3", "pi-worker-0", "pi-worker-2"]
    world.pods = [p for p in world.pods if p["metadata"]["name"] != "pi-worker-2"]
    p = plan(world.mpijob, world, now=at(10))
    assert ("create", "Pod", "pi-worker-2") in kinds(p)
    assert hostfile_lines(p, world) == ["pi-worker-1", "pi-worker-3", "pi-worker-0", "pi-worker-2"]


def test_a_job_that_does_not_ask_keeps_kubeflows_index_order_on_the_same_nodes() -> None:
    world = bind(settle(manifest(workers=4)), BOUND)
    assert world.launcher is not None  # AtStartup: the launcher never waited for the nodes
    p = plan(world.mpijob, world, now=at(2))
    assert hostfile_lines(p, world) == [f"pi-worker-{i}" for i in range(4)]


def test_run_launcher_as_worker_keeps_the_launcher_first() -> None:
    world = bind(settle(asking(manifest(workers=4, runLauncherAsWorker=True))), BOUND)
    p = plan(world.mpijob, world, now=at(2))
    assert hostfile_lines(p, world) == ["pi-launcher", "pi-worker-1", "pi-worker-3", "pi-worker-0", "pi-worker-2"]


@pytest.mark.parametrize("policy", ["AtStartup", "WaitForWorkersReady"])
def test_a_resumed_job_starts_its_launcher_only_once_the_order_is_known(policy: str) -> None:
    """Suspended at creation (as Kueue submits) then resumed: the launcher (made or let go) waits until the workers
    are bound (and, with WaitForWorkersReady, Ready)."""
    world = settle(asking(manifest(workers=4, runPolicy={"suspend": True}, launcherCreationPolicy=policy)))
    world.mpijob["spec"]["runPolicy"]["suspend"] = False
    world = world_after(world, plan(world.mpijob, world, now=at(5)))  # the workers made
    p = plan(world.mpijob, world, now=at(6))
    assert not [a for a in p.actions if a.kind == "Job"], kinds(p)
    bound = bind(world, BOUND)
    bound.pods = [set_phase(pod, "Running", ready=True) for pod in bound.pods]
    p = plan(bound.mpijob, bound, now=at(7))
    assert [a.action for a in p.actions if a.kind in ("ConfigMap", "Job")][-1] in ("create", "patch"), kinds(p)
    assert [a.kind for a in p.actions if a.kind in ("ConfigMap", "Job")] == ["ConfigMap", "Job"], kinds(p)
    assert hostfile_lines(p, bound) == ["pi-worker-1", "pi-worker-3", "pi-worker-0", "pi-worker-2"]
