"""Reading a batch: each namespace's MPIJobs and their children with one LIST per kind (label selectors on the
job names), the PriorityClass values PodGroups need, and the World the core plans from."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote

from ..mpijob import children as K
from ..mpijob import constants as C
from ..mpijob.apis import api_for
from ..mpijob.errors import ApiError
from ..mpijob.plan import World
from ..mpijob.result import Key, key_api_version
from .rest import Rest, collection, mpijob_path

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


def read_namespace(rest: Rest, namespace: str, keys: list[Key], opts: K.Options) -> tuple[dict[Key, dict], Namespaced]:
    """(MPIJobs by key, their children) for the jobs `keys` (result.job_key) of one namespace: one LIST or a few GETs
    per API, then one LIST per kind of child for all of them (the children of every API are the same kinds)."""
    by_api: dict[str | None, list[Key]] = {}
    for key in keys:
        by_api.setdefault(key_api_version(key), []).append(key)
    mpijobs: dict[Key, dict] = {}
    for api_version, api_keys in by_api.items():
        if len(api_keys) >= 3:
            found = _by_name(rest.list(mpijob_path(namespace, api_version=api_version)))
            mpijobs.update({k: found[k[1]] for k in api_keys if k[1] in found})
        else:
            mpijobs.update({k: obj for k in api_keys
                            if (obj := rest.get(mpijob_path(namespace, k[1], api_version))) is not None})
    kids = Namespaced()
    labelled = sorted({k[1] for k in mpijobs if _LABEL_VALUE.match(k[1]) and len(k[1]) <= 63})
    if not labelled:
        return mpijobs, kids
    app = f"{C.APP_LABEL} in {_in(labelled)}"
    kids.services = _by_name(rest.list(collection("v1", "Service", namespace), app))
    kids.config_maps = _by_name(rest.list(collection("v1", "ConfigMap", namespace), app))
    kids.secrets = _by_name(rest.list(collection("v1", "Secret", namespace), app))
    kids.jobs = _by_name(rest.list(collection("batch/v1", "Job", namespace), app))
    for pod in rest.list(collection("v1", "Pod", namespace), f"{C.JOB_NAME_LABEL} in {_in(labelled)}"):
        kids.pods_by_job.setdefault(pod["metadata"]["labels"][C.JOB_NAME_LABEL], []).append(pod)
    if opts.gang_scheduling:
        api = C.VOLCANO_PODGROUP_API if opts.volcano else C.PLUGINS_PODGROUP_API
        kids.pod_groups = _by_name(rest.list(collection(api, "PodGroup", namespace)))
    if any(api_for(obj).launcher_rbac for obj in mpijobs.values()):
        for api_version, kind in (("v1", "ServiceAccount"), (C.RBAC_API_VERSION, "Role"),
                                  (C.RBAC_API_VERSION, "RoleBinding")):
            kids.launcher_rbac[kind] = _by_name(rest.list(collection(api_version, kind, namespace), app))
    return mpijobs, kids


def world_of(obj: dict, kids: Namespaced, priorities: dict[str, int]) -> World:
    name = obj["metadata"]["name"]
    return World(
        mpijob=obj,
        service=kids.services.get(name),
        config_map=kids.config_maps.get(name + C.CONFIG_SUFFIX),
        secret=kids.secrets.get(name + C.SSH_SUFFIX),
        launcher=kids.jobs.get(name + C.LAUNCHER_SUFFIX),
        pod_group=kids.pod_groups.get(name),
        launcher_rbac={kind: found[name + C.LAUNCHER_SUFFIX] for kind, found in kids.launcher_rbac.items()
                       if name + C.LAUNCHER_SUFFIX in found},
        pods=kids.pods_by_job.get(name, []),
        priorities=priorities,
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
            found = rest.get(f"/apis/scheduling.k8s.io/v1/priorityclasses/{quote(pc)}")
        except ApiError:
            continue  # as in Kubeflow, an unreadable PriorityClass counts as priority 0
        if found is not None:
            values[pc] = int(found.get("value") or 0)
    return values
