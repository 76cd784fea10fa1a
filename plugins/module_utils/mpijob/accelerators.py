# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Slots and accelerators: a worker that asks for 8 GPUs with `slotsPerWorker: 1` runs one rank per node and nothing
says so. Here, when each worker requests accelerators (`nvidia.com/gpu`, and the extended resources the install names,
the operator's --accelerators) and the slots differ, the job gets a Warning event and its first condition says so at
creation; the annotation `mpi.operator/slots-from-accelerators: "true"` makes the slots the accelerator count instead
(docs/submit.md).
"""

from __future__ import annotations

import re
from dataclasses import replace

from . import constants as C
from .quantity import parse_quantity
from .spec import MPIJob, mapping

DEFAULT = C.ACCELERATORS
REASON = "SlotsDifferFromAccelerators"
# An extended resource: a domain-qualified name outside kubernetes.io (what a device plugin advertises).
_EXTENDED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def names(extra: list[str] | tuple[str, ...], option: str) -> tuple[str, ...]:
    """The accelerators looked for: DEFAULT and those the install names (`option`: the flag or option naming them,
    which a bad name is refused with)."""
    out = list(DEFAULT)
    for name in extra:
        name = name.strip()
        if not name:
            continue
        domain = name.split("/", 1)[0]
        if not _EXTENDED.match(name) or domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
            raise ValueError(
                f"{option}: {name!r} is not an extended resource name (a device plugin's <domain>/<name> outside "
                "kubernetes.io, e.g. nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi)"
            )
        if name not in out:
            out.append(name)
    return tuple(out)


def per_worker(job: MPIJob, accelerators: tuple[str, ...]) -> dict[str, int]:
    """How many of each accelerator one worker asks for (its containers' limits, else requests, summed); only those
    it asks for."""
    spec = mapping(job.worker.template.get("spec") if job.worker else None)
    containers = spec.get("containers")
    out: dict[str, int] = {}
    for container in containers if isinstance(containers, list) else []:
        resources = mapping(mapping(container).get("resources"))
        limits, requests = mapping(resources.get("limits")), mapping(resources.get("requests"))
        for name in accelerators:
            value = limits.get(name, requests.get(name))
            if value is None:
                continue
            try:
                count = parse_quantity(value)
            except ValueError:
                continue  # the API server refuses the pod, naming the field
            if count > 0 and count.denominator == 1:
                out[name] = out.get(name, 0) + int(count)
    return out


def with_slots(job: MPIJob, accelerators: tuple[str, ...]) -> MPIJob:
    """The job with slotsPerWorker set to its workers' accelerator count when its annotation asks for it (and they ask
    for one kind of accelerator)."""
    counts = per_worker(job, accelerators)
    if job.directives.slots_from_accelerators and len(counts) == 1:
        return replace(job, slots_per_worker=next(iter(counts.values())))
    return job


def notice(job: MPIJob, accelerators: tuple[str, ...]) -> str | None:
    """What the job is told at creation when its slots and its workers' accelerators disagree (None when they agree
    or the workers ask for none). `job` is as parsed, before with_slots."""
    counts = per_worker(job, accelerators)
    asked = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
    if job.directives.slots_from_accelerators:
        if len(counts) == 1:
            return None
        why = "request none" if not counts else f"request more than one kind ({asked})"
        return (
            f"mpi.operator/slots-from-accelerators is set but each worker's containers {why}: the job keeps "
            f"{_slots(job.slots_per_worker)} per worker"
        )
    if not counts or all(n == job.slots_per_worker for n in counts.values()):
        return None
    return (
        f"each worker requests {asked} but has {_slots(job.slots_per_worker)} in the hostfile: mpirun starts "
        f"{job.slots_per_worker} rank{'' if job.slots_per_worker == 1 else 's'} per worker. Set the slots per worker "
        "(kubeflow.org: slotsPerWorker) to the accelerator count, or the annotation "
        'mpi.operator/slots-from-accelerators: "true"'
    )


def _slots(n: int) -> str:
    return f"{n} slot" + ("" if n == 1 else "s")
