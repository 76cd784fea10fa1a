"""A job's key (one shape everywhere, the API's storage version) and a reconcile's outcome (one value, one mapping of
API errors)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import api_error_outcome
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult, Key, Outcome, job_key

T9K, BDAP = "batch.tensorstack.dev/v1beta1", "batch.test.bdap.com/v1"


def test_a_key_always_names_its_apis_storage_version() -> None:
    assert job_key("ns", "pi") == Key("ns", "pi", C.API_VERSION) == Key("ns", "pi", "kubeflow.org/v2beta1")
    assert job_key("ns", "pi", "kubeflow.org/v1") == job_key("ns", "pi", "kubeflow.org/v2beta1")  # one job
    assert job_key("ns", "pi", T9K) == Key("ns", "pi", T9K)
    assert job_key("ns", "pi", "batch.tensorstack.dev/v2") == Key("ns", "pi", T9K)  # any version of the API
    assert job_key("ns", "pi", "example.com/v1") == Key("ns", "pi", "example.com/v1")  # not served: as it is
    key = job_key("ns", "pi", BDAP)
    assert (key.namespace, key.name, key.api_version) == ("ns", "pi", BDAP)


def test_two_apis_jobs_of_one_name_are_two_keys() -> None:
    keys = {
        job_key("ns", "pi"),
        job_key("ns", "pi", "kubeflow.org/v1"),
        job_key("ns", "pi", T9K),
        job_key("ns", "pi", BDAP),
        job_key("other", "pi"),
    }
    assert len(keys) == 4


def test_a_results_key_is_the_key_of_its_entry() -> None:
    assert JobResult(namespace="ns", name="pi").key == job_key("ns", "pi")
    assert JobResult(namespace="ns", name="pi", api_version=T9K).key == Key("ns", "pi", T9K)


@pytest.mark.parametrize(
    ("action", "status", "outcome"),
    [
        ("status", 404, Outcome.DELETED),  # the MPIJob itself is gone
        ("status", 409, Outcome.RETRY),  # written by someone else since it was read
        ("status", 422, Outcome.RETRY),
        ("status", 500, Outcome.RETRY),
        ("create", 400, Outcome.ERROR),  # the API refuses what the template asks for
        ("create", 422, Outcome.ERROR),
        ("create", 403, Outcome.RETRY),  # RBAC, a quota: may change without the job changing
        ("create", 404, Outcome.RETRY),
        ("create", 503, Outcome.RETRY),
        ("patch", 404, Outcome.RETRY),
        ("patch", 409, Outcome.RETRY),
        ("patch", 422, Outcome.RETRY),
        ("delete", 409, Outcome.RETRY),
        ("delete", 500, Outcome.RETRY),
        ("event", 404, Outcome.RETRY),
        ("event", 429, Outcome.RETRY),
        ("delete-mpijob", 409, Outcome.RETRY),
        ("delete-mpijob", 500, Outcome.RETRY),
    ],
)
def test_an_api_error_means_one_outcome(action: str, status: int, outcome: Outcome) -> None:
    assert api_error_outcome(action, status) is outcome


def test_an_outcome_crosses_json_by_value() -> None:
    for outcome in Outcome:
        result = JobResult(namespace="ns", name="pi", outcome=outcome, error=None if outcome is Outcome.OK else "x")
        entry = json.loads(json.dumps(result.as_dict()))
        assert entry["outcome"] == outcome.value
        assert (entry["retry"], entry["deleted"]) == (outcome is Outcome.RETRY, outcome is Outcome.DELETED)
        assert JobResult.from_dict(entry) == result
    assert Outcome.parse("no such outcome") is Outcome.RETRY  # what a run cannot tell is retried
    assert JobResult.from_dict({"namespace": "ns", "name": "pi"}).outcome is Outcome.OK
