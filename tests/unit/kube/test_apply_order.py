"""The order a job's plan is carried out in (kube/apply.py split_after_status): a transition's Event before the
status write that records it, every other Event and a finished job's clean-up after it."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils.kube.apply import split_after_status
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import Action, Plan
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
