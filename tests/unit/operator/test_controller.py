"""What the loop does with each job's result: requeue, back off, forget, count."""

from prometheus_client import CollectorRegistry

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import JobResult, Outcome, job_key
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.status import Transition
from mpijob_operator.controller import Controller, Decision, decide, echoes, unexplained
from mpijob_operator.metrics import Metrics
from mpijob_operator.queue import WorkQueue
from mpijob_operator.runner import BatchResult
from mpijob_operator.watch import Change

A, B = job_key("ns", "a"), job_key("ns", "b")


def result(name="a", **kw):
    return JobResult(namespace="ns", name=name, **kw)


def test_decisions():
    assert decide(result(outcome=Outcome.DELETED)) == Decision(forget=True)
    assert decide(result(error="conflict", outcome=Outcome.RETRY)) == Decision(failed=True)
    assert decide(result(error="invalid spec", outcome=Outcome.ERROR)) == Decision()
    assert decide(result(requeue_after=42)) == Decision(requeue_after=42)
    assert decide(result()) == Decision()
    assert decide(result(cleanup_pending=True, requeue_after=60)) == Decision(requeue_after=60, later=True)
    assert decide(result(cleanup_pending=True, error="conflict", outcome=Outcome.RETRY)) == Decision(failed=True)


def test_a_clean_up_left_for_later_waits_behind_the_jobs_whose_status_is_due():
    """Also when the job's last updates (its launcher Job's final conditions, its pod's finalizer) come during its
    run or after it: they are seen by the pass that cleans up."""

    class LaunchersEnd(FakeRunner):
        def run(self, keys):
            c.enqueue(A, Change("Job", "a-launcher", "MODIFIED"))
            c.enqueue(A, Change("MPIJob", "a", "MODIFIED"))
            return super().run(keys)

    q = WorkQueue(later_quiet=0)
    c = Controller(q, Metrics(CollectorRegistry()), lambda slot: None, 1, 10)
    runner = LaunchersEnd(
        {
            A: result(
                "a", finished=True, cleanup_pending=True, actions=[{"action": "status", "kind": "MPIJob", "name": "a"}]
            )
        }
    )
    q.add(A)
    c.run_batch(runner, q.take_ready(10))
    c.enqueue(A, Change("Pod", "a-launcher-x", "MODIFIED"))
    q.add(B)
    assert [k for k, _ in q.take_ready(10)] == [B]
    assert [k for k, _ in q.take_ready(10)] == [A]
    assert q.take_ready(10) == []


class FakeRunner:
    """Stands in for ansible-runner: returns canned module results (the loop's bookkeeping is under test)."""

    def __init__(self, results):
        self.results = results
        self.calls = []

    def run(self, keys):
        self.calls.append(list(keys))
        return BatchResult("successful", 0, 0.1, {k: self.results[k] for k in keys})


def cond(ctype, when="2030-01-01T00:00:00Z"):
    return {"type": ctype, "status": "True", "lastTransitionTime": when, "reason": "MPIJob" + ctype}


def became_true(*ctypes):
    return [Transition(ctype, "True", "MPIJob" + ctype) for ctype in ctypes]


def controller(results):
    m = Metrics(CollectorRegistry())
    q = WorkQueue()
    return Controller(q, m, lambda slot: FakeRunner(results), 1, 10), q, m


def value(m, name, **labels):
    return m.registry.get_sample_value(name, labels or None)


def test_a_batch_counts_kubeflow_metrics_once_and_requeues_deadlines():
    created = result(
        "a",
        uid="u1",
        status={"conditions": [cond("Created")]},
        transitions=became_true("Created"),
        actions=[{"action": "create", "kind": "Job", "name": "a-launcher"}],
        requeue_after=60,
    )
    failed = result(
        "b",
        uid="u2",
        status={"conditions": [cond("Created"), cond("Failed")]},
        transitions=became_true("Failed"),
        finished=True,
    )
    c, q, m = controller({A: created, B: failed})
    runner = FakeRunner({A: created, B: failed})
    q.add(A)
    q.add(B)
    c.run_batch(runner, q.take_ready(10))
    q.add(A)
    c.run_batch(runner, q.take_ready(10))  # the same transitions reported again are not counted again
    assert value(m, "mpi_operator_jobs_created_total") == 1
    assert value(m, "mpi_operator_jobs_failed_total") == 1
    assert value(m, "mpi_operator_jobs_successful_total") == 0
    assert value(m, "mpi_operator_job_info", launcher="a-launcher", namespace="ns") == 1
    assert value(m, "mpi_operator_batch_size_count") == 2
    assert q.waiting() == 1  # A waits for its requeue_after deadline


