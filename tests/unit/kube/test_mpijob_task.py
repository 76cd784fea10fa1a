"""One mpijob task (module_utils/kube/mpijob_task.py Run) without AnsibleModule or an API server: what it asks of Jobs,
what it returns, and how its failures carry the partial result. Jobs is replaced by a stand-in that keeps jobs in a dict
(the API calls themselves are tested against the real API server in tests/integration/test_mpijob_module.py)."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.kube import mpijob_task as task
from ansible_collections.mpi.operator.plugins.module_utils.kube.mpijob_task import Run
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import submit as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import Conflict, JobError, SubmitError

PARAMS = {
    "state": "present",
    "name": None,
    "namespace": None,
    "definition": None,
    "src": None,
    "template": None,
    "image": None,
    "command": None,
    "workers": None,
    "slots_per_worker": None,
    "resources": None,
    "launcher_resources": None,
    "mpi_implementation": None,
    "env": None,
    "labels": None,
    "clean_pod_policy": None,
    "suspend": None,
    "force_conflicts": False,
    "force": None,
    "wait": False,
    "wait_for": None,
    "wait_timeout": 600,
    "wait_sleep": 2,
    "fail_on_job_failure": True,
    "log_lines": 20,
}
SHORT = {"name": "pi", "image": "mpi:1", "command": "mpirun hostname", "workers": 2}


def params(**given: object) -> dict:
    return {**PARAMS, **given}


def failed(job: dict) -> dict:
    return {
        **job,
        "status": {
            "conditions": [{"type": "Failed", "status": "True", "reason": "MPIJobFailed", "message": "launcher failed"}]
        },
    }


class Jobs:
    """Jobs as the task uses it, on a dict: apply fills in what the server would (uid, creationTimestamp)."""

    def __init__(self, conflict: bool = False, finish: object = None):
        self.stored: dict[tuple[str, str], dict] = {}
        self.calls: list[str] = []
        self.conflict, self.finish = conflict, finish

    def get(self, namespace: str, name: str, api_version: str = "") -> dict | None:
        self.calls.append("get")
        return copy.deepcopy(self.stored.get((namespace, name)))

    def apply(self, manifest: dict, force: bool, dry_run: bool) -> dict:
        self.calls.append(f"apply dry_run={dry_run} force={force}")
        if self.conflict and not force:
            raise Conflict("applying MPIJob default/pi: conflict with kubectl-scale")
        meta = manifest["metadata"]
        job = copy.deepcopy(manifest)
        job["metadata"].update(uid="u1", creationTimestamp="2026-01-01T00:00:00Z")
        if not dry_run:
            self.stored[(meta["namespace"], meta["name"])] = job
        return copy.deepcopy(job)

    def patch(self, job: dict, patch: dict) -> dict:
        self.calls.append(f"patch {patch}")
        after = copy.deepcopy(job)
        after["spec"]["mpiReplicaSpecs"]["Worker"].update(patch["spec"].get("mpiReplicaSpecs", {}).get("Worker", {}))
        return after

    def delete(self, job: dict) -> None:
        self.calls.append("delete")

    def wait(self, job: dict, done: object, timeout: float, sleep: float, what: str) -> None:
        self.calls.append(f"wait {what}")

    def wait_for(self, job: dict, target: str, timeout: float, sleep: float) -> dict:
        self.calls.append(f"wait_for {target}")
        if self.finish is None:
            raise JobError("timed out after 600s waiting for MPIJob default/pi to be Succeeded", result=job)
        return self.finish(job)

    def launcher(self, job: dict, lines: int | None) -> dict:
        return {"pod": "pi-launcher-x", "exit": "Error, exit code 3", "log": ["boom"], "note": ""}

    def workload(self, job: dict) -> dict | None:
        return None  # no Kueue here (tests/kueue runs the real one)

    def summary(self, job: dict) -> dict:
        return S.summary(job, datetime.now(timezone.utc))  # no Kueue, no pods read here


def test_short_form_creates_the_job_then_the_same_task_changes_nothing() -> None:
    jobs = Jobs()
    out = Run(params(**SHORT), jobs, diff=True)()
    assert out["changed"] and out["method"] == "created" and out["result"]["metadata"]["uid"] == "u1"
    assert out["diff"]["before"] == {} and out["diff"]["after"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert jobs.calls == ["get", "apply dry_run=True force=False", "apply dry_run=False force=False"]

    jobs.calls.clear()
    again = Run(params(**SHORT), jobs, diff=True)()
    assert not again["changed"] and again["method"] == "unchanged" and "diff" not in again
    assert jobs.calls == ["get", "apply dry_run=True force=False"]  # no write


def test_check_mode_shows_a_drift_with_a_warning_and_a_real_run_fails_on_it() -> None:
    jobs, warnings = Jobs(conflict=True), []
    out = Run(params(**SHORT), jobs, check_mode=True, warn=warnings.append)()
    assert out["changed"] and out["method"] == "created" and not jobs.stored
    assert warnings == ["applying MPIJob default/pi: conflict with kubectl-scale. Without check mode this task fails."]
    with pytest.raises(Conflict) as caught:
        Run(params(**SHORT), Jobs(conflict=True))()
    assert caught.value.result["method"] == "unchanged" and caught.value.result["changed"] is False


def test_workers_alone_patch_only_the_worker_replicas() -> None:
    jobs = Jobs()
    Run(params(**SHORT), jobs)()
    jobs.calls.clear()
    out = Run(params(name="pi", workers=3), jobs)()
    assert out["method"] == "patched" and jobs.calls == [
        "get",
        "patch {'spec': {'mpiReplicaSpecs': {'Worker': {'replicas': 3}}}}",
    ]
    assert out["result"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3


def test_scaling_a_missing_job_names_what_to_give_instead() -> None:
    with pytest.raises(SubmitError, match=r"^MPIJob team-a/pi does not exist: to create it, give definition"):
        Run(params(name="pi", namespace="team-a", workers=3), Jobs())()
    with pytest.raises(SubmitError, match=r"^nothing to do"):
        Run(params(name="pi"), Jobs())()


def test_absent_deletes_and_returns_no_job_except_in_check_mode() -> None:
    jobs = Jobs()
    Run(params(**SHORT), jobs)()
    preview = Run(params(state="absent", name="pi"), jobs, check_mode=True)()
    assert preview["method"] == "deleted" and preview["result"]["metadata"]["name"] == "pi"
    jobs.calls.clear()
    out = Run(params(state="absent", name="pi", wait=True), jobs)()
    assert out["changed"] and out["result"] is None
    assert jobs.calls == ["get", "delete", "wait and its children to be deleted"]
    assert Run(params(state="absent", name="gone"), jobs)()["method"] == "unchanged"


def test_a_failed_job_waited_for_fails_the_task_with_the_launcher_log_and_the_whole_result() -> None:
    jobs = Jobs(finish=failed)
    with pytest.raises(JobError) as caught:
        Run(params(**SHORT, wait=True), jobs)()
    assert str(caught.value).startswith(
        "MPIJob default/pi failed: MPIJobFailed: launcher failed\nlauncher pod pi-launcher-x: Error, exit code 3\n"
    )
    assert caught.value.result["summary"]["phase"] == "Failed" and caught.value.result["launcher_log"] == ["boom"]
    out = Run(params(**SHORT, wait=True, fail_on_job_failure=False), Jobs(finish=failed))()
    assert out["summary"]["phase"] == "Failed"


def test_a_wait_that_times_out_returns_the_job_as_last_seen() -> None:
    with pytest.raises(JobError, match="timed out") as caught:
        Run(params(**SHORT, wait=True), Jobs())()
    assert caught.value.result["method"] == "created" and caught.value.result["result"]["metadata"]["uid"] == "u1"


def _run_module(args: dict, body, capsys: pytest.CaptureFixture) -> dict:
    """run_module as Ansible runs it: a real AnsibleModule reading its arguments, exiting with JSON on stdout."""
    import json

    from ansible_collections.mpi.operator.plugins.module_utils.kube.auth import AUTH_ARG_SPEC
    from ansible_collections.mpi.operator.plugins.module_utils.kube.module import run_module

    try:
        from ansible.module_utils.testing import patch_module_args  # ansible-core 2.19+
    except ImportError:  # earlier releases read the arguments from basic._ANSIBLE_ARGS alone
        from unittest import mock

        from ansible.module_utils import basic

        def patch_module_args(given: dict):
            return mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": given}).encode())

    with patch_module_args(args), pytest.raises(SystemExit):
        run_module(dict(AUTH_ARG_SPEC), body, supports_check_mode=True)
    return json.loads(capsys.readouterr().out)


def test_run_module_turns_every_error_into_the_tasks_failure_in_one_form(capsys: pytest.CaptureFixture) -> None:
    nowhere = {"host": "http://127.0.0.1:1", "api_key": "no-such-token", "request_timeout": 2}
    out = _run_module(nowhere, lambda _module, rest: rest.get("/api/v1/namespaces"), capsys)
    assert out["failed"] and out["msg"].startswith("Kubernetes API server unreachable: GET /api/v1/namespaces: ")
    assert out["api_calls"] == 1

    def partial(_module, _rest):
        raise JobError("timed out", result={"metadata": {"name": "pi"}}, method="created")

    out = _run_module(nowhere, partial, capsys)
    assert out["msg"] == "timed out" and out["method"] == "created" and out["result"] == {"metadata": {"name": "pi"}}

    out = _run_module({**nowhere, "kubeconfig": ["a list"]}, partial, capsys)
    assert out["msg"].startswith("kubeconfig: must be a path or a kubeconfig document") and "api_calls" not in out

    out = _run_module(nowhere, lambda _module, _rest: {"changed": False, "jobs": []}, capsys)
    assert out == {"changed": False, "jobs": [], "api_calls": 0, "invocation": out["invocation"]}


# ---- mpijob options shared with kubernetes.core.k8s (docs/kubernetes-core.md) ------------------------------------


def _mpijob_module():
    import importlib

    return importlib.import_module("ansible_collections.mpi.operator.plugins.modules.mpijob")


def _params(**given):
    return {"definition": None, "src": None, "template": None, **given}


def test_definition_as_yaml_text_takes_its_one_mpijob():
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: kubeflow.org/v2beta1\nkind: MPIJob\n"
        "metadata: {name: pi}\n"
    )
    assert task.given_definition(_params(definition=text))["metadata"]["name"] == "pi"
    with pytest.raises(SubmitError, match=r"^definition must hold exactly one MPIJob, found 2$"):
        task.given_definition(_params(definition=text + "---\nkind: MPIJob\nmetadata: {name: b}\n"))
    with pytest.raises(SubmitError, match=r"^definition: not valid YAML"):
        task.given_definition(_params(definition="kind: {{ x }}"))
    with pytest.raises(SubmitError, match=r"^definition: must be a dict or a YAML string"):
        task.given_definition(_params(definition=["a"]))


def test_template_reaching_the_module_says_the_action_plugin_did_not_run():
    with pytest.raises(SubmitError, match=r"^template: rendered by the mpi.operator.mpijob action plugin"):
        task.given_definition(_params(template="job.j2"))


def test_force_is_the_deprecated_name_of_force_conflicts():
    mod = _mpijob_module()
    spec = mod.argspec()
    assert spec["force"].get("removed_in_version") == "1.0.0" and spec["force"].get("default") is None
    assert spec["force_conflicts"]["default"] is False and spec["field_manager"]["default"] == "mpi.operator"
    assert task.force_conflicts({"force_conflicts": False, "force": True}) is True
    assert task.force_conflicts({"force_conflicts": True, "force": None}) is True
    assert task.force_conflicts({"force_conflicts": False, "force": None}) is False


def test_named_api_version_is_the_storage_version_and_names_the_option():
    assert task.named_api_version({"api_version": None}) == "kubeflow.org/v2beta1"
    assert task.named_api_version({"api_version": "kubeflow.org/v1"}) == "kubeflow.org/v2beta1"
    assert task.named_api_version({"api_version": "batch.tensorstack.dev/v1beta1"}) == "batch.tensorstack.dev/v1beta1"
    with pytest.raises(SubmitError, match=r"api_version: 'x\.io/v1' is not an MPIJob API served here"):
        task.named_api_version({"api_version": "x.io/v1"})
