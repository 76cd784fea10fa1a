"""playbooks/submit.yml as users run it (ansible-playbook, variables on the command line) against the local cluster,
with the real operator driving the jobs on simulated (kwok) nodes."""

from __future__ import annotations

import contextlib
import pathlib
import re
import subprocess
import sys
import time

import pytest
import yaml

from tests.integration._fixtures.submit import SUBMIT_EXAMPLES, example_manifest, mark_succeeded
from tests.support.ansible import ansible_env, tool
from tests.support.mpijob import get_mpijob, has_condition
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration]

SUBMIT = "Submit the MPIJob"


def progress_lines(stdout: str) -> list[str]:
    return re.findall(r"^MPIJob progress: (\S+: \w+, workers \d+/\d+ running.*? elapsed.*)$", stdout, re.M)


def test_submit_a_file_waits_with_progress_and_rerun_changes_nothing(
    submit_playbook, running_operator, api_client, namespace
):
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
    run = submit_playbook(
        mpijob_src=str(SUBMIT_EXAMPLES / "local/failing.yaml"), mpijob_namespace=namespace, mpijob_poll_interval=1
    )
    assert run.rc != 0
    assert "Fail because the MPIJob failed" in run.failed
    msg = run["Fail because the MPIJob failed"]["msg"]
    assert msg.startswith(f"MPIJob {namespace}/failing failed: BackoffLimitExceeded"), msg
    assert re.search(r"launcher pod failing-launcher-\w+: Error, exit code 3", msg), msg


def test_check_mode_then_short_form_then_absent(submit_playbook, running_operator, api_client, namespace):
    short = {
        "mpijob_name": "hello",
        "mpijob_namespace": namespace,
        "mpijob_image": "localhost/mpi-openmpi4:local",
        "mpijob_command": ["mpirun", "-n", "2", "/opt/mpi/hostnames"],
        "mpijob_workers": 2,
    }
    preview = submit_playbook(check=True, **short)
    assert preview.rc == 0 and SUBMIT in preview.changed, preview.stdout[-4000:]
    assert "Wait until Succeeded" not in preview.results  # nothing to wait for in a preview
    assert get_mpijob(api_client, namespace, "hello") is None

    run = submit_playbook(mpijob_wait_for="Running", **short)
    assert run.rc == 0, run.stdout[-4000:]
    assert run[SUBMIT]["result"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2

    gone = submit_playbook(mpijob_name="hello", mpijob_namespace=namespace, mpijob_state="absent")
    assert gone.rc == 0 and SUBMIT in gone.changed, gone.stdout[-4000:]
    assert get_mpijob(api_client, namespace, "hello") is None


def _tree_rss_kib(pid: int) -> int:
    """Resident memory of a process and its descendants (ansible-playbook forks a worker per task)."""
    children: dict[int, list[int]] = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        with contextlib.suppress(OSError):
            for line in pathlib.Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def test_a_wait_of_thousands_of_polls_completes_printing_progress(
    kubeconfig, operator_crd, api_client, namespace, tmp_path
):
    """The wait is one loop, not an include per poll (which died with 'maximum recursion depth exceeded' after about
    246 rounds): 2,000 polls and more, a progress line each, memory flat, then the job succeeds and the play ends 0.
    The job is managed by "another controller" (managedBy: MultiKueue, so no operator touches it): this test is that
    controller and writes its status."""
    polls = 2000
    job = example_manifest("local/pi.yaml", namespace=namespace, name="long")
    job["spec"].setdefault("runPolicy", {})["managedBy"] = "kueue.x-k8s.io/multikueue"
    src = tmp_path / "long.yaml"
    src.write_text(yaml.safe_dump(job))
    env = ansible_env(kubeconfig, PYTHONUNBUFFERED="1")
    cmd = [
        tool("ansible-playbook"),
        str(ROOT / "playbooks/submit.yml"),
        "-e",
        f"mpijob_src={src}",
        "-e",
        "mpijob_poll_interval=0.001",
        "-e",
        "mpijob_wait_timeout=600",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
    ]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    progress, rss, out = 0, {}, []
    for line in proc.stdout:
        out.append(line)
        if not line.startswith(f"MPIJob progress: {namespace}/long: "):
            continue
        progress += 1
        if progress in (200, polls):
            rss[progress] = _tree_rss_kib(proc.pid)
        if progress == polls:
            mark_succeeded(api_client, namespace, "long")
    rc = proc.wait(timeout=60)
    text = "".join(out)
    assert rc == 0, text[-4000:]
    assert progress > polls, text[-4000:]
    last = [line for line in out if line.startswith("MPIJob progress:")][-1]
    assert re.match(
        rf"MPIJob progress: {namespace}/long: Succeeded, workers 0/\d+ running, \d+s elapsed "
        r"\(waited \d+s of 600s\)",
        last,
    ), last
    assert "recursion" not in text
    assert rss[polls] - rss[200] < 20 * 1024, rss  # KiB: the memory of the wait does not grow with its length
    assert time.monotonic() - started < 120
