"""mpi.operator.mpijob_sync as a GitOps runner uses it: a real git repository of MPIJob manifests, pulled and run by
`ansible-pull` against the local cluster, with the real operator driving the jobs on simulated (kwok) nodes. Each
commit changes the repository the way a team does (a job added, one edited, one removed, one broken) and the cluster
follows; what may not be lost (a running job, the other jobs when one file is broken) is not."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import yaml

from hack.lib.wait import wait_until
from tests.integration._fixtures.submit import example_manifest
from tests.support.ansible import PlaybookRun, ansible_env, tool
from tests.support.mpijob import create_mpijob, get_mpijob

pytestmark = [pytest.mark.integration]

OUTCOME = "kwok.mpi.operator/outcome"  # docs/dev/local-cluster.md: how a simulated pod ends
SOURCE = "research-jobs"
SITE = """\
# The GitOps run: ansible-pull checks this repository out and runs this playbook on the machine it runs on.
- name: The cluster follows jobs/
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Sync jobs/ as one set
      mpi.operator.mpijob_sync:
        source: {source}
        src: jobs/
        namespace: "{{{{ sync_namespace }}}}"
        prune_unfinished: "{{{{ sync_prune_unfinished | default(false) }}}}"
      register: sync

    - name: The plan
      ansible.builtin.debug:
        msg: "PLAN {{{{ sync.summary }}}}"
"""


def job(name: str, *, running: bool = False, workers: int = 1) -> dict:
    body = example_manifest("local/pi.yaml", name=name)
    specs = body["spec"]["mpiReplicaSpecs"]
    specs["Worker"]["replicas"] = workers
    if running:  # the simulated launcher keeps running instead of succeeding in 2 s
        specs["Launcher"]["template"]["metadata"] = {"annotations": {OUTCOME: "run"}}
    return body


class Repo:
    """A git repository with jobs/ and site.yml, committed to like a team's."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        (path / "jobs").mkdir(parents=True)
        (path / "site.yml").write_text(SITE.format(source=SOURCE))
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> None:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "ci",
            "GIT_AUTHOR_EMAIL": "ci@example.com",
            "GIT_COMMITTER_NAME": "ci",
            "GIT_COMMITTER_EMAIL": "ci@example.com",
        }
        subprocess.run(["git", "-C", str(self.path), *args], check=True, env=env, capture_output=True, text=True)

    def write(self, name: str, body: dict | str) -> None:
        text = body if isinstance(body, str) else yaml.safe_dump(body, sort_keys=False)
        (self.path / "jobs" / name).write_text(text)

    def remove(self, name: str) -> None:
        self.git("rm", "-q", f"jobs/{name}")

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)


def pull(repo: Repo, kubeconfig: str, namespace: str, checkout: pathlib.Path, *args: str) -> PlaybookRun:
    """ansible-pull from the repository's URL, as a cron job or a systemd timer runs it."""
    cmd = [
        tool("ansible-pull"),
        "-U",
        f"file://{repo.path}",
        "-C",
        "main",
        "-d",
        str(checkout),
        "-i",
        "localhost,",
        "-e",
        f"sync_namespace={namespace}",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        *args,
        "site.yml",
    ]
    proc = subprocess.run(
        cmd, cwd=checkout.parent, env=ansible_env(kubeconfig), capture_output=True, text=True, timeout=600, check=False
    )
    return PlaybookRun(cmd, proc.returncode, proc.stdout + proc.stderr)


def plan_line(run: PlaybookRun) -> str:
    lines = [line for line in run.output.splitlines() if "PLAN " in line or "create " in line]
    assert lines, run.output[-6000:]
    return lines[-1]


