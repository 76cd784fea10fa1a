# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""One task of the mpijob_sync module: read the source's files, apply each job (a server-side dry run first, so only
what would change is written), prune the source's jobs that left the set, wait for the set, and return the plan.
The decisions are the core's (module_utils/mpijob/sync.py); writes go through Jobs (kube/jobs.py)."""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone

from ..mpijob import constants as C
from ..mpijob import submit as S
from ..mpijob import sync as Y
from ..mpijob.apis import REGISTRY
from ..mpijob.errors import ApiError, Conflict, JobError, SubmitError, Unreachable
from .jobs import Jobs

try:
    import yaml

    YAML_IMPORT_ERROR = None
except ImportError as _exc:
    YAML_IMPORT_ERROR = _exc

EXTENSIONS = (".yaml", ".yml", ".json")
_GLOB = set("*?[")


def source_files(src: list[str], recursive: bool) -> tuple[list[str], list[str]]:
    """The files of `src` (files, directories, globs), in a stable order, and the entries that name nothing.
    A directory gives its *.yaml, *.yml and *.json files (its subdirectories too when `recursive`); hidden files and
    directories (.git) are skipped."""
    found: list[str] = []
    missing: list[str] = []
    for entry in src:
        if _GLOB & set(entry):
            matches = sorted(glob.glob(entry, recursive=recursive))
            if not matches:
                missing.append(entry)
            found.extend(m for m in matches if os.path.isfile(m))
        elif os.path.isdir(entry):
            for root, dirs, files in os.walk(entry):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
                found.extend(
                    os.path.join(root, f) for f in sorted(files) if f.endswith(EXTENSIONS) and not f.startswith(".")
                )
        elif os.path.isfile(entry):
            found.append(entry)
        else:
            missing.append(entry)
    unique = list(dict.fromkeys(os.path.normpath(f) for f in found))
    return unique, missing


