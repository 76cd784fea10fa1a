# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Reading a batch: each namespace's MPIJobs and their children with one LIST per kind (label selectors on the
job names), the PriorityClass values PodGroups need, and the World the core plans from."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..mpijob import children as K
from ..mpijob import constants as C
from ..mpijob.apis import api_for, has_failure_policy
from ..mpijob.errors import ApiError
from ..mpijob.plan import World, pod_as_seen, secret_as_seen
from ..mpijob.protocol import Key
from ..mpijob.record import record_name
from .paths import collection, item, mpijob_path
from .rest import Rest

# Each job of a batch is read with a GET, never with a LIST of its API: a LIST returns every MPIJob of the namespace
# (all of them, whatever the batch), so a batch's cost and the run's memory would grow with the namespace, not with the
# batch (docs/operator.md). READS: the reads in flight at once, of every namespace of a batch (the transport keeps 16
# connections).
READS = 8
_reads = threading.BoundedSemaphore(READS)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _by_name(items: list[dict]) -> dict[str, dict]:
    return {i["metadata"]["name"]: i for i in items}


def _in(names: list[str]) -> str:
    return "(" + ",".join(sorted(names)) + ")"


@dataclass
class Namespaced:
    """The children of a namespace's jobs, read with one LIST per kind."""

    services: dict[str, dict] = field(default_factory=dict)
    config_maps: dict[str, dict] = field(default_factory=dict)
    secrets: dict[str, dict] = field(default_factory=dict)
    jobs: dict[str, dict] = field(default_factory=dict)
    pod_groups: dict[str, dict] = field(default_factory=dict)
    launcher_rbac: dict[str, dict[str, dict]] = field(default_factory=dict)  # kind -> name -> object
    pods_by_job: dict[str, list[dict]] = field(default_factory=dict)
    gone_pods_by_job: dict[str, list[dict]] = field(default_factory=dict)  # World.gone_pods: the operator's only


def read_namespace(rest: Rest, namespace: str, keys: list[Key], opts: K.Options) -> tuple[dict[Key, dict], Namespaced]:
    """(MPIJobs by key, their children) for the jobs `keys` of one namespace: a GET per job and one LIST per kind of
    child for all of them, selected by the jobs' names (the children of every API are the same kinds), all at once: a
    batch waits for its slowest read, not for their sum."""

    def got(key: Key) -> dict[Key, dict]:
        obj = rest.get(mpijob_path(key.api_version, namespace, key.name))
        return {} if obj is None else {key: obj}

    kids = Namespaced()
    # The children of the jobs asked for (one that turns out to be gone has none to plan: they are ignored).
    labelled = sorted({k.name for k in keys if _LABEL_VALUE.match(k.name) and len(k.name) <= 63})
    app = f"{C.APP_LABEL} in {_in(labelled)}"
    job_reads: dict[str, Callable[[], Any]] = {f"mpijob {key}": partial(got, key) for key in keys}
    reads = dict(job_reads)
    if labelled:
        reads.update(
            {
                "services": partial(rest.list, collection("v1", "Service", namespace), app),
                "config_maps": partial(rest.list, collection("v1", "ConfigMap", namespace), app),
                "secrets": partial(rest.list, collection("v1", "Secret", namespace), app),
                "jobs": partial(rest.list, collection("batch/v1", "Job", namespace), app),
                "pods": partial(
                    rest.list, collection("v1", "Pod", namespace), f"{C.JOB_NAME_LABEL} in {_in(labelled)}"
                ),
            }
        )
        if opts.gang_scheduling:
            api = C.VOLCANO_PODGROUP_API if opts.volcano else C.PLUGINS_PODGROUP_API
            reads["pod_groups"] = partial(rest.list, collection(api, "PodGroup", namespace))
    done = _all_at_once(reads)
    mpijobs: dict[Key, dict] = {}
    for name in job_reads:
        mpijobs.update(done[name])
    mpijobs = {k: mpijobs[k] for k in keys if k in mpijobs}  # in the batch's order
    if not labelled or not mpijobs:
        return mpijobs, kids
    kids.services, kids.config_maps = _by_name(done["services"]), _by_name(done["config_maps"])
    kids.secrets, kids.jobs = _by_name(done["secrets"]), _by_name(done["jobs"])
    kids.pod_groups = _by_name(done.get("pod_groups") or [])
    for pod in done["pods"]:
        kids.pods_by_job.setdefault(pod["metadata"]["labels"][C.JOB_NAME_LABEL], []).append(pod)
    if any(api_for(obj).launcher_rbac for obj in mpijobs.values()):
        kids.launcher_rbac = launcher_rbac(rest, namespace, app)
    return mpijobs, kids


def launcher_rbac(rest: Rest, namespace: str, selector: str) -> dict[str, dict[str, dict]]:
    """The launchers' ServiceAccounts, Roles and RoleBindings of the jobs `selector` selects: kind -> name -> object."""
    return {
        kind: _by_name(rest.list(collection(api_version, kind, namespace), selector))
        for api_version, kind in (
            ("v1", "ServiceAccount"),
            (C.RBAC_API_VERSION, "Role"),
            (C.RBAC_API_VERSION, "RoleBinding"),
        )
    }


