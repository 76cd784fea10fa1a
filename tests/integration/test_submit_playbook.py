"""playbooks/submit.yml as users run it (ansible-playbook, variables on the command line) against the local cluster,
with the real operator driving the jobs on simulated (kwok) nodes."""
from __future__ import annotations

import re

import pytest

from tests.integration._fixtures.operator import get_mpijob, has_condition
from tests.integration._fixtures.submit import SUBMIT_EXAMPLES

pytestmark = [pytest.mark.cluster]

SUBMIT = "Submit the MPIJob"


def progress_lines(stdout: str) -> list[str]:
    return re.findall(r'"msg": "(\S+: \w+, workers \d+/\d+ running.*? elapsed.*?)"', stdout)


def test_submit_a_file_waits_with_progress_and_rerun_changes_nothing(submit_playbook, running_operator, api_client,
                                                                      namespace):
    pi = str(SUBMIT_EXAMPLES / "local/pi.yaml")
    run = submit_playbook(mpijob_src=pi, mpijob_namespace=namespace, mpijob_poll_interval=1)
    assert run.rc == 0, run.stdout[-4000:]
    assert SUBMIT in run.changed
    lines = progress_lines(run.stdout)
    assert lines and lines[-1].startswith(f"{namespace}/pi: Succeeded, workers "), lines
    assert all("(waited " in line for line in lines[:-1]), lines  # each round says how long it has waited
    assert "Launcher log" in run.results  # printed, even when the simulated pod has none
    assert has_condition(get_mpijob(api_client, namespace, "pi"), "Succeeded")

    again = submit_playbook(mpijob_src=pi, mpijob_namespace=namespace)
    assert again.rc == 0 and SUBMIT not in again.changed, again.stdout[-4000:]


def test_a_failed_job_ends_the_playbook_non_zero_with_the_reason(submit_playbook, running_operator, namespace):
    run = submit_playbook(mpijob_src=str(SUBMIT_EXAMPLES / "local/failing.yaml"), mpijob_namespace=namespace,
                          mpijob_poll_interval=1)
    assert run.rc != 0
    assert "Fail because the MPIJob failed" in run.failed
    msg = run["Fail because the MPIJob failed"]["msg"]
    assert msg.startswith(f"MPIJob {namespace}/failing failed: BackoffLimitExceeded"), msg
    assert re.search(r"launcher pod failing-launcher-\w+: Error, exit code 3", msg), msg


def test_check_mode_then_short_form_then_absent(submit_playbook, running_operator, api_client, namespace):
    short = {"mpijob_name": "hello", "mpijob_namespace": namespace, "mpijob_image": "localhost/mpi-openmpi4:local",
             "mpijob_command": ["mpirun", "-n", "2", "/opt/mpi/hostnames"], "mpijob_workers": 2}
    preview = submit_playbook(check=True, **short)
    assert preview.rc == 0 and SUBMIT in preview.changed, preview.stdout[-4000:]
    assert "Start the clock" not in preview.results  # nothing to wait for in a preview
    assert get_mpijob(api_client, namespace, "hello") is None

    run = submit_playbook(mpijob_wait_for="Running", **short)
    assert run.rc == 0, run.stdout[-4000:]
    assert run[SUBMIT]["result"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2

    gone = submit_playbook(mpijob_name="hello", mpijob_namespace=namespace, mpijob_state="absent")
    assert gone.rc == 0 and SUBMIT in gone.changed, gone.stdout[-4000:]
    assert get_mpijob(api_client, namespace, "hello") is None