def read_documents(path: str) -> list | str:
    """The file's YAML documents, or why it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return list(yaml.safe_load_all(f))
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read: {exc}"
    except yaml.YAMLError as exc:
        return f"not valid YAML: {exc}"


class Sync:
    """One sync: the set, what it changed, what it pruned, and the task's result."""

    def __init__(
        self,
        params: dict,
        jobs: Jobs,
        check_mode: bool = False,
        diff: bool = False,
        warn: Callable[[str], None] = lambda _msg: None,
    ):
        self.p, self.jobs, self.check_mode, self.diff, self.warn = params, jobs, check_mode, diff, warn
        self.plan: dict = {k: [] for k in ("created", "updated", "pruned", "unchanged", "kept", "conflicts", "invalid")}
        self.diffs: list[dict] = []
        self.applied: list[dict] = []

    def __call__(self) -> dict:
        if YAML_IMPORT_ERROR is not None:
            from ansible.module_utils.basic import missing_required_lib

            raise SubmitError(f"src: {missing_required_lib('PyYAML')}")
        source = Y.check_source(self.p["source"])
        if not self.p["src"]:
            raise SubmitError("src: give at least one file, directory or glob")
        files, missing = source_files([os.path.expanduser(s) for s in self.p["src"]], self.p["recursive"])
        read: list[tuple[str, list | str]] = [(m, "src: no such file, directory or match") for m in missing]
        read += [(f, read_documents(f)) for f in files]
        desired = Y.desired_set(read, source, self.p["namespace"])
        for doc in desired.docs:
            if not doc.result:
                self.apply(doc)
        if self.p["prune"]:
            self.prune(desired, source)
        for doc in desired.docs:
            if doc.result == Y.INVALID:
                self.plan["invalid"].append({"file": doc.where, "message": doc.message})
        self.wait()
        return self.result(desired)

    def apply(self, doc: Y.Doc) -> None:
        manifest, force = doc.manifest, self.p["force_conflicts"]
        meta = manifest["metadata"]
        name = Y.ref(doc.key)
        try:
            before = self.jobs.get(meta["namespace"], meta["name"], manifest["apiVersion"])
            would_be = self.jobs.apply(manifest, force, dry_run=True)
            if not S.differs(before, would_be):
                doc.result = Y.UNCHANGED
                self.plan["unchanged"].append(name)
                self.applied.append(before)
                return
            after = would_be if self.check_mode else self.jobs.apply(manifest, force, dry_run=False)
        except Conflict as exc:
            doc.result, doc.message = Y.CONFLICT, f"{doc.where}: {exc.msg}"
            self.plan["conflicts"].append({"job": name, "file": doc.where, "message": exc.msg})
            return
        except JobError as exc:  # refused by the API server (its schema, an admission webhook, RBAC)
            doc.result, doc.message = Y.INVALID, f"{doc.where}: {exc.msg}"
            return
        doc.result = Y.CREATED if before is None else Y.UPDATED
        self.plan["created" if before is None else "updated"].append(name)
        self.applied.append(after)
        if self.diff:
            self.diffs.append(
                {
                    "before_header": f"MPIJob {name}",
                    "after_header": f"MPIJob {name} ({doc.where})",
                    "before": S.comparable(before) or {},
                    "after": S.comparable(after) or {},
                }
            )

    def live(self, source: str) -> tuple[list[dict], str]:
        """The source's jobs of every API the server serves (in `namespace` only when it is given)."""
        found: list[dict] = []
        for api in REGISTRY.values():
            try:
                items = self.jobs.list(self.p["namespace"], [f"{Y.SOURCE_LABEL}={source}"], api.api_version)
            except JobError as exc:
                return found, exc.msg
            for item in items:  # a list's items may lack their kind; the core reads jobs by it
                item.setdefault("apiVersion", api.api_version)
                item.setdefault("kind", C.KIND)
            found.extend(items)
        return found, ""

    def prune(self, desired: Y.DesiredSet, source: str) -> None:
        live, error = self.live(source)
        plan = Y.prune_plan(live, desired, source, self.p["prune_unfinished"], self.p["allow_empty"], error)
        if plan.blocked:
            self.warn(plan.blocked)
        for job, why in plan.kept:
            self.plan["kept"].append({"job": Y.ref(Y.key(job)), "phase": S.job_phase(job), "why": why})
        for job in plan.prune:
            name = Y.ref(Y.key(job))
            try:
                self.jobs.delete(job)
            except JobError as exc:
                self.plan["kept"].append({"job": name, "phase": S.job_phase(job), "why": f"delete failed: {exc.msg}"})
                continue
            self.plan["pruned"].append(name)
            if self.diff:
                self.diffs.append(
                    {
                        "before_header": f"MPIJob {name}",
                        "after_header": f"MPIJob {name} (pruned)",
                        "before": S.comparable(job) or {},
                        "after": {},
                    }
                )

    def wait(self) -> None:
        """Waits until every applied job reached wait_for (each polled in turn, one deadline for the set)."""
        if not self.p["wait"] or self.check_mode or not self.applied:
            return
        target = self.p["wait_for"] or C.SUCCEEDED
        deadline = time.monotonic() + self.p["wait_timeout"]
        while True:
            current = []
            for job in self.applied:
                meta = job["metadata"]
                try:
                    current.append(self.jobs.get(meta["namespace"], meta["name"], job["apiVersion"]) or job)
                except (ApiError, Unreachable, JobError):
                    current.append(job)  # a blip of the API server is not the end of the wait; the deadline is
            self.applied = current
            done, line = Y.set_progress(current, target)
            if done:
                return
            never = [m for m in (S.unreachable(j, target) for j in current) if m]
            if never:
                raise JobError("; ".join(never), **self.result_so_far())
            if time.monotonic() >= deadline:
                raise JobError(
                    f"timed out after {self.p['wait_timeout']}s waiting for the set to be {target}; now: {line}",
                    **self.result_so_far(),
                )
            time.sleep(min(self.p["wait_sleep"], max(0.0, deadline - time.monotonic())))

    def result_so_far(self) -> dict:
        return {"plan": self.plan, "summary": Y.plan_line(self.plan)}

    def result(self, desired: Y.DesiredSet) -> dict:
        now = datetime.now(timezone.utc)
        jobs = [S.summary(j, now) for j in self.applied]
        out = {
            "changed": bool(self.plan["created"] or self.plan["updated"] or self.plan["pruned"]),
            "plan": self.plan,
            "summary": Y.plan_line(self.plan),
            "files": Y.file_results(desired.docs),
            "jobs": jobs,
        }
        if self.p["wait"] and not self.check_mode and self.applied:
            out["progress"] = Y.set_progress(self.applied, self.p["wait_for"] or C.SUCCEEDED)[1]
        if self.diff and self.diffs:
            out["diff"] = self.diffs
        failures = [f["message"] for f in self.plan["invalid"]] + [
            f"{c['file']}: {c['message']}" for c in self.plan["conflicts"]
        ]
        if self.p["wait"] and self.p["fail_on_job_failure"] and not self.check_mode:
            failures += [
                f"MPIJob {j['namespace']}/{j['name']} failed: {j['reason']}: {j['message']}"
                for j in jobs
                if j["phase"] == C.FAILED
            ]
        if failures:
            raise JobError(f"sync {self.p['source']}: {out['summary']}; failed:\n" + "\n".join(failures), **out)
        return out
