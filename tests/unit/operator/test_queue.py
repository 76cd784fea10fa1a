"""The work queue's decisions, on a fake clock."""

import threading
import time

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


def lanes():
    """A queue whose work that can wait goes after a quiet second, or once it waited 10 s; on a fake clock."""
    clock = Clock()
    return clock, WorkQueue(clock=clock, later_within=10, later_quiet=1)


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


def test_work_that_can_wait_goes_once_the_ready_lane_was_quiet_in_a_batch_of_its_own():
    clock, q = lanes()
    q.add_later(A)
    assert keys(q.take_ready(10)) == [A]  # nothing else was taken: it may go at once
    q.done(A)
    q.add_later(A)
    q.add(B)
    q.add(C)
    assert keys(q.take_ready(10)) == [B, C]  # the ready lane first, and alone
    assert q.take_ready(10) == []  # a burst may not be over
    clock.now += 1
    assert keys(q.take_ready(10)) == [A]


def test_work_that_can_wait_goes_after_later_within_even_in_a_busy_queue():
    clock, q = lanes()
    q.add(C)
    q.add_later(A)
    q.add_later(B)
    assert keys(q.take_ready(10)) == [C]
    for i in range(10):
        clock.now += 0.9
        q.add(("ns", f"j{i}"))
        assert keys(q.take_ready(10)) == [("ns", f"j{i}")]  # never quiet for a second
    clock.now += 1
    q.add(C)
    assert keys(q.take_ready(10)) == [A, B]  # waited later_within: before the ready lane, on one runner
    assert keys(q.take_ready(10)) == []  # C is still in its run
    q.done(C)
    assert keys(q.take_ready(10)) == [C]


def test_one_batch_of_work_that_can_wait_at_a_time_so_a_runner_stays_free_for_a_status():
    clock, q = lanes()
    q.add_later(A)
    q.add_later(B)
    assert keys(q.take_ready(1)) == [A]
    assert q.take_ready(1) == []  # B waits for A's run, not for a runner
    clock.now += 20
    assert q.take_ready(1) == []  # also once it waited later_within
    q.add(C)
    assert keys(q.take_ready(1)) == [C]
    q.done(A)
    assert keys(q.take_ready(1)) == [B]


def test_a_consumer_waiting_on_work_that_can_wait_wakes_when_it_may_go():
    q = WorkQueue(later_within=5, later_quiet=0.3)
    q.add_later(A)
    q.add_later(B)
    assert keys(q.get_batch(1)) == [A]
    got = []
    t = threading.Thread(target=lambda: got.append(keys(q.get_batch(1, timeout=5))))
    t.start()
    t.join(0.1)
    assert t.is_alive()  # A's batch is in its run
    q.done(A)
    t.join(2)
    assert got == [[B]]
    q.done(B)
    q.add(C)
    q.add_later(A)
    assert keys(q.get_batch(1)) == [C]
    start = time.monotonic()
    assert keys(q.get_batch(1, timeout=5)) == [A]  # once the ready lane was quiet, without C's run ending
    assert 0.1 < time.monotonic() - start < 2


def test_an_event_leaves_work_that_can_wait_in_its_lane():
    """Its pass reads the job afresh, so it sees what the event was about (a finished job's last updates)."""
    clock, q = lanes()
    q.add(C)
    assert keys(q.take_ready(10)) == [C]
    q.add_later(A)
    clock.now += 0.5
    q.add(A)
    assert q.take_ready(10) == []
    clock.now += 0.5
    assert q.take_ready(10) == [(A, 1000.0)]


def test_a_run_whose_rest_can_wait_puts_the_events_during_it_in_that_lane():
    clock, q = lanes()
    q.add(A)
    q.add(B)
    assert keys(q.take_ready(10)) == [A, B]
    q.add(A)  # events during the runs
    q.add(B)
    q.done(A, later=True)
    q.done(B)
    assert keys(q.take_ready(10)) == [B]
    assert q.take_ready(10) == []
    clock.now += 1
    assert keys(q.take_ready(10)) == [A]


def test_work_that_can_wait_adds_nothing_to_a_key_already_queued_or_in_a_run():
    q = WorkQueue(clock=Clock())
    q.add(A)
    q.add_later(A)
    q.add(B)
    assert keys(q.take_ready(1)) == [A]
    q.add_later(B)  # queued: stays in the ready lane
    q.add_later(A)  # in a run, which reads the job afresh
    assert keys(q.take_ready(10)) == [B] and q.take_ready(10) == []
    q.add_later(C)
    q.forget(C)
    assert q.depth() == 0


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
