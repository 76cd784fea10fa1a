# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""What the mpijob_sync task decides, without I/O: the set of MPIJobs a directory of manifests declares (each document
read, validated and labelled with the source, or refused naming its file and field), which live jobs of the source
leave the set and may be pruned, and the plan's one-line summary.

Nothing is lost by a sync: a job is pruned only when it carries the source's label, is no longer declared, was not
declared by a document that failed to read (its identity is then unknown: pruning stops altogether), and has
finished, unless the task allows pruning unfinished jobs. An empty set prunes nothing unless allowed.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from . import constants as C
from . import submit as S
from .apis import by_group, group_of
from .errors import SubmitError

SOURCE_LABEL = "mpi.operator/sync-source"
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")

# What happened to a document, worst first: a file's result is its worst document's.
INVALID, CONFLICT, CREATED, UPDATED, UNCHANGED = "invalid", "conflict", "created", "updated", "unchanged"
ORDER = (INVALID, CONFLICT, CREATED, UPDATED, UNCHANGED)


def check_source(source: Any) -> str:
    """The source name, which is a label value: 63 characters at most, alphanumerics, '-', '_', '.' inside."""
    if not isinstance(source, str) or not _LABEL_VALUE.match(source):
        raise SubmitError(
            f"source: {source!r} is not a valid label value (1-63 characters: letters, digits, '-', "
            "'_' and '.', beginning and ending with a letter or digit)"
        )
    return source


def key(manifest: dict) -> tuple[str, str, str]:
    """Which job a manifest names: (API group, namespace, name). kubeflow.org/v1 and v2beta1 are one job."""
    meta = manifest.get("metadata") or {}
    return group_of(str(manifest.get("apiVersion") or "")), meta.get("namespace") or "", meta.get("name") or ""


def ref(k: tuple[str, str, str]) -> str:
    """A job's name in results and messages: namespace/name, with its API group unless it is kubeflow.org's."""
    group, namespace, name = k
    return f"{namespace}/{name}" if group == C.GROUP else f"{namespace}/{name} ({group})"


@dataclass
class Doc:
    """One document of the set: where it came from, which job it names (when known) and the manifest to apply, or
    why it is refused."""

    file: str
    index: int
    key: tuple[str, str, str] | None = None
    manifest: dict | None = None
    result: str = ""
    message: str = ""

    @property
    def where(self) -> str:
        return self.file if self.index == 0 else f"{self.file} (document {self.index + 1})"


@dataclass
class DesiredSet:
    docs: list[Doc] = field(default_factory=list)
    # files whose documents could not be read: the jobs they declared are unknown, so nothing may be pruned
    unreadable: list[str] = field(default_factory=list)

    def valid(self) -> list[Doc]:
        return [d for d in self.docs if d.manifest is not None and not d.result]

    def declared(self) -> set[tuple[str, str, str]]:
        """Every job the sources name, invalid ones included (a job whose manifest is broken is not pruned)."""
        return {d.key for d in self.docs if d.key is not None}


def _refuse(doc: Doc, message: str) -> Doc:
    doc.result, doc.message, doc.manifest = INVALID, message, None
    return doc


def desired_doc(file: str, index: int, obj: Any, source: str, namespace: str | None) -> Doc:
    """One document read into the manifest to apply (labelled with the source, namespace filled in), or refused with
    the field named."""
    doc = Doc(file, index)
    if not isinstance(obj, dict):
        return _refuse(
            doc, f"{doc.where}: a document must be a mapping (a Kubernetes object), got {type(obj).__name__}"
        )
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind != C.KIND:
        return _refuse(doc, f"{doc.where}: kind: only MPIJobs are synced, got {kind!r}")
    if not isinstance(api_version, str) or not api_version:
        return _refuse(doc, f"{doc.where}: apiVersion: required")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        return _refuse(doc, f"{doc.where}: metadata.name: required")
    manifest = copy.deepcopy(obj)
    meta = manifest["metadata"]
    if namespace and meta.get("namespace") and meta["namespace"] != namespace:
        return _refuse(
            doc, f"{doc.where}: metadata.namespace: {meta['namespace']!r} is outside the sync's namespace {namespace!r}"
        )
    meta["namespace"] = meta.get("namespace") or namespace or "default"
    doc.key = key(manifest)  # from here on the job is known: it is never pruned, valid or not
    api = by_group(group_of(api_version))
    if api is None or api_version not in api.api_versions:
        served = ", ".join(v for a in _apis() for v in a.api_versions)
        return _refuse(doc, f"{doc.where}: apiVersion: {api_version!r} is not an MPIJob API served here ({served})")
    labels = meta.get("labels")
    if labels is not None and not isinstance(labels, dict):
        return _refuse(doc, f"{doc.where}: metadata.labels: must be a mapping")
    labels = meta["labels"] = dict(labels or {})
    if labels.get(SOURCE_LABEL, source) != source:
        return _refuse(
            doc,
            f"{doc.where}: metadata.labels.{SOURCE_LABEL}: {labels[SOURCE_LABEL]!r} is another "
            f"source than this sync's {source!r}",
        )
    labels[SOURCE_LABEL] = source
    try:
        S.validate(manifest)
    except SubmitError as exc:
        return _refuse(doc, f"{doc.where}: {exc.msg}")
    doc.manifest = manifest
    return doc