def test_retry_backs_off_and_deleted_forgets():
    c, q, m = controller({})
    runner = FakeRunner(
        {A: result("a", error="conflict", outcome=Outcome.RETRY), B: result("b", outcome=Outcome.DELETED)}
    )
    q.add(A)
    q.add(B)
    c.run_batch(runner, q.take_ready(10))
    assert q.failures(A) == 1
    assert q.failures(B) == 0 and q.depth() == 0
    assert value(m, "mpi_operator_reconciles_total", result="retry") == 1
    assert value(m, "mpi_operator_reconciles_total", result="deleted") == 1


def test_workers_run_batches_until_shutdown():
    r = result("a", status={"conditions": []})
    runner = FakeRunner({A: r, B: result("b", status={})})
    m = Metrics(CollectorRegistry())
    q = WorkQueue()
    c = Controller(q, m, lambda slot: runner, 1, 10)
    q.add(A)
    q.add(B)
    c.start()
    import time

    deadline = time.monotonic() + 5
    while value(m, "mpi_operator_reconciles_total", result="ok") != 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    q.shutdown()
    assert c.join(5)
    assert runner.calls == [[A, B]]


def test_a_runs_own_creates_and_patches_are_echoes_but_deletes_and_pod_updates_are_not():
    actions = [
        {"action": "create", "kind": "Pod", "name": "a-worker-0"},
        {"action": "patch", "kind": "ConfigMap", "name": "a-config"},
        {"action": "patch", "kind": "Job", "name": "a-launcher"},
        {"action": "delete", "kind": "Pod", "name": "a-worker-3"},
        {"action": "status", "kind": "MPIJob", "name": "a"},
    ]
    assert echoes(actions) == {("Pod", "a-worker-0", "ADDED"), ("ConfigMap", "a-config", "MODIFIED")}
    cleanup = [{"action": "delete", "kind": "Pod", "name": "a-worker-0"}]
    assert echoes(cleanup, finished=True) == {("Pod", "a-worker-0", "*")}
    going = [
        Change("Pod", "a-worker-0", "MODIFIED"),
        Change("Pod", "a-worker-0", "MODIFIED"),
        Change("Pod", "a-worker-0", "DELETED"),
        Change("Pod", "a-worker-1", "DELETED"),
    ]
    assert unexplained(going, echoes(cleanup, finished=True)) == [Change("Pod", "a-worker-1", "DELETED")]
    assert echoes(cleanup, finished=False) == set()
    seen = [
        Change("Pod", "a-worker-0", "ADDED"),
        Change("Pod", "a-worker-0", "MODIFIED"),
        Change("ConfigMap", "a-config", "MODIFIED"),
        Change("Pod", "a-worker-3", "DELETED"),
    ]
    assert unexplained(seen, echoes(actions)) == [
        Change("Pod", "a-worker-0", "MODIFIED"),
        Change("Pod", "a-worker-3", "DELETED"),
    ]


def test_echoes_during_and_after_a_run_cost_no_extra_reconcile():
    created = result(
        "a",
        status={"conditions": []},
        actions=[
            {"action": "create", "kind": "Pod", "name": "a-worker-0"},
            {"action": "create", "kind": "Secret", "name": "a-ssh"},
        ],
    )

    class EchoingRunner(FakeRunner):
        def run(self, keys):
            c.enqueue(A, Change("Pod", "a-worker-0", "ADDED"))  # arrives while the run is in flight
            return super().run(keys)

    c, q, _ = controller({})
    runner = EchoingRunner({A: created})
    q.add(A)
    c.run_batch(runner, q.take_ready(10))
    assert q.depth() == 0
    c.enqueue(A, Change("Secret", "a-ssh", "ADDED"))  # arrives just after the run
    assert q.depth() == 0
    c.enqueue(A, Change("Pod", "a-worker-0", "MODIFIED"))  # the pod starts: that is news
    assert q.depth() == 1


