"""Writing a record (kube/record.py) against a recording stand-in for the API server: what it reads (pods/log with
tailLines and limitBytes, Warning events), what it writes (create, else a merge patch with the resourceVersion read),
that a ConfigMap not the job's is left alone, and that a failed write stops the plan before its deletions."""

from __future__ import annotations

import json

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.kube.apply import Applier
from ansible_collections.mpi.operator.plugins.module_utils.kube.record import write_record
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import record as R
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import ApiError
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import Action, Plan
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult

META = {
    "name": "pi-record",
    "namespace": "ns",
    "labels": {"app": "pi"},
    "ownerReferences": [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "name": "pi", "uid": "uid-pi"}],
}
POD = {"name": "pi-launcher-x", "uid": "uid-l", "role": "launcher", "container": "launcher", "exitCode": 3}


class FakeRest:
    """Answers as the API server would; records each request."""

    def __init__(self, existing: dict | None = None, fail_write: int = 0, log: bytes = b"a\nb\nboom\n"):
        self.calls: list[tuple[str, str, dict | None, object]] = []
        self.existing, self.fail_write, self.log = existing, fail_write, log

    def raw(self, method, path, body=None, query=None, content_type="", accept="", timeout=None):
        self.calls.append((method, path, query, body))
        if path.endswith("/log"):
            return (200, "OK", self.log) if self.log is not None else (404, "Not Found", b'{"message": "gone"}')
        raise AssertionError(path)

    def request(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        self.calls.append((method, path, query, body))
        if method == "GET" and path.endswith("/events"):
            uid = query["fieldSelector"].split(",")[0].split("=")[1]
            return {"items": [{"reason": "BackOff", "message": f"of {uid}", "count": 2, "lastTimestamp": "t"}]}
        if method in ("POST", "PATCH") and "configmaps" in path:
            if self.fail_write:
                raise ApiError(self.fail_write, "err", {"message": "no"})
            if method == "POST" and self.existing is not None:
                raise ApiError(409, "Conflict", {"message": "exists"})
            return body
        if method == "DELETE":
            return {}
        raise AssertionError((method, path))

    def send(self, method, path, body=None, content_type="application/json"):
        self.request(method, path, body)

    def get(self, path):
        self.calls.append(("GET", path, None, None))
        return self.existing


def action(seen: dict | None = None) -> Action:
    body = {
        "metadata": META,
        "why": "job failed",
        "pods": [{**POD, "log": True}],
        "omitted": 0,
        "limits": {"lines": 50, "podBytes": 8192, "totalBytes": 65536},
        "seen": seen,
    }
    return Action("record", "ConfigMap", "pi-record", reason="job failed", body=body, api_version="v1")


def test_reads_the_logs_and_events_then_creates_the_config_map() -> None:
    rest = FakeRest()
    assert write_record(rest, action(), "now")
    (log,) = [c for c in rest.calls if c[1].endswith("/log")]
    assert log[1] == "/api/v1/namespaces/ns/pods/pi-launcher-x/log"
    assert log[2] == {"container": "launcher", "tailLines": "50", "limitBytes": str(4 * 8192)}
    events = sorted(c[2]["fieldSelector"] for c in rest.calls if c[1].endswith("/events"))
    assert events == ["involvedObject.uid=uid-l,type=Warning", "involvedObject.uid=uid-pi,type=Warning"]
    (create,) = [c for c in rest.calls if c[0] == "POST"]
    cm = create[3]
    assert cm["data"]["pi-launcher-x.log"] == "a\nb\nboom\n"
    summary = json.loads(cm["data"][R.SUMMARY])
    assert summary["pods"][0]["log"] == "pi-launcher-x.log"
    assert {e["object"] for e in summary["events"]} == {"MPIJob/pi", "Pod/pi-launcher-x"}


def test_a_log_that_cannot_be_read_is_noted() -> None:
    rest = FakeRest(log=None)
    assert write_record(rest, action(), "now")
    cm = next(c[3] for c in rest.calls if c[0] == "POST")
    assert "log unavailable: " in json.loads(cm["data"][R.SUMMARY])["pods"][0]["logNote"]


def test_a_record_there_is_merged_with_the_resource_version_read() -> None:
    seen = {"metadata": {**META, "resourceVersion": "42", "ownerReferences": [{"uid": "uid-pi", "controller": True}]}}
    seen["data"] = {R.SUMMARY: json.dumps({"pods": [{"name": "w", "uid": "uid-w", "role": "worker"}]}), "w.log": "x"}
    rest = FakeRest(existing=seen)
    assert write_record(rest, action(seen), "now")
    (patch,) = [c for c in rest.calls if c[0] == "PATCH"]
    assert patch[3]["metadata"] == {"resourceVersion": "42"}
    assert patch[3]["data"]["w.log"] == "x" and "pi-launcher-x.log" in patch[3]["data"]
    # a stale read (nothing seen, the record made meanwhile): the create meets it, reads it and merges into it
    rest = FakeRest(existing=seen)
    assert write_record(rest, action(None), "now")
    assert [c[0] for c in rest.calls if "configmaps" in c[1]] == ["POST", "GET", "PATCH"]


def test_a_config_map_not_the_jobs_is_left_alone() -> None:
    theirs = {"metadata": {"name": "pi-record", "ownerReferences": []}, "data": {"mine": "yes"}}
    rest = FakeRest(existing=theirs)
    assert not write_record(rest, action(None), "now")
    assert not [c for c in rest.calls if c[0] == "PATCH"]


@pytest.mark.parametrize("status", [500, 429, 403])
def test_a_failed_write_stops_the_plan_before_the_deletions(status: int) -> None:
    rest = FakeRest(fail_write=status)
    obj = {"apiVersion": "kubeflow.org/v2beta1", "metadata": {"name": "pi", "namespace": "ns", "uid": "uid-pi"}}
    applier = Applier(rest, obj, JobResult(namespace="ns", name="pi"))  # type: ignore[arg-type]
    delete = Action("delete", "Pod", "pi-launcher-x", api_version="v1", uid="uid-l")
    assert not applier.apply(Plan([action(), delete], {}))
    assert not [c for c in rest.calls if c[0] == "DELETE"]
    assert applier.result.error and "record ConfigMap pi-record" in applier.result.error
    ok = FakeRest()
    applier = Applier(ok, obj, JobResult(namespace="ns", name="pi"))  # type: ignore[arg-type]
    assert applier.apply(Plan([action(), delete], {}))
    writes = [c[0] for c in ok.calls if c[0] in ("POST", "DELETE")]
    assert writes == ["POST", "DELETE"]  # the record, then the deletion
