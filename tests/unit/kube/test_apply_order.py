"""The order a job's plan is carried out in (kube/apply.py split_after_status): a transition's Event before the
status write that records it, every other Event and a finished job's clean-up after it."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils.kube.apply import Applier, split_after_status
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import Action, Plan
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.status import Transition


def event(reason: str) -> Action:
    return Action("event", "Event", reason, reason=reason, body={"type": "Normal", "reason": reason, "message": "m"})


def names(actions: list[Action]) -> list[str]:
    return [f"{a.action}:{a.name}" for a in actions]


def test_transition_events_go_just_before_the_status_the_rest_after_it() -> None:
    actions = [
        Action("create", "Pod", "pi-worker-0"),
        Action("status", C.KIND, "pi", body={}),
        Action("delete", "Pod", "pi-worker-1"),
        event(C.REASON_RUNNING),
        event("FieldNotApplied"),
        event(C.REASON_SUCCEEDED),
    ]
    plan = Plan(
        actions,
        {},
        transitions=(
            Transition(C.RUNNING, "True", C.REASON_RUNNING),
            Transition(C.SUCCEEDED, "True", C.REASON_SUCCEEDED),
        ),
    )
    head, tail = split_after_status(plan)
    assert names(head) == [
        "create:pi-worker-0",
        f"event:{C.REASON_RUNNING}",
        f"event:{C.REASON_SUCCEEDED}",
        "status:pi",
    ]
    assert names(tail) == ["delete:pi-worker-1", "event:FieldNotApplied"]


def test_without_a_status_write_everything_goes_in_order() -> None:
    actions = [Action("create", "Pod", "pi-worker-0"), event("FieldNotApplied")]
    head, tail = split_after_status(Plan(actions, {}))
    assert names(head) == ["create:pi-worker-0", "event:FieldNotApplied"] and tail == []


class _Recorder:
    """A Rest that answers every request with an empty object and remembers them."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, object]] = []

    def request(self, method: str, path: str, body: object = None, **_kw: object) -> dict:
        self.requests.append((method, path, body))
        return {"status": {"restartCount": 1}} if path.endswith("/status") else {}

    def send(self, method: str, path: str, body: object = None, **_kw: object) -> None:
        self.request(method, path, body)


def test_a_restart_is_reported_once_its_status_is_written_and_lost_pods_go_at_once() -> None:
    obj = {"apiVersion": C.API_VERSION, "kind": C.KIND, "metadata": {"name": "pi", "namespace": "ns", "uid": "u"}}
    plan = Plan(
        [
            Action("status", C.KIND, "pi", body={"restartCount": 1}),
            Action("delete", "Pod", "pi-worker-0", api_version="v1", uid="w0", force=True),
            Action("delete", "Pod", "pi-worker-1", api_version="v1", uid="w1"),
        ],
        {"restartCount": 1},
        restart={"cause": "disruption", "scope": "world"},
    )
    rest, result = _Recorder(), JobResult(namespace="ns", name="pi")
    applier = Applier(rest, obj, result)  # type: ignore[arg-type]
    head, tail = split_after_status(plan)
    assert applier.apply(plan, head) and result.restart == {"cause": "disruption", "scope": "world"}
    applier.apply(plan, tail)
    deletes = {path.rsplit("/", 1)[1]: body for method, path, body in rest.requests if method == "DELETE"}
    assert deletes["pi-worker-0"] == {
        "propagationPolicy": "Background",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "w0"},
    }
    assert deletes["pi-worker-1"] == {"propagationPolicy": "Background", "preconditions": {"uid": "w1"}}