def test_an_unexplained_event_during_a_run_requeues_the_job_once():
    class BusyRunner(FakeRunner):
        def run(self, keys):
            c.enqueue(A, Change("Pod", "a-worker-1", "MODIFIED"))
            c.enqueue(A, Change("Pod", "a-worker-1", "DELETED"))
            return super().run(keys)

    c, q, _ = controller({})
    q.add(A)
    c.run_batch(BusyRunner({A: result("a", status={})}), q.take_ready(10))
    assert [k for k, _ in q.take_ready(10)] == [A]


def test_metrics_count_the_transitions_the_module_wrote_not_the_conditions_it_returned():
    """A condition True in the returned status (however fresh its lastTransitionTime) is not news: only a transition
    is counted, e.g. not the status another controller (MultiKueue) wrote, nor a write that did not happen."""
    seen = result("a", uid="u1", status={"conditions": [cond("Created"), cond("Succeeded")]}, finished=True)
    c, q, m = controller({})
    q.add(A)
    c.run_batch(FakeRunner({A: seen}), q.take_ready(10))
    assert value(m, "mpi_operator_jobs_created_total") == value(m, "mpi_operator_jobs_successful_total") == 0
    done = result(
        "a",
        uid="u1",
        status=seen.status,
        finished=True,
        transitions=[Transition("Running", "False", "MPIJobRunning"), *became_true("Succeeded")],
    )
    q.add(A)
    c.run_batch(FakeRunner({A: done}), q.take_ready(10))
    assert value(m, "mpi_operator_jobs_successful_total") == 1 and value(m, "mpi_operator_jobs_created_total") == 0


def test_a_finished_jobs_cleanup_is_expected_by_what_the_module_decided():
    """The echoes of a cleanup (pods going) follow the module's `finished`, not a reading of the conditions."""
    cleanup = [{"action": "delete", "kind": "Pod", "name": "a-worker-0"}]
    c, q, _ = controller({})
    q.add(A)
    c.run_batch(
        FakeRunner({A: result("a", status={"conditions": []}, actions=cleanup, finished=True)}), q.take_ready(10)
    )
    c.enqueue(A, Change("Pod", "a-worker-0", "MODIFIED"))
    c.enqueue(A, Change("Pod", "a-worker-0", "DELETED"))
    assert q.depth() == 0


def test_a_job_that_waits_to_run_is_in_the_waiting_gauge_until_it_runs_or_goes(monkeypatch):
    c, _, m = controller({})
    waiting = "mpi_operator_job_waiting_since_seconds"
    created = cond("Created", "2030-01-01T00:00:00Z")
    c.record(result("a", status={"conditions": [created], "phase": "Created"}))  # our kubeflow.org status has a phase
    assert value(m, waiting, namespace="ns", mpijob="a") == 1893456000  # 2030-01-01T00:00:00Z
    c.record(result("a", status={"conditions": [created, cond("Running", "2030-01-01T00:05:00Z")]}))
    assert value(m, waiting, namespace="ns", mpijob="a") is None
    # Suspended, then resumed: it waits again, counted from the resume.
    suspended = cond("Suspended", "2030-01-01T00:10:00Z")
    c.record(result("a", status={"conditions": [created, suspended]}))
    assert value(m, waiting, namespace="ns", mpijob="a") is None
    resumed = {**suspended, "status": "False", "lastTransitionTime": "2030-01-01T01:00:00Z"}
    c.record(result("a", status={"conditions": [created, resumed]}))
    assert value(m, waiting, namespace="ns", mpijob="a") == 1893456000 + 3600
    c.record(result("a", status={"conditions": [created, resumed, cond("Failed")]}))
    assert value(m, waiting, namespace="ns", mpijob="a") is None
    # A phase without conditions (T9k, bdap): from this replica's first sight, kept while it stays Pending.
    monkeypatch.setattr("mpijob_operator.controller.time.time", lambda: 1000.0)
    t9k = "batch.tensorstack.dev/v1beta1"
    c.record(result("b", status={"phase": "Pending"}, api_version=t9k))
    monkeypatch.setattr("mpijob_operator.controller.time.time", lambda: 2000.0)
    c.record(result("b", status={"phase": "Pending"}, api_version=t9k))
    assert value(m, waiting, namespace="ns", mpijob="b") == 1000.0
    c.record(result("b", outcome=Outcome.DELETED))
    assert value(m, waiting, namespace="ns", mpijob="b") is None
    # A bad time someone else wrote costs the job its time, not the operator its loop.
    c.record(result("c", status={"conditions": [{**created, "lastTransitionTime": "yesterday"}]}))
    assert value(m, waiting, namespace="ns", mpijob="c") is None


