"""Leader election decisions and the elector against an in-memory lease store with conflicts."""

import pytest

from mpijob_operator.leader import (
    LeaderElector,
    Observed,
    Record,
    Timing,
    decide,
    observe,
)

T = Timing(lease_duration=15, renew_deadline=5, retry_period=2)


def rec(holder, renew="t1"):
    return Record(holder=holder, lease_duration=15, transitions=0, acquire_time="t0", renew_time=renew)


def test_no_lease_or_released_lease_is_acquired():
    assert decide("me", None, Observed(), 0, T) == "acquire"
    assert decide("me", rec(None), Observed(), 0, T) == "acquire"


def test_our_lease_is_renewed():
    assert decide("me", rec("me"), Observed(), 0, T) == "renew"


def test_a_lease_seen_changing_belongs_to_a_live_leader():
    seen = Observed(rec("other", "t1"), at=0)
    assert decide("me", rec("other", "t2"), seen, 100, T) == "wait"


def test_a_lease_unchanged_for_its_duration_is_taken_over_using_local_time():
    seen = observe(Observed(), rec("other"), now=50)
    assert seen.at == 50
    assert decide("me", rec("other"), seen, 64.9, T) == "wait"
    assert decide("me", rec("other"), seen, 65, T) == "acquire"
    assert observe(seen, rec("other"), now=70) is seen  # unchanged record keeps its first-seen time


class Store:
    """A Lease with resourceVersion semantics, shared by the electors of two replicas."""

    def __init__(self):
        self.record = None
        self.version = 0

    def lock_for(self):
        store = self

        class Lock:
            rv = None

            def get(self):
                self.rv = store.version if store.record else None
                return store.record

            def write(self, record):
                if (self.rv is None and store.record is not None) or (self.rv is not None and self.rv != store.version):
                    raise RuntimeError("409 conflict")
                store.record = record
                store.version += 1

        return Lock()


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def test_two_replicas_one_leader_and_takeover_after_the_lease_expires():
    store, clock = Store(), Clock()
    events = []
    a = LeaderElector(store.lock_for(), "a", T, lambda: events.append("a+"), lambda: events.append("a-"), clock)
    b = LeaderElector(store.lock_for(), "b", T, lambda: events.append("b+"), lambda: events.append("b-"), clock)
    assert a.try_once() is True
    assert b.try_once() is False
    for _ in range(10):  # a keeps renewing: b never takes over
        clock.now += 2
        assert a.try_once() is True
        assert b.try_once() is False
    assert store.record.holder == "a"
    # a dies: b takes over once it has seen the same record for a whole lease duration
    # (b last saw a's final renewal at the time a made it)
    clock.now += 2
    assert b.try_once() is False
    clock.now += 12.9
    assert b.try_once() is False
    clock.now += 0.1
    assert b.try_once() is True
    assert store.record.holder == "b"
    assert store.record.transitions == 1


def test_release_hands_the_lease_over_at_once():
    store, clock = Store(), Clock()
    a = LeaderElector(store.lock_for(), "a", T, lambda: None, lambda: None, clock)
    b = LeaderElector(store.lock_for(), "b", T, lambda: None, lambda: None, clock)
    assert a.try_once()
    a.is_leader = True
    a.stop(release=True)
    assert store.record.holder is None
    assert b.try_once() is True


def test_losing_the_lease_calls_on_stopped(monkeypatch):
    store, clock = Store(), Clock()
    stopped = []
    a = LeaderElector(store.lock_for(), "a", T, lambda: None, lambda: stopped.append(True), clock)

    def waits(seconds):
        clock.now += seconds
        if clock.now > 4:
            store.record = rec("thief", str(clock.now))  # someone else writes: our renewals conflict
            store.version += 1
        return False

    monkeypatch.setattr(a._stop, "wait", waits)
    a.run()
    assert stopped == [True]
    assert a.is_leader is False


@pytest.mark.parametrize("holder", ["a", None])
def test_conflicting_writes_fail(holder):
    store = Store()
    l1, l2 = store.lock_for(), store.lock_for()
    l1.get()
    l2.get()
    l1.write(rec(holder))
    with pytest.raises(RuntimeError):
        l2.write(rec("b"))