def _apis() -> list:
    from .apis import REGISTRY

    return sorted(REGISTRY.values(), key=lambda a: a.group != C.GROUP)


def desired_set(files: list[tuple[str, list[Any] | str]], source: str, namespace: str | None) -> DesiredSet:
    """The set from each file's documents, or the error that kept a file from being read (then its jobs are unknown).
    A job declared twice is refused in both places."""
    result = DesiredSet()
    for file, docs in files:
        if isinstance(docs, str):
            result.unreadable.append(file)
            result.docs.append(Doc(file, 0, result=INVALID, message=f"{file}: {docs}"))
            continue
        result.docs.extend(
            desired_doc(file, i, obj, source, namespace) for i, obj in enumerate(docs) if obj is not None
        )
    seen: dict[tuple[str, str, str], list[Doc]] = {}
    for doc in result.docs:
        if doc.key is not None:
            seen.setdefault(doc.key, []).append(doc)
    for k, docs in seen.items():
        if len(docs) > 1:
            places = ", ".join(d.where for d in docs)
            for doc in docs:
                if doc.result != INVALID:
                    _refuse(doc, f"{doc.where}: MPIJob {ref(k)} is declared more than once ({places})")
    return result


@dataclass
class Prune:
    prune: list[dict] = field(default_factory=list)
    kept: list[tuple[dict, str]] = field(default_factory=list)  # (job, why it stays)
    blocked: str = ""  # why nothing is pruned at all


def prune_plan(
    live: list[dict], desired: DesiredSet, source: str, unfinished: bool, allow_empty: bool, listing_error: str = ""
) -> Prune:
    """Which of the source's live jobs leave the set: finished ones are pruned, unfinished ones only when `unfinished`;
    a job without the source's label is never a candidate. Nothing is pruned when a file could not be read, when the
    jobs could not be listed, or when the set is empty (unless `allow_empty`)."""
    plan = Prune()
    labelled = [j for j in live if ((j.get("metadata") or {}).get("labels") or {}).get(SOURCE_LABEL) == source]
    gone = sorted((j for j in labelled if key(j) not in desired.declared()), key=key)
    if not gone:
        return plan
    if listing_error:
        plan.blocked = f"nothing pruned: the source's jobs could not be listed: {listing_error}"
    elif desired.unreadable:
        plan.blocked = (
            f"nothing pruned: {', '.join(desired.unreadable)} could not be read, so which jobs the source "
            "still declares is unknown"
        )
    elif not desired.declared() and not allow_empty:
        plan.blocked = (
            f"nothing pruned: the source declares no MPIJob at all, which would prune all {len(gone)} of "
            "its jobs; set allow_empty: true if that is meant"
        )
    if plan.blocked:
        plan.kept = [(j, plan.blocked) for j in gone]
        return plan
    for job in gone:
        phase = S.job_phase(job)
        if phase in S.FINISHED or unfinished:
            plan.prune.append(job)
        else:
            plan.kept.append((job, f"not finished ({phase}); prune_unfinished: true prunes it"))
    return plan


def file_results(docs: list[Doc]) -> list[dict]:
    """Each file's result: its worst document's, with every document's job and message."""
    files: dict[str, dict] = {}
    for doc in docs:
        entry = files.setdefault(doc.file, {"file": doc.file, "result": UNCHANGED, "jobs": [], "messages": []})
        if doc.key is not None and doc.key[2]:
            entry["jobs"].append(ref(doc.key))
        if doc.message:
            entry["messages"].append(doc.message)
        if ORDER.index(doc.result or UNCHANGED) < ORDER.index(entry["result"]):
            entry["result"] = doc.result
    return list(files.values())


def plan_line(plan: dict) -> str:
    """One line for the plan: 'create 1, update 1, prune 1, unchanged 2, kept 1, conflict 0, invalid 1'."""
    counts = [
        ("create", "created"),
        ("update", "updated"),
        ("prune", "pruned"),
        ("unchanged", "unchanged"),
        ("kept", "kept"),
        ("conflict", "conflicts"),
        ("invalid", "invalid"),
    ]
    return ", ".join(f"{word} {len(plan[k])}" for word, k in counts)


def set_progress(jobs: list[dict], target: str) -> tuple[bool, str]:
    """Whether every job reached `target` (S.reached), and one line for the set: '3 jobs: 2 Succeeded, 1 Running'."""
    phases: dict[str, int] = {}
    for job in jobs:
        phase = S.job_phase(job)
        phases[phase] = phases.get(phase, 0) + 1
    done = all(S.reached(job, target) for job in jobs)
    return done, f"{len(jobs)} jobs: " + ", ".join(f"{n} {p}" for p, n in sorted(phases.items(), key=lambda x: -x[1]))