def test_labelled_counters_start_at_zero_so_a_rate_sees_their_first_event():
    m = Metrics(CollectorRegistry())
    assert value(m, "mpi_operator_reconciles_total", result="error") == 0
    assert value(m, "mpi_operator_runner_runs_total", status="failed") == 0
    assert value(m, "mpi_operator_runner_starts_total", kind="cold") == 0


def test_restarts_are_counted_by_cause_and_scope():
    """mpi_operator_job_restarts_total: one per restart whose status the module wrote, exported at 0 from the start."""
    c, _q, m = controller({})
    for cause in ("program", "disruption"):
        for scope in ("world", "worker"):
            assert value(m, "mpi_operator_job_restarts_total", cause=cause, scope=scope) == 0
    st = {"conditions": [cond("Created")], "restartCount": 1}
    c.record(result("a", uid="u1", status=st, restart={"cause": "disruption", "scope": "world"}))
    c.record(result("a", uid="u1", status=st, restart={"cause": "program", "scope": "worker"}))
    c.record(result("a", uid="u1", status=st))  # no restart written in this pass
    assert value(m, "mpi_operator_job_restarts_total", cause="disruption", scope="world") == 1
    assert value(m, "mpi_operator_job_restarts_total", cause="program", scope="worker") == 1
    assert value(m, "mpi_operator_job_restarts_total", cause="program", scope="world") == 0


def test_a_job_whose_world_restarts_waits_from_the_restart_not_from_its_creation():
    """A training of days restarted by its failure policy: the waiting gauge (and MPIJobWaitingTooLong) count from the
    restart, on every API."""
    c, _, m = controller({})
    waiting = "mpi_operator_job_waiting_since_seconds"
    created = cond("Created", "2030-01-01T00:00:00Z")
    restarting = cond("Restarting", "2030-01-03T00:00:00Z")
    c.record(result("a", status={"conditions": [created, restarting], "phase": "Restarting"}))
    assert value(m, waiting, namespace="ns", mpijob="a") == 1893456000 + 2 * 86400
    stopped = {**cond("Running", "2030-01-03T00:00:00Z"), "status": "False"}
    t9k = "batch.tensorstack.dev/v1beta1"
    status = {"conditions": [cond("Initialized", "2030-01-01T00:00:00Z"), stopped], "phase": "Pending"}
    c.record(result("b", status=status, api_version=t9k))
    assert value(m, waiting, namespace="ns", mpijob="b") == 1893456000 + 2 * 86400


def test_the_heap_is_trimmed_after_a_batch_at_most_once_per_trim_every(monkeypatch):
    import mpijob_operator.controller as controller_module

    trims, clock = [], [100.0]
    monkeypatch.setattr(controller_module, "trim_heap", lambda: trims.append(clock[0]))
    monkeypatch.setattr(controller_module.time, "monotonic", lambda: clock[0])
    c, q, _m = controller({})
    runner = FakeRunner({A: result("a")})
    for step in (0.0, 0.5, 1.0, controller_module.TRIM_EVERY):
        clock[0] += step
        q.add(A)
        c.run_batch(runner, q.take_ready(10))
    assert trims == [100.0, 101.5 + controller_module.TRIM_EVERY]
