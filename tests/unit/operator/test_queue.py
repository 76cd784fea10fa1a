"""The work queue's decisions, on a fake clock."""
import threading

from mpijob_operator.queue import Backoff, WorkQueue

A = ("ns", "a")
B = ("ns", "b")
C = ("ns", "c")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def keys(batch):
    return [k for k, _ in batch]


def test_a_queued_job_is_not_queued_twice():
    q = WorkQueue(clock=Clock())
    q.add(A)
    q.add(A)
    q.add(B)
    assert q.depth() == 2
    assert keys(q.take_ready(10)) == [A, B]
    assert q.take_ready(10) == []


def test_batches_are_bounded_and_fifo():
    q = WorkQueue(clock=Clock())
    for i in range(7):
        q.add(("ns", f"j{i}"))
    assert keys(q.take_ready(3)) == [("ns", "j0"), ("ns", "j1"), ("ns", "j2")]
    assert keys(q.take_ready(3)) == [("ns", "j3"), ("ns", "j4"), ("ns", "j5")]
    assert keys(q.take_ready(3)) == [("ns", "j6")]


def test_a_job_is_in_one_run_at_a_time_and_requeued_once_after_it():
    q = WorkQueue(clock=Clock())
    q.add(A)
    assert keys(q.take_ready(10)) == [A]
    q.add(A)  # events while its run is in flight
    q.add(A)
    assert q.take_ready(10) == []  # not handed to a second run concurrently
    q.done(A)
    assert keys(q.take_ready(10)) == [A]
    q.done(A)
    assert q.take_ready(10) == []


def test_first_queued_time_is_kept_for_latency():
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add(A)
    clock.now += 5
    q.add(A)
    assert q.take_ready(1) == [(A, 1000.0)]


def test_failure_backs_off_exponentially_and_events_do_not_bypass_it():
    clock = Clock()
    q = WorkQueue(backoff=Backoff(base=0.5, cap=5), clock=clock)
    delays = []
    for _ in range(6):
        q.add(A)
        clock.now += 10
        assert keys(q.take_ready(1)) == [A]
        delays.append(q.done(A, failed=True))
        assert q.failures(A) == len(delays)
        q.add(A)  # an event during the backoff
        assert q.take_ready(1) == []
        assert q.waiting() == 1
    assert delays == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    clock.now += 5
    assert keys(q.take_ready(1)) == [A]
    q.done(A)  # success forgets the failures
    assert q.failures(A) == 0


def test_backoff_retries_without_any_event():
    clock = Clock()
    q = WorkQueue(backoff=Backoff(base=2, cap=60), clock=clock)
    q.add(A)
    q.take_ready(1)
    q.done(A, failed=True)
    clock.now += 1.9
    assert q.take_ready(1) == []
    clock.now += 0.2
    assert keys(q.take_ready(1)) == [A]


def test_requeue_after_is_a_deadline_and_keeps_the_earliest():
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add_after(A, 30)
    q.add_after(A, 10)
    q.add_after(A, 20)
    clock.now += 9
    assert q.take_ready(5) == []
    clock.now += 1
    assert keys(q.take_ready(5)) == [A]
    q.done(A)
    clock.now += 100
    assert q.take_ready(5) == []  # the later deadlines were superseded


def test_forget_drops_pending_deadlines_and_backoff():
    clock = Clock()
    q = WorkQueue(clock=clock)
    q.add(A)
    q.take_ready(1)
    q.done(A, failed=True)
    q.forget(A)
    assert q.failures(A) == 0
    clock.now += 1000
    assert q.take_ready(5) == []
    q.add(A)
    assert keys(q.take_ready(5)) == [A]


def test_get_batch_blocks_until_work_arrives_and_collects_what_is_ready():
    q = WorkQueue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.get_batch(10, timeout=5)))
    t.start()
    q.add(A)
    t.join(5)
    assert keys(got[0]) == [A]
    q.add(B)
    q.add(C)
    assert keys(q.get_batch(10, timeout=1)) == [B, C]


def test_get_batch_wakes_for_a_deadline_without_polling():
    q = WorkQueue()
    q.add_after(A, 0.2)
    batch = q.get_batch(10, timeout=3)
    assert keys(batch) == [A]


def test_shutdown_releases_blocked_consumers():
    q = WorkQueue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.get_batch(10)))
    t.start()
    q.shutdown()
    t.join(2)
    assert got == [[]]
    q.add(A)
    assert q.depth() == 0
