# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""One task of the mpijob module: which job (definition, src or the short form), what to do with it (apply, scale or
suspend, delete), the wait, and what the task returns. No AnsibleModule: the parameters, check and diff mode and a
warning callback are given, so it is unit-tested with a stand-in for Jobs."""

from __future__ import annotations

from collections.abc import Callable

from ..mpijob import constants as C
from ..mpijob import submit as S
from ..mpijob.apis import storage_api_version
from ..mpijob.errors import Conflict, JobError, SubmitError
from .jobs import Jobs

try:
    import yaml

    YAML_IMPORT_ERROR = None
except ImportError as _exc:  # only src and YAML text need it; reported when they are used
    YAML_IMPORT_ERROR = _exc


def _no_yaml(option: str) -> SubmitError:
    from ansible.module_utils.basic import missing_required_lib

    return SubmitError(f"{option}: {missing_required_lib('PyYAML')}")


def read_src(path: str) -> dict:
    if YAML_IMPORT_ERROR is not None:
        raise _no_yaml("src")
    try:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise SubmitError(f"src: cannot read {path}: {exc}") from exc
    return S.one_mpijob(docs, f"src: {path}")


def given_definition(params: dict) -> dict | None:
    """The manifest of definition (a dict, or YAML text as a lookup or the action plugin's template gives it) or
    src; None for the short form."""
    if params["template"] is not None:
        raise SubmitError(
            "template: rendered by the mpi.operator.mpijob action plugin, which did not run (the "
            "module was called some other way): render it yourself and pass definition"
        )
    definition = params["definition"]
    if isinstance(definition, str):
        if YAML_IMPORT_ERROR is not None:
            raise _no_yaml("definition")
        try:
            docs = [d for d in yaml.safe_load_all(definition) if d]
        except yaml.YAMLError as exc:
            raise SubmitError(f"definition: not valid YAML: {exc}") from exc
        return S.one_mpijob(docs, "definition")
    if definition is not None and not isinstance(definition, dict):
        raise SubmitError(f"definition: must be a dict or a YAML string (one MPIJob), got {type(definition).__name__}")
    if definition is not None:
        return definition
    return read_src(params["src"]) if params["src"] else None


def named_api_version(params: dict) -> str:
    """Where the job named by `name` lives: `api_version`'s API (kubeflow.org by default), at its storage version."""
    try:
        return storage_api_version(params.get("api_version"))
    except ValueError as exc:
        raise SubmitError(f"api_version: {exc}") from exc


def force_conflicts(params: dict) -> bool:
    return bool(params["force_conflicts"] or params["force"])  # force: the deprecated name


class Run:
    """One task: the job it is about, what was done, what to return."""

    def __init__(
        self,
        params: dict,
        jobs: Jobs,
        check_mode: bool = False,
        diff: bool = False,
        warn: Callable[[str], None] = lambda _msg: None,
    ):
        self.params, self.jobs, self.check_mode, self.diff, self.warn = params, jobs, check_mode, diff, warn
        self.before: dict | None = None
        self.after: dict | None = None
        self.method = "unchanged"

    def __call__(self) -> dict:
        """Does the task; returns its result, or raises an MPIJobError (a JobError carries the partial result)."""
        p = self.params
        try:
            if p["state"] == "absent":
                self.absent()
            else:
                self.present()
            self.wait()
            out = self.result()
        except JobError as exc:
            if "result" in exc.result:
                self.after = exc.result["result"]  # the job as last seen by the wait
            exc.result = self.result()
            raise
        summary = out["summary"]
        if p["wait"] and p["fail_on_job_failure"] and summary and summary["phase"] == C.FAILED and not self.check_mode:
            raise JobError(S.failure_message(summary, out["launcher"]), **out)
        return out

    def present(self) -> None:
        p = self.params
        manifest = S.desired_manifest(p, given_definition(p))
        if manifest is None:
            self.scale_or_suspend()
            return
        meta = manifest["metadata"]
        self.before = self.jobs.get(meta["namespace"], meta["name"], manifest["apiVersion"])
        try:
            would_be = self.jobs.apply(manifest, force_conflicts(p), dry_run=True)
        except Conflict as exc:
            if not self.check_mode:
                raise
            # a preview shows the drift as a diff; the real run fails on it unless force_conflicts is set
            self.warn(f"{exc}. Without check mode this task fails.")
            would_be = self.jobs.apply(manifest, True, dry_run=True)
        if not S.differs(self.before, would_be):
            self.after = self.before
            return
        self.method = "created" if self.before is None else "applied"
        if self.check_mode:
            self.after = would_be
        else:
            self.after = self.jobs.apply(manifest, force_conflicts(p), dry_run=False)

    def scale_or_suspend(self) -> None:
        p = self.params
        if not p["name"]:
            raise SubmitError("name: required (or give definition, src, or the short form image and command)")
        if p["workers"] is None and p["suspend"] is None:
            raise SubmitError(
                "nothing to do: give definition, src, the short form (image, command), workers or suspend"
            )
        namespace = p["namespace"] or "default"
        self.before = self.jobs.get(namespace, p["name"], named_api_version(p))
        if self.before is None:
            raise SubmitError(
                f"MPIJob {namespace}/{p['name']} does not exist: to create it, give definition, src "
                "or the short form (image, command)"
            )
        patch = S.job_patch(self.before, p["workers"], p["suspend"])
        if patch is None:
            self.after = self.before
            return
        self.method = "patched"
        self.after = self.jobs.patch(self.before, patch)

    def absent(self) -> None:
        p = self.params
        definition = given_definition(p)
        meta = (definition or {}).get("metadata") or {}
        name, namespace = p["name"] or meta.get("name"), meta.get("namespace") or p["namespace"] or "default"
        if not name:
            raise SubmitError("name: required to delete a job (or give definition or src)")
        api_version = named_api_version({"api_version": (definition or {}).get("apiVersion") or p.get("api_version")})
        self.before = self.jobs.get(namespace, name, api_version)
        if self.before is None:
            return
        self.method = "deleted"
        self.jobs.delete(self.before)
        if p["wait"] and not self.check_mode:
            self.jobs.wait(
                self.before,
                lambda job: job is None,
                p["wait_timeout"],
                p["wait_sleep"],
                "and its children to be deleted",
            )
        if not self.check_mode:
            self.after = None

    def wait(self) -> None:
        p = self.params
        if not p["wait"] or p["state"] == "absent" or self.after is None or self.check_mode:
            return
        target = S.wait_target(p["wait_for"], self.after)
        self.after = self.jobs.wait_for(self.after, target, p["wait_timeout"], p["wait_sleep"])

    def result(self) -> dict:
        if self.params["state"] == "absent":
            job = self.before if self.check_mode else None
        else:
            job = self.after if self.after is not None else self.before
        out = {
            "changed": self.method != "unchanged",
            "method": self.method,
            "result": job,
            "conditions": ((job or {}).get("status") or {}).get("conditions") or [],
            "summary": self.jobs.summary(job) if job else None,
            "launcher": {"pod": "", "exit": "", "log": [], "note": ""},
        }
        if job is not None and out["summary"]["phase"] != S.PENDING:
            out["launcher"] = self.jobs.launcher(job, self.params["log_lines"] or None)
        out["launcher_log"], out["launcher_log_note"] = out["launcher"]["log"], out["launcher"]["note"]
        if self.diff and out["changed"]:
            after = None if self.method == "deleted" else self.after
            out["diff"] = {"before": S.comparable(self.before) or {}, "after": S.comparable(after) or {}}
        return out
