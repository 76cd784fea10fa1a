"""kubeflow.org MPIJob (v2beta1, v1): the reference API, its parse and status stages as they always were."""
from __future__ import annotations

from .. import constants as C
from .. import spec as _spec
from .. import status as S
from . import Api


def counts(status: dict) -> dict:
    """Pods by role and state, from replicaStatuses."""
    replicas = status.get("replicaStatuses") or {}
    worker, launcher = replicas.get(C.WORKER) or {}, replicas.get(C.LAUNCHER) or {}
    return {"workers_running": int(worker.get("active") or 0), "workers_failed": int(worker.get("failed") or 0),
            "launcher_active": int(launcher.get("active") or 0), "launcher_failed": int(launcher.get("failed") or 0)}


API = Api(
    group=C.GROUP,
    versions=(C.VERSION, C.LEGACY_VERSION),
    kind=C.KIND,
    parse=_spec.parse,
    live_status=S.live_status,
    cleaned_status=S.cleaned_status,
    invalid_status=S.invalid_status,
    finished=S.is_finished,
    settled=lambda status: S.is_finished(status) and bool(status.get("completionTime")),
    phase=S.job_phase,
    with_phase=S.with_phase,
    workers_path=("spec", "mpiReplicaSpecs", C.WORKER, "replicas"),
    suspend_path=("spec", "runPolicy", "suspend"),
    counts=counts,
)