def phase(api_client, namespace: str, name: str) -> str | None:
    job = get_mpijob(api_client, namespace, name)
    if job is None:
        return None
    true = [c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return true[-1] if true else "Pending"


def test_ansible_pull_from_git_follows_commits_prunes_finished_jobs_and_reports_the_broken_file(
    running_operator, api_client, kubeconfig, namespace, tmp_path
):
    repo, checkout = Repo(tmp_path / "repo"), tmp_path / "checkout"
    repo.write("done.yaml", job("done"))
    repo.write("running.yaml", job("running", running=True))
    repo.write("edited.yaml", job("edited", running=True))
    repo.commit("three jobs")

    first = pull(repo, kubeconfig, namespace, checkout).expect_ok()
    assert "create 3, update 0, prune 0, unchanged 0, kept 0, conflict 0, invalid 0" in plan_line(first)
    for name in ("done", "running", "edited"):
        labels = get_mpijob(api_client, namespace, name)["metadata"]["labels"]
        assert labels["mpi.operator/sync-source"] == SOURCE
    wait_until(lambda: phase(api_client, namespace, "done") == "Succeeded", 90, what="done Succeeded")
    wait_until(lambda: phase(api_client, namespace, "running") == "Running", 90, what="running Running")

    # A job the sync never made: same namespace, no label. It is never pruned.
    by_hand = job("by-hand")
    by_hand["metadata"]["namespace"] = namespace
    create_mpijob(api_client, namespace, by_hand)

    repo.remove("done.yaml")
    repo.remove("running.yaml")
    repo.write("edited.yaml", job("edited", running=True, workers=2))
    repo.write("new.yaml", job("new"))
    broken = job("broken")
    broken["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "request": {"cpu": "1"}
    }  # a typo: requests
    repo.write("broken.yaml", broken)
    repo.commit("one added, one edited, two removed, one broken")

    preview = pull(repo, kubeconfig, namespace, checkout, "--check", "--diff")
    print("\n--- check-mode plan of the second commit ---\n" + preview.output)
    assert preview.returncode != 0 and "jobs/broken.yaml" in preview.output
    assert "create 1, update 1, prune 1, unchanged 0, kept 1, conflict 0, invalid 1" in preview.output
    assert get_mpijob(api_client, namespace, "new") is None and get_mpijob(api_client, namespace, "done") is not None
    assert get_mpijob(api_client, namespace, "edited")["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 1

    second = pull(repo, kubeconfig, namespace, checkout)
    assert second.returncode != 0, second.output[-6000:]
    assert "create 1, update 1, prune 1, unchanged 0, kept 1, conflict 0, invalid 1" in second.output
    refused = [
        line
        for line in second.output.splitlines()
        if "jobs/broken.yaml: applying MPIJob " in line and "the API server rejected the MPIJob" in line
    ]
    assert refused and "unknown field" in refused[0] and "resources.request" in refused[0], second.output
    assert "not finished (Running); prune_unfinished: true prunes it" in second.output
    assert get_mpijob(api_client, namespace, "new") is not None
    assert get_mpijob(api_client, namespace, "edited")["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    wait_until(lambda: get_mpijob(api_client, namespace, "done") is None, 60, what="done pruned")
    assert phase(api_client, namespace, "running") == "Running"
    assert get_mpijob(api_client, namespace, "by-hand") is not None

    # The same commit again: nothing changes (the broken file still fails the run, naming itself).
    again = pull(repo, kubeconfig, namespace, checkout)
    assert again.returncode != 0 and again.recap["changed"] == 0, again.output[-6000:]
    assert "create 0, update 0, prune 0, unchanged 2, kept 1, conflict 0, invalid 1" in again.output

    broken["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "100m"}
    }
    repo.write("broken.yaml", broken)
    repo.commit("typo fixed")
    fixed = pull(repo, kubeconfig, namespace, checkout).expect_ok()
    assert "create 1, update 0, prune 0, unchanged 2, kept 1, conflict 0, invalid 0" in plan_line(fixed)

    # The running job goes only when the run says so.
    pruned = pull(repo, kubeconfig, namespace, checkout, "-e", "sync_prune_unfinished=true").expect_ok()
    assert "create 0, update 0, prune 1, unchanged 3, kept 0, conflict 0, invalid 0" in plan_line(pruned)
    wait_until(lambda: get_mpijob(api_client, namespace, "running") is None, 60, what="running pruned")

    pull(repo, kubeconfig, namespace, checkout).expect_unchanged()
    assert get_mpijob(api_client, namespace, "by-hand") is not None


def test_a_set_waited_for_reports_its_failed_job_and_a_conflict_and_another_source_is_left_alone(
    ansible_play, running_operator, api_client, kubectl, namespace, tmp_path
):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    failing = job("fails")
    failing["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"] = {"annotations": {OUTCOME: "fail"}}
    failing["spec"]["runPolicy"]["backoffLimit"] = 0
    (jobs / "two.yaml").write_text(yaml.safe_dump_all([job("ok"), failing], sort_keys=False))

    def sync(source: str = SOURCE, **options) -> dict:
        """The task's result, with `failed` as the play saw it."""
        task = {
            "name": "sync",
            "register": "r",
            "ignore_errors": True,
            "mpi.operator.mpijob_sync": {
                "source": source,
                "src": [str(jobs)],
                "namespace": namespace,
                "wait_sleep": 1,
                **options,
            },
        }
        run = ansible_play([task])
        return {**run["sync"], "failed": "sync" in run.failed}

    r = sync(wait=True, wait_timeout=120)
    assert r["failed"], {k: r.get(k) for k in ("msg", "progress", "jobs", "summary")}
    assert r["progress"] == "2 jobs: 1 Succeeded, 1 Failed" or r["progress"] == "2 jobs: 1 Failed, 1 Succeeded"
    assert f"MPIJob {namespace}/fails failed: " in r["msg"] and r["summary"].startswith("create 2,")
    assert {j["name"]: j["phase"] for j in r["jobs"]} == {"ok": "Succeeded", "fails": "Failed"}

    # kubectl scale takes the workers of ok: the file's value is now a conflict, reported for that file only
    assert kubectl("scale", "-n", namespace, "mpijobs.kubeflow.org/ok", "--replicas=3").returncode == 0
    ok = job("ok")
    ok["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    (jobs / "two.yaml").write_text(yaml.safe_dump_all([ok, failing], sort_keys=False))
    r = sync()
    assert r["failed"] and r["summary"] == "create 0, update 0, prune 0, unchanged 1, kept 0, conflict 1, invalid 0"
    (conflict,) = r["plan"]["conflicts"]
    assert conflict["job"] == f"{namespace}/ok" and "kubectl" in conflict["message"], conflict
    assert [f["result"] for f in r["files"]] == ["conflict"]
    r = sync(force_conflicts=True)
    assert not r["failed"] and r["changed"] and r["plan"]["updated"] == [f"{namespace}/ok"], r

    # Another source with an empty directory: it owns none of these jobs, so it prunes none.
    (tmp_path / "empty").mkdir()
    r = ansible_play(
        [
            {
                "name": "sync",
                "register": "r",
                "mpi.operator.mpijob_sync": {
                    "source": "someone-else",
                    "src": [str(tmp_path / "empty")],
                    "namespace": namespace,
                    "allow_empty": True,
                },
            }
        ]
    )["sync"]
    assert not r["changed"] and r["summary"].startswith("create 0, update 0, prune 0"), r
    # This source's directory emptied by mistake: nothing is pruned without allow_empty, and the task says why.
    (jobs / "two.yaml").unlink()
    r = sync()
    assert not r["changed"] and [k["job"] for k in r["plan"]["kept"]] == [f"{namespace}/fails", f"{namespace}/ok"]
    assert "declares no MPIJob at all" in r["plan"]["kept"][0]["why"]
    assert get_mpijob(api_client, namespace, "ok") is not None
