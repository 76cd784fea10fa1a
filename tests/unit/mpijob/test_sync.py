"""What mpijob_sync decides (module_utils/mpijob/sync.py): the set a directory declares, refusals naming file and field,
and what may be pruned. Which files it reads: tests/unit/kube/test_mpijob_sync_task.py; the API calls are tested
against the real API server, with a real ansible-pull, in tests/integration/test_mpijob_sync.py."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import sync as Y
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import SubmitError


def job(name: str, api_version: str = "kubeflow.org/v2beta1", namespace: str | None = None, **labels: str) -> dict:
    meta: dict = {"name": name, **({"namespace": namespace} if namespace else {})}
    if labels:
        meta["labels"] = dict(labels)
    container = {"name": "c", "image": "mpi:1"}
    return {
        "apiVersion": api_version,
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [dict(container, command=["mpirun", "x"])]}},
                },
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}},
            }
        },
    }


def live(name: str, phase: str | None, source: str = "git", namespace: str = "default") -> dict:
    obj = job(name, namespace=namespace, **({Y.SOURCE_LABEL: source} if source else {}))
    if phase:
        obj["status"] = {"conditions": [{"type": phase, "status": "True", "reason": f"MPIJob{phase}"}]}
    return obj


def test_every_document_is_labelled_with_the_source_and_given_the_default_namespace() -> None:
    desired = Y.desired_set([("jobs/a.yaml", [job("a"), job("b", namespace="team")])], "git", "")
    a, b = desired.valid()
    assert a.manifest["metadata"] == {"name": "a", "namespace": "default", "labels": {Y.SOURCE_LABEL: "git"}}
    assert b.key == ("kubeflow.org", "team", "b") and b.where == "jobs/a.yaml (document 2)"


def test_each_bad_document_is_refused_naming_its_file_and_field_and_the_others_stay() -> None:
    bad_field = job("typo")
    bad_field["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = -1
    other_source = job("theirs", **{Y.SOURCE_LABEL: "flux"})
    desired = Y.desired_set(
        [
            ("a.yaml", [job("good"), {"kind": "ConfigMap", "apiVersion": "v1"}]),
            ("b.yaml", [bad_field, job("old", api_version="kubeflow.org/v9"), other_source]),
            ("c.yaml", [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {}}]),
        ],
        "git",
        None,
    )
    assert [d.manifest["metadata"]["name"] for d in desired.valid()] == ["good"]
    messages = [d.message for d in desired.docs if d.result == Y.INVALID]
    assert messages[0] == "a.yaml (document 2): kind: only MPIJobs are synced, got 'ConfigMap'"
    assert messages[1].startswith("b.yaml: invalid MPIJob: ") and "spec.mpiReplicaSpecs.Worker.replicas" in messages[1]
    assert messages[2].startswith("b.yaml (document 2): apiVersion: 'kubeflow.org/v9' is not an MPIJob API served")
    assert messages[3] == (
        f"b.yaml (document 3): metadata.labels.{Y.SOURCE_LABEL}: 'flux' is another source than this sync's 'git'"
    )
    assert messages[4] == "c.yaml: metadata.name: required"
    # a job whose manifest is refused is still declared: it is never pruned for being broken
    assert ("kubeflow.org", "default", "typo") in desired.declared()


def test_a_job_declared_twice_is_refused_in_both_places_v1_and_v2beta1_being_one_job() -> None:
    desired = Y.desired_set(
        [("a.yaml", [job("pi")]), ("b.yaml", [job("pi", api_version="kubeflow.org/v1")])], "git", None
    )
    assert not desired.valid()
    assert {d.message for d in desired.docs} == {
        f"{f}: MPIJob default/pi is declared more than once (a.yaml, b.yaml)" for f in ("a.yaml", "b.yaml")
    }


def test_the_sync_namespace_refuses_a_manifest_naming_another() -> None:
    desired = Y.desired_set([("a.yaml", [job("pi", namespace="other")])], "git", "research")
    assert desired.docs[0].message == "a.yaml: metadata.namespace: 'other' is outside the sync's namespace 'research'"


@pytest.mark.parametrize("source", ["", "-x", "a" * 64, "has space", None, "a/b"])
def test_a_source_that_is_not_a_label_value_is_refused(source: object) -> None:
    with pytest.raises(SubmitError, match=r"source: .* is not a valid label value"):
        Y.check_source(source)


def test_only_finished_jobs_of_the_source_that_left_the_set_are_pruned() -> None:
    desired = Y.desired_set([("a.yaml", [job("kept-in-git")])], "git", None)
    jobs = [
        live("kept-in-git", "Succeeded"),
        live("done", "Succeeded"),
        live("failed", "Failed"),
        live("running", "Running"),
        live("pending", None),
        live("other-source", "Succeeded", source="flux"),
    ]
    plan = Y.prune_plan(jobs, desired, "git", unfinished=False, allow_empty=False)
    assert [j["metadata"]["name"] for j in plan.prune] == ["done", "failed"]
    assert [(j["metadata"]["name"], why) for j, why in plan.kept] == [
        ("pending", "not finished (Pending); prune_unfinished: true prunes it"),
        ("running", "not finished (Running); prune_unfinished: true prunes it"),
    ]
    plan = Y.prune_plan(jobs, desired, "git", unfinished=True, allow_empty=False)
    assert [j["metadata"]["name"] for j in plan.prune] == ["done", "failed", "pending", "running"]


def test_a_job_without_the_source_label_is_never_pruned_even_if_listed() -> None:
    unlabelled = live("by-hand", "Succeeded", source="")
    plan = Y.prune_plan([unlabelled], Y.desired_set([("a.yaml", [job("x")])], "git", None), "git", True, True)
    assert not plan.prune and not plan.kept


@pytest.mark.parametrize(
    ("files", "error", "blocked"),
    [
        ([("a.yaml", [job("x")]), ("b.yaml", "not valid YAML: ...")], "", "b.yaml could not be read"),
        ([("a.yaml", [job("x")])], "forbidden", "could not be listed: forbidden"),
        ([("a.yaml", [])], "", "the source declares no MPIJob at all, which would prune all 1 of its jobs"),
    ],
)
def test_nothing_is_pruned_when_what_the_source_declares_is_unknown(files: list, error: str, blocked: str) -> None:
    plan = Y.prune_plan([live("gone", "Succeeded")], Y.desired_set(files, "git", None), "git", True, False, error)
    assert blocked in plan.blocked and not plan.prune and [j["metadata"]["name"] for j, _ in plan.kept] == ["gone"]


def test_an_empty_set_prunes_everything_only_when_allowed() -> None:
    plan = Y.prune_plan([live("gone", "Succeeded")], Y.desired_set([], "git", None), "git", False, allow_empty=True)
    assert [j["metadata"]["name"] for j in plan.prune] == ["gone"]


def test_a_files_result_is_its_worst_documents_and_the_plan_line_counts_each_kind() -> None:
    docs = [
        Y.Doc("a.yaml", 0, ("kubeflow.org", "d", "a"), result=Y.UNCHANGED),
        Y.Doc("a.yaml", 1, ("kubeflow.org", "d", "b"), result=Y.CONFLICT, message="a.yaml (document 2): conflict"),
        Y.Doc("b.yaml", 0, ("batch.test.bdap.com", "d", "c"), result=Y.CREATED),
    ]
    assert Y.file_results(docs) == [
        {"file": "a.yaml", "result": "conflict", "jobs": ["d/a", "d/b"], "messages": ["a.yaml (document 2): conflict"]},
        {"file": "b.yaml", "result": "created", "jobs": ["d/c (batch.test.bdap.com)"], "messages": []},
    ]
    plan = {
        "created": [1],
        "updated": [],
        "pruned": [1, 2],
        "unchanged": [],
        "kept": [],
        "conflicts": [1],
        "invalid": [],
    }
    assert Y.plan_line(plan) == "create 1, update 0, prune 2, unchanged 0, kept 0, conflict 1, invalid 0"


def test_set_progress_says_how_many_jobs_are_in_each_phase() -> None:
    jobs = [live("a", "Succeeded"), live("b", "Running"), live("c", "Succeeded")]
    assert Y.set_progress(jobs, "Succeeded") == (False, "3 jobs: 2 Succeeded, 1 Running")
    assert Y.set_progress(jobs, "Running")[0]


def test_the_manifest_given_is_not_changed() -> None:
    given = job("pi")
    before = copy.deepcopy(given)
    Y.desired_set([("a.yaml", [given])], "git", "ns")
    assert given == before
