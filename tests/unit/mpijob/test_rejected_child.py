"""A child the API server refuses to create (400, 422) fails its job as an invalid spec does: Failed, reason
ValidationError, the message naming the field of the job's own template (found by the storm of `make chaos`: such a
job had only a Warning Event, no condition). The server's messages are as kube-apiserver 1.35 wrote them."""

from __future__ import annotations

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import api_for
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.planner import child_field_error, rejected
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Outcome
from hack.experiments.chaos import mutations

from ._bdap import example as bdap_job
from ._helpers import at, manifest
from ._t9k import t9k

NAME_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and"
    " end with an alphanumeric character"
)
JOB_REFUSED = (
    f'Job.batch "pi-launcher" is invalid: spec.template.spec.containers[0].name: Invalid value: "Pi": {NAME_RULE}'
)
POD_REFUSED = (
    'Pod "pi-worker-0" is invalid: [spec.containers[0].image: Required value, '
    'metadata.labels: Invalid value: "-x": name part must consist of alphanumeric characters]'
)


def failed(plan: P.Plan) -> dict:
    return next(c for c in plan.status["conditions"] if c["type"] == C.FAILED)


def test_a_refused_launcher_job_fails_the_job_naming_the_launcher_templates_field() -> None:
    plan = rejected(manifest(), "Job", "pi-launcher", JOB_REFUSED, at(0))
    cond = failed(plan)
    assert cond["status"] == "True" and cond["reason"] == C.REASON_VALIDATION
    assert cond["message"] == (
        "Found validation errors: spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].name"
        f': Invalid value: "Pi": {NAME_RULE}'
    )
    assert mutations.FIELD.match(cond["message"])
    assert plan.outcome is Outcome.ERROR and plan.error == cond["message"]
    assert [a.action for a in plan.actions] == ["status", "event"]
    assert plan.actions[1].body["reason"] == C.REASON_VALIDATION
    assert [t.reason for t in plan.transitions] == [C.REASON_VALIDATION]


def test_a_refused_worker_pod_names_every_field_in_the_worker_template() -> None:
    cond = failed(rejected(manifest(), "Pod", "pi-worker-0", POD_REFUSED, at(0)))
    assert cond["message"] == (
        "Found validation errors: spec.mpiReplicaSpecs.Worker.template.spec.containers[0].image: Required value, "
        'spec.mpiReplicaSpecs.Worker.template.metadata.labels: Invalid value: "-x": name part must consist of '
        "alphanumeric characters"
    )


@pytest.mark.parametrize(
    ("job", "kind", "name", "path"),
    [
        (t9k(), "Job", "random-walk-launcher", "spec.worker.template.spec.containers[0].name"),
        (t9k(), "Pod", "random-walk-worker-0", "spec.worker.template.spec.containers[0].image"),
        (bdap_job(), "Pod", "simple-train-cpu-launcher", "spec.launcherTemplate.spec.containers[0].image"),
        (bdap_job(), "Pod", "simple-train-cpu-worker-1", "spec.workerTemplate.spec.containers[0].image"),
    ],
)
def test_each_api_names_its_own_template(job: dict, kind: str, name: str, path: str) -> None:
    job["metadata"].setdefault("uid", "uid-1")
    refused = (
        f'{kind} "{name}" is invalid: '
        + ("spec.template." if kind == "Job" else "")
        + (
            "spec.containers[0].name: Invalid value"
            if path.endswith("name")
            else "spec.containers[0].image: Required value"
        )
    )
    assert failed(rejected(job, kind, name, refused, at(0)))["message"].startswith(f"Found validation errors: {path}: ")


def test_a_refusal_naming_no_field_names_the_template_or_the_object() -> None:
    api = api_for(manifest())
    err = child_field_error(api, "Pod", False, "pi-worker-0", "the body of the request was in an unknown format")
    assert str(err) == (
        "spec.mpiReplicaSpecs.Worker.template: the API server refused Pod pi-worker-0: the body of the "
        "request was in an unknown format"
    )
    err = child_field_error(api, "Service", False, "pi", 'Service "pi" is invalid: spec.ports: Required value')
    assert str(err).startswith("<object>: the API server refused Service pi: ")


def test_a_job_already_failed_by_the_refusal_writes_nothing_more() -> None:
    job = manifest()
    first = rejected(job, "Job", "pi-launcher", JOB_REFUSED, at(0))
    job["status"] = first.status
    again = rejected(job, "Job", "pi-launcher", JOB_REFUSED, at(5))
    assert again.actions == [] and again.status == first.status and not again.transitions
