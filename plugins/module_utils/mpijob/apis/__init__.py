# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The MPIJob APIs the core serves, by (API group, kind): one parse and one status stage each; children and plan
are shared (no second reconciler).

The registry is the one source of what the collection serves: crd/gen.py writes each API's CRD from its
entry (names, versions, printer columns, phases, condition types) and its CRD source crd/<name>.py; the roles
read it through the lookup mpi.operator.mpijob_apis (the versions they read jobs in, the operator each CRD may come
from, which APIs' launchers need RBAC); the submission modules take phases from it. Adding an API is its module here,
its CRD source and its tests.

The contract an API module fulfils (kubeflow.py is the reference; t9k.py, bdap.py follow it; t9k.py takes its status
stage from t9k_status.py): it defines `API = Api(...)` with

- `name` (its module's, and its CRD source's: crd/<name>.py), `group`, `versions` (served; the first is the
  storage version), `kind`; `original`: the operator whose CRD this API's is (preflight names it when it finds that
  one installed);
- `phases`: every value `phase` returns (the CRD's enum of status.phase), `suspended_phases` those that mean the job
  is suspended (or paused); `condition_types`: the types its status.conditions hold; `columns`: its printer columns
  (name, JSON path), Age after them; `short_names`, `categories`: its CRD's names;
- `parse(obj) -> spec.MPIJob`: the untrusted object, status included, read into the one model, defaulted and
  validated; raises errors.InvalidMPIJob whose FieldErrors name each bad field by its path in *this* API
  (`spec.worker.replicas`, not Kubeflow's name for it). All of the API's semantics that the shared children and plan
  can carry go into the model here (commands, restart policies, suspension, clean-up policy, notices);
- `live_status(job, old_status, observed, now, events) -> dict`: the API's own status of a live job, from
  status.Observed (the launcher Job, its pods, the workers after this reconcile's actions); appends status.Event;
- `cleaned_status(job, status) -> dict`: the status after the finished job's pods were cleaned up;
- `invalid_status(old_status, message, now, events) -> dict`: the status of an object `parse` refused;
- `finished(status) -> bool`: the job ended, by its status (Plan.finished, what the operator loop reads);
- `settled(status) -> bool`: finished for good: the plan only cleans up (kubeflow.org also wants completionTime, which
  a ValidationError Failed lacks: fixing the spec revives that job);
- `phase(status) -> str`: the one word `mpijob_info` and the printer column show;
- `with_phase(status) -> dict`: the status with its `phase` field as the API writes it (every status the plan writes
  goes through it);
- for the submission modules (mpijob, mpijob_info, submit.yml): `workers_path` (where the manifest says how many
  workers: `workers:` scales there), `suspend_path` (the field that suspends or pauses the job; None when the API has
  none), `counts(status) -> dict` (workers_running, workers_failed, launcher_active, launcher_failed, read from the
  API's own status);
- for the failure policy (restart.py): `failure_policy_path` (where a job says it: the shell reads the nodes of such a
  job's pods), `restarting(status, reason, message, now)` (marks the status: the world restarts, for that reason),
  `given_up(status, reason, message, now)` (marks it Failed for good: a budget is spent or a FailJob rule matched);
  status.restartCount and status.restarts are the same fields on every API (restart.py);
- `launcher_rbac`: its jobs' launchers run with a ServiceAccount of their own (`launch_agent` kubexec), which the
  shell then reads with the other children.
- `progress_only(old_status, status) -> bool`: the new status only counts pods coming up (nothing a user or a
  controller acts on changed): a warm run may hold such a write back for a moment (Options.progress_every) so that
  workers coming up one by one cost one status write, not one each. Never, unless the API says so.

What the model offers an API beyond Kubeflow's fields (defaults are kubeflow.org's, so it never sets them):
`owner_api_version` (the children's controller reference), `pause_deletes_launcher` (suspended means no launcher
Job at all), `notices` (Warning events for fields accepted but not applied), `run_policy.clean_pod_policy =
constants.CLEAN_WORKERS` (clean up the workers only); status.Observed.deleting lists the pods a suspension deletes.
Semantics the model cannot carry yet are a new model field with a kubeflow.org-neutral default, used by the shared
children/plan: never a branch on the API's name.

A module registers by being imported at the end of this file (statically: Ansible bundles only the module_utils a
module imports by name); nothing else in the core names an API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import constants as C
from ..spec import MPIJob, mapping
from ..status import Event, Observed


@dataclass(frozen=True)
class Api:
    name: str
    group: str
    versions: tuple[str, ...]
    kind: str
    original: str
    phases: tuple[str, ...]
    suspended_phases: tuple[str, ...]
    condition_types: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    parse: Callable[[Any], MPIJob]
    live_status: Callable[[MPIJob, dict, Observed, str, list[Event]], dict]
    cleaned_status: Callable[[MPIJob, dict], dict]
    invalid_status: Callable[[dict, str, str, list[Event]], dict]
    finished: Callable[[dict], bool]
    settled: Callable[[dict], bool]
    phase: Callable[[dict | None], str]
    with_phase: Callable[[dict], dict]
    workers_path: tuple[str, ...]
    suspend_path: tuple[str, ...] | None
    counts: Callable[[dict], dict]
    restarting: Callable[[dict, str, str, str], None]
    given_up: Callable[[dict, str, str, str], None]
    failure_policy_path: tuple[str, ...] = ("spec", "runPolicy", C.FAILURE_POLICY)
    # The shell reads the launcher's ServiceAccount/Role/RoleBinding of this API's jobs (model launch_agent kubexec)
    launcher_rbac: bool = False
    progress_only: Callable[[dict, dict], bool] = lambda _old, _new: False
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ("all",)
    # Where the launcher's and the workers' pod templates are in a job: a child the API server refuses is named there.
    template_paths: tuple[str, str] = (
        f"spec.mpiReplicaSpecs.{C.LAUNCHER}.template",
        f"spec.mpiReplicaSpecs.{C.WORKER}.template",
    )

    @property
    def crd_name(self) -> str:
        return f"{C.PLURAL}.{self.group}"

    @property
    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{self.group}/{v}" for v in self.versions)

    @property
    def api_version(self) -> str:
        return self.api_versions[0]


# The API modules import Api from here, so they come after it.
from . import bdap, kubeflow, t9k  # noqa: E402

REGISTRY: dict[tuple[str, str], Api] = {
    (m.API.group, m.API.kind): m.API for m in (kubeflow, t9k, bdap) if getattr(m, "API", None) is not None
}


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def api_for(obj: Any) -> Api:
    """The API of an object by its apiVersion's group and its kind. Anything else goes to kubeflow.org, whose parse
    names the bad apiVersion exactly as it always did (and accepts a missing one)."""
    top = mapping(obj)
    api_version, kind = top.get("apiVersion"), top.get("kind") or "MPIJob"
    if isinstance(api_version, str) and isinstance(kind, str):
        api = REGISTRY.get((group_of(api_version), kind))
        if api is not None:
            return api
    return kubeflow.API


def by_group(group: str) -> Api | None:
    """The MPIJob API of an API group (every API here is kind MPIJob); None for a group not served."""
    return REGISTRY.get((group, C.KIND))


def storage_api_version(api_version: str | None) -> str:
    """Where the shell reads and writes a job of `api_version` (None: kubeflow.org): its API's storage version.
    Raises ValueError naming the served APIs for an API group that is not one of them."""
    api = by_group(group_of(api_version)) if api_version else kubeflow.API
    if api is None:
        served = ", ".join(sorted(a.api_version for a in REGISTRY.values()))
        raise ValueError(f"{api_version!r} is not an MPIJob API served here ({served})")
    return api.api_version


def has_failure_policy(obj: Any) -> bool:
    """The job asks for a failure policy (the shell then reads the nodes its pods run on)."""
    value: Any = mapping(obj)
    for key in api_for(obj).failure_policy_path:
        value = mapping(value).get(key)
    return isinstance(value, dict)


def served_api_versions() -> list[str]:
    """The storage apiVersion of every MPIJob API, kubeflow.org's first."""
    return [kubeflow.API.api_version, *sorted(a.api_version for a in REGISTRY.values() if a is not kubeflow.API)]


def suspended_phases() -> tuple[str, ...]:
    """Every phase of any API that means its job is suspended (kubeflow.org's Suspended, T9k's Paused)."""
    return tuple(dict.fromkeys(p for a in REGISTRY.values() for p in a.suspended_phases))


def describe() -> list[dict]:
    """Every API as plain data, kubeflow.org's first: what the roles read (lookup mpi.operator.mpijob_apis)."""
    return [
        {
            "name": a.name,
            "group": a.group,
            "version": a.versions[0],
            "api_version": a.api_version,
            "kind": a.kind,
            "crd_name": a.crd_name,
            "original": a.original,
            "launcher_rbac": a.launcher_rbac,
        }
        for a in REGISTRY.values()
    ]