def given(
    rest: Rest, key: Key, world: dict, opts: K.Options
) -> tuple[list[Key], dict[Key, dict], Namespaced | Exception]:
    """A job whose world the operator handed (what its watches saw, mpijob_operator/store.py), as read_namespace
    returns a namespace's, nothing read. A job of an API whose launcher has RBAC objects of its own (not watched) is
    read instead."""
    obj = world["mpijob"]
    if api_for(obj).launcher_rbac:
        try:
            found, read = read_namespace(rest, key.namespace, [key], opts)
        except ApiError as exc:
            return [key], {}, exc
        return [key], found, read
    name = key.name
    kids = Namespaced(
        services=_one(name, world.get("service")),
        config_maps={
            **_one(name + C.CONFIG_SUFFIX, world.get("config_map")),
            **_one(record_name(name), world.get("record")),
        },
        secrets=_one(name + C.SSH_SUFFIX, world.get("secret")),
        jobs=_one(name + C.LAUNCHER_SUFFIX, world.get("launcher")),
        pod_groups=_one(name, world.get("pod_group")),
        pods_by_job={name: [p for p in world.get("pods") or [] if isinstance(p, dict)]},
        gone_pods_by_job={name: [p for p in world.get("gone_pods") or [] if isinstance(p, dict)]},
    )
    return [key], {key: obj}, kids


def _one(name: str, obj: object) -> dict[str, dict]:
    """{name: obj} for an object the world holds under that name, else nothing."""
    return {name: obj} if isinstance(obj, dict) and (obj.get("metadata") or {}).get("name") == name else {}


def _all_at_once(reads: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Each read's value by name, the reads made concurrently (READS at most); the first error (ApiError,
    Unreachable) is raised."""

    def bounded(read: Callable[[], Any]) -> Any:
        with _reads:
            return read()

    with ThreadPoolExecutor(max_workers=min(len(reads), READS)) as pool:
        futures = {name: pool.submit(bounded, read) for name, read in reads.items()}
        return {name: future.result() for name, future in futures.items()}


def node_names(obj: dict, kids: Namespaced) -> set[str]:
    """The nodes a job's pods run on, when it has a failure policy (restart.py: a pod whose node is lost), or a
    hostfile topology and a launcher not started yet (the planner orders the hostfile by the nodes' labels)."""
    name = obj["metadata"]["name"]
    launcher = kids.jobs.get(name + C.LAUNCHER_SUFFIX)
    placing = C.HOSTFILE_TOPOLOGY_ANNOTATION in (obj["metadata"].get("annotations") or {}) and (
        launcher is None or bool((launcher.get("spec") or {}).get("suspend"))
    )
    if not (has_failure_policy(obj) or placing):
        return set()
    pods = kids.pods_by_job.get(name, [])
    return {n for p in pods if isinstance(n := (p.get("spec") or {}).get("nodeName"), str) and n}


def read_nodes(rest: Rest, names: set[str]) -> dict[str, dict | None]:
    """Each node by name, None for one that is gone; one the operator could not read (no RBAC, an error) is left out:
    not known, never taken for lost."""

    def one(name: str) -> dict | bool | None:
        try:
            return rest.get(item("v1", "Node", "", name))
        except ApiError:
            return False

    if not names:
        return {}
    found = _all_at_once({name: partial(one, name) for name in sorted(names)})
    return {name: node for name, node in found.items() if node is not False}


def world_of(obj: dict, kids: Namespaced, priorities: dict[str, int], nodes: dict[str, dict | None]) -> World:
    name = obj["metadata"]["name"]
    return World(
        mpijob=obj,
        service=kids.services.get(name),
        config_map=kids.config_maps.get(name + C.CONFIG_SUFFIX),
        secret=secret_as_seen(secret) if (secret := kids.secrets.get(name + C.SSH_SUFFIX)) else None,
        launcher=kids.jobs.get(name + C.LAUNCHER_SUFFIX),
        pod_group=kids.pod_groups.get(name),
        launcher_rbac={
            kind: found[name + C.LAUNCHER_SUFFIX]
            for kind, found in kids.launcher_rbac.items()
            if name + C.LAUNCHER_SUFFIX in found
        },
        pods=[pod_as_seen(p) for p in kids.pods_by_job.get(name, [])],
        priorities=priorities,
        nodes={n: nodes[n] for n in node_names(obj, kids) if n in nodes},
        record=kids.config_maps.get(record_name(name)),
        gone_pods=kids.gone_pods_by_job.get(name, []),
    )


def priority_values(rest: Rest, mpijobs: list[dict], opts: K.Options) -> dict[str, int]:
    """Values of the PriorityClasses the jobs' templates name (only needed for PodGroup minResources)."""
    if not opts.gang_scheduling:
        return {}
    names = set()
    for obj in mpijobs:
        for replica in ((obj.get("spec") or {}).get("mpiReplicaSpecs") or {}).values():
            pc = (((replica or {}).get("template") or {}).get("spec") or {}).get("priorityClassName")
            if isinstance(pc, str) and pc:
                names.add(pc)
    values = {}
    for pc in sorted(names):
        try:
            found = rest.get(item("scheduling.k8s.io/v1", "PriorityClass", "", pc))
        except ApiError:
            continue  # as in Kubeflow, an unreadable PriorityClass counts as priority 0
        if found is not None:
            values[pc] = int(found.get("value") or 0)
    return values
