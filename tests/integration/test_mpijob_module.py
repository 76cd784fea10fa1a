"""mpi.operator.mpijob and mpijob_info as users run them (ansible-playbook) against the local cluster, with the real
operator process driving the jobs on simulated (kwok) nodes."""

from __future__ import annotations

import time

import pytest

from hack.lib.wait import wait_until
from tests.integration._fixtures.submit import example_manifest, mark_succeeded
from tests.support.ansible import task_started
from tests.support.mpijob import children, expected_children, get_mpijob, patch_mpijob, wait_event_reasons

pytestmark = [pytest.mark.integration]

OUTCOME = "kwok.mpi.operator/outcome"  # docs/dev/local-cluster.md: how a simulated pod ends


def mpijob(task: str = "submit", /, **params):
    """A task of the mpijob module; failures are kept (ignore_errors) so each test asserts on them."""
    return {"name": task, "mpi.operator.mpijob": params, "register": "r", "ignore_errors": True}


def short_form(namespace: str, name: str = "pi", **extra):
    return {
        "name": name,
        "namespace": namespace,
        "image": "localhost/mpi-openmpi4:local",
        "command": "mpirun -n 2 /opt/mpi/pi",
        **extra,
    }


def long_running(namespace: str, name: str, workers: int = 2) -> dict:
    """local/pi.yaml with a launcher that keeps running on the simulated nodes (instead of succeeding in 2 s)."""
    definition = example_manifest("local/pi.yaml", namespace=namespace, name=name)
    specs = definition["spec"]["mpiReplicaSpecs"]
    specs["Worker"]["replicas"] = workers
    specs["Launcher"]["template"]["metadata"] = {"annotations": {OUTCOME: "run"}}
    return definition


def workers_of(api_client, namespace: str, name: str) -> list[str]:
    return children(api_client, namespace, name)["Worker"]


def test_submit_wait_succeeded_then_rerun_is_unchanged(ansible_play, running_operator, api_client, namespace):
    definition = example_manifest("local/pi.yaml", namespace=namespace)
    started = time.monotonic()
    run = ansible_play([mpijob(definition=definition, wait=True, wait_timeout=120)])
    took = time.monotonic() - started
    r = run["submit"]
    assert "submit" not in run.failed, r.get("msg")
    assert r["changed"] and r["method"] == "created"
    assert r["summary"]["phase"] == "Succeeded" and r["summary"]["finished"]
    assert {c["type"] for c in r["conditions"]} >= {"Created", "Succeeded"}
    assert r["result"]["metadata"]["name"] == "pi"
    # simulated pods have no log: empty, and the note says why instead of failing the task
    assert r["launcher_log"] or r["launcher_log_note"]
    assert took < 60, f"submit and wait took {took:.1f}s"

    again = ansible_play(
        [
            mpijob(definition=definition),
            mpijob("short form", **short_form(namespace, "pi-short")),
            mpijob("short form again", **short_form(namespace, "pi-short")),
        ],
        diff=True,
    )
    assert not again["submit"]["changed"] and again["submit"]["method"] == "unchanged"
    assert "diff" not in again["submit"]
    assert again["short form"]["changed"] and not again["short form again"]["changed"]


def test_failing_job_fails_the_task_with_the_launchers_reason(ansible_play, running_operator, namespace):
    definition = example_manifest("local/failing.yaml", namespace=namespace)
    run = ansible_play(
        [
            mpijob(definition=definition, wait=True, wait_timeout=120),
            mpijob("tolerated", definition=definition, wait=True, wait_timeout=120, fail_on_job_failure=False),
        ]
    )
    assert "submit" in run.failed
    msg = run["submit"]["msg"]
    assert msg.startswith(f"MPIJob {namespace}/failing failed: BackoffLimitExceeded"), msg
    assert "launcher log" in msg  # the tail, or the note why there is none
    assert run["submit"]["summary"]["phase"] == "Failed"
    assert "tolerated" not in run.failed and run["tolerated"]["summary"]["phase"] == "Failed"
    assert not run["tolerated"]["changed"]


def test_running_job_scaled_suspended_resumed_and_deleted(ansible_play, running_operator, api_client, namespace):
    """One long-running job through the verbs users apply to it (one operator start instead of four)."""
    run = ansible_play(
        [mpijob(definition=long_running(namespace, "elastic"), wait=True, wait_for="Running", wait_timeout=60)]
    )
    assert run["submit"]["summary"]["phase"] == "Running", run["submit"].get("msg")
    assert run["submit"]["summary"]["workers_running"] == 2
    assert {
        k: v for k, v in children(api_client, namespace, "elastic").items() if k != "LauncherPod"
    } == expected_children("elastic", 2)

    # scale from 2 to 3 workers: only that field is patched
    run = ansible_play(
        [
            mpijob("scale", name="elastic", namespace=namespace, workers=3),
            mpijob("scale again", name="elastic", namespace=namespace, workers=3),
        ]
    )
    assert run["scale"]["changed"] and run["scale"]["method"] == "patched", run["scale"].get("msg")
    assert run["scale"]["result"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    assert not run["scale again"]["changed"]
    three = [f"elastic-worker-{i}" for i in range(3)]
    wait_until(lambda: workers_of(api_client, namespace, "elastic") == three, 30, what="a third worker")
    after = get_mpijob(api_client, namespace, "elastic")
    assert after["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"]["annotations"] == {OUTCOME: "run"}

    # suspend: the workers go away; resume: they come back
    run = ansible_play(
        [mpijob("suspend", name="elastic", namespace=namespace, suspend=True, wait=True, wait_timeout=60)]
    )
    assert run["suspend"]["changed"] and run["suspend"]["summary"]["phase"] == "Suspended", run["suspend"].get("msg")
    wait_until(lambda: workers_of(api_client, namespace, "elastic") == [], 30, what="workers deleted while suspended")
    run = ansible_play(
        [
            mpijob(
                "resume",
                name="elastic",
                namespace=namespace,
                suspend=False,
                wait=True,
                wait_for="Running",
                wait_timeout=60,
            )
        ]
    )
    assert run["resume"]["changed"] and run["resume"]["summary"]["phase"] == "Running", run["resume"].get("msg")
    assert not run["resume"]["summary"]["suspended"]
    wait_until(lambda: workers_of(api_client, namespace, "elastic") == three, 30, what="workers back after resume")

    # absent: the job and every child are gone
    run = ansible_play(
        [
            mpijob("delete", name="elastic", namespace=namespace, state="absent", wait=True, wait_timeout=60),
            mpijob("delete again", name="elastic", namespace=namespace, state="absent"),
        ]
    )
    assert run["delete"]["changed"] and run["delete"]["method"] == "deleted", run["delete"].get("msg")
    assert not run["delete again"]["changed"]
    assert get_mpijob(api_client, namespace, "elastic") is None
    wait_until(lambda: not any(children(api_client, namespace, "elastic").values()), 30, what="every child deleted")


def test_check_mode_changes_nothing(ansible_play, operator_crd, api_client, namespace):
    job = short_form(namespace, "dry", workers=2)
    run = ansible_play([mpijob(**job)], check=True, diff=True)
    r = run["submit"]
    assert (
        r["changed"] and r["method"] == "created" and r["result"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    )
    assert r["diff"]["before"] == {} and r["diff"]["after"]["metadata"]["name"] == "dry"
    assert get_mpijob(api_client, namespace, "dry") is None

    ansible_play([mpijob(**job)])
    before = get_mpijob(api_client, namespace, "dry")
    run = ansible_play(
        [
            mpijob("scale", name="dry", namespace=namespace, workers=5),
            mpijob("resubmit bigger", **{**job, "workers": 4}),
            mpijob("delete", name="dry", namespace=namespace, state="absent"),
        ],
        check=True,
        diff=True,
    )
    assert all(run[t]["changed"] for t in ("scale", "resubmit bigger", "delete")), run.stdout[-3000:]
    diff = run["resubmit bigger"]["diff"]
    assert diff["before"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert diff["after"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 4
    after = get_mpijob(api_client, namespace, "dry")
    assert after is not None and not after["metadata"].get("deletionTimestamp")
    # the operator writes status meanwhile; the spec is what check mode must not touch
    assert (after["spec"], after["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])


def test_typo_in_the_manifest_is_rejected_naming_the_field(ansible_play, operator_crd, namespace):
    definition = example_manifest("v1/openmpi-helloworld.yaml", namespace=namespace)
    launcher = definition["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["resources"]["request"] = launcher["resources"].pop("requests")  # the install guide's typo
    run = ansible_play([mpijob(definition=definition)])
    assert "submit" in run.failed
    msg = run["submit"]["msg"]
    assert "unknown field" in msg and 'containers[name="openmpi-helloworld"].resources.request' in msg, msg


def test_v1_manifest_runs_and_info_reports_it(ansible_play, running_operator, api_client, namespace):
    definition = example_manifest("local/openmpi-helloworld.yaml", namespace=namespace, labels={"team": "ml"})
    submitted = ansible_play([mpijob(definition=definition, wait=True, wait_timeout=120)])
    assert submitted["submit"]["summary"]["phase"] == "Succeeded", submitted["submit"].get("msg")
    # The operator writes a job's events after its status: the wait may end in between.
    wait_event_reasons(api_client, namespace, "openmpi-helloworld", lambda r: {"MPIJobCreated", "MPIJobSucceeded"} <= r)
    run = ansible_play(
        [
            {
                "name": "info",
                "mpi.operator.mpijob_info": {
                    "namespace": namespace,
                    "label_selectors": ["team=ml"],
                    "launcher_log": "tail",
                    "events": True,
                },
                "register": "i",
            },
            {"name": "missing", "mpi.operator.mpijob_info": {"namespace": namespace, "name": "nope"}, "register": "m"},
        ]
    )
    assert submitted["submit"]["result"]["apiVersion"] == "kubeflow.org/v1"
    jobs = run["info"]["jobs"]
    assert [j["summary"]["name"] for j in jobs] == ["openmpi-helloworld"]
    assert jobs[0]["summary"]["phase"] == "Succeeded" and not run["info"]["changed"]
    assert {"MPIJobCreated", "MPIJobSucceeded"} <= {e["reason"] for e in jobs[0]["events"]}
    assert jobs[0]["launcher_log"] or jobs[0]["launcher_log_note"]
    assert run["missing"]["jobs"] == []


def test_drift_is_a_diff_in_check_mode_and_a_conflict_otherwise(ansible_play, operator_crd, api_client, namespace):
    definition = example_manifest("local/pi.yaml", namespace=namespace)
    assert ansible_play([mpijob(definition=definition)])["submit"]["changed"]
    # someone scales the job by hand: the cluster no longer matches the manifest
    patch_mpijob(api_client, namespace, "pi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}})

    run = ansible_play([mpijob("preview", definition=definition)], check=True, diff=True)
    preview = run["preview"]
    assert "preview" not in run.failed and preview["changed"]
    assert preview["diff"]["before"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    assert preview["diff"]["after"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert any("conflict" in w and "Worker.replicas" in w for w in preview.get("warnings", [])), preview

    run = ansible_play(
        [mpijob("apply", definition=definition), mpijob("force", definition=definition, force_conflicts=True)]
    )
    assert "apply" in run.failed
    assert "conflict" in run["apply"]["msg"] and ".spec.mpiReplicaSpecs.Worker.replicas" in run["apply"]["msg"]
    assert "force_conflicts: true" in run["apply"]["msg"]
    assert run["force"]["changed"] and run["force"]["result"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert get_mpijob(api_client, namespace, "pi")["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2

    # `force`, the old name, still takes the field back, with a deprecation warning naming its replacement.
    patch_mpijob(api_client, namespace, "pi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}})
    old = ansible_play([mpijob("old name", definition=definition, force=True)])["old name"]
    assert old["changed"] and old["result"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert any(d["msg"].startswith("Param 'force' is deprecated") for d in old.get("deprecations", [])), old


def test_field_manager_names_the_applier(ansible_play, operator_crd, api_client, namespace):
    definition = example_manifest("local/pi.yaml", namespace=namespace)
    run = ansible_play([mpijob(definition=definition, field_manager="team-a-ci")])
    assert "submit" not in run.failed, run["submit"]
    managers = {
        m["manager"]: m["operation"] for m in get_mpijob(api_client, namespace, "pi")["metadata"]["managedFields"]
    }
    assert managers.get("team-a-ci") == "Apply" and "mpi.operator" not in managers, managers


def test_a_job_deleted_while_waited_for_fails_the_wait_at_once(
    ansible_play, operator_crd, api_client, namespace, tmp_path
):
    """Both waits (the mpijob module's and mpijob_wait) end as soon as the job is gone, naming it, instead of polling
    a missing job until the timeout. No operator: the job is managed by "another controller" and never finishes."""
    import threading

    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    definition = example_manifest("local/pi.yaml", namespace=namespace, name="doomed")
    definition["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}

    def delete_soon(name: str, task: str) -> threading.Thread:
        """Deletes the job once it exists and the waiting task has started, and has had time to look a few times
        (wait_sleep 1 and 0.5: the waits look every second or more often)."""

        def run() -> None:
            wait_until(lambda: get_mpijob(api_client, namespace, name), 60, what=f"{name} created")
            wait_until(lambda: task_started(tmp_path, task), 60, what=f"task {task!r} started")
            time.sleep(4)
            custom.delete_namespaced_custom_object("kubeflow.org", "v2beta1", namespace, "mpijobs", name)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    thread = delete_soon("doomed", "submit")
    started = time.monotonic()
    run = ansible_play([mpijob(definition=definition, wait=True, wait_timeout=300, wait_sleep=1)])
    thread.join(30)
    assert "submit" in run.failed
    assert run["submit"]["msg"] == f"MPIJob {namespace}/doomed was deleted while waiting for it to be Succeeded"
    assert time.monotonic() - started < 60

    definition["metadata"]["name"] = "doomed-too"
    thread = delete_soon("doomed-too", "wait")
    started = time.monotonic()
    run = ansible_play(
        [
            mpijob(definition=definition),
            {
                "name": "wait",
                "mpi.operator.mpijob_wait": {
                    "name": "doomed-too",
                    "namespace": namespace,
                    "wait_sleep": 0.5,
                    "wait_timeout": 300,
                },
                "ignore_errors": True,
            },
        ]
    )
    thread.join(30)
    assert "wait" in run.failed
    assert run["wait"]["msg"] == f"MPIJob {namespace}/doomed-too was deleted while waiting for it to be Succeeded"
    assert run["wait"]["rounds"] >= 2
    assert time.monotonic() - started < 60


def test_suspending_a_finished_job_with_wait_fails_at_once(ansible_play, operator_crd, api_client, namespace):
    """A finished job never becomes Suspended: `suspend: true, wait: true` ends at once, naming why, instead of
    waiting out wait_timeout. The job is managed by "another controller" (this test), which marks it Succeeded."""
    definition = example_manifest("local/pi.yaml", namespace=namespace, name="done")
    definition["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    assert "submit" not in ansible_play([mpijob(definition=definition)]).failed
    mark_succeeded(api_client, namespace, "done")
    started = time.monotonic()
    run = ansible_play([mpijob("suspend", name="done", namespace=namespace, suspend=True, wait=True, wait_timeout=300)])
    assert "suspend" in run.failed
    assert run["suspend"]["msg"] == f"MPIJob {namespace}/done has finished (Succeeded): it will never be Suspended"
    assert time.monotonic() - started < 60
