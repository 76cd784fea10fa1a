"""No race at start, on real pods: a job whose workers' sshd starts 60 s late, and one whose workers' image takes 90 s
to pull, each with the launcher's backoffLimit 0, no readinessProbe and the image's own wait for the names bypassed,
Succeed under ours with no launcher restart (the launch gate holds mpirun). The Kubeflow MPI Operator v0.8.2 runs the
same manifests in the same test; what its launchers did is printed beside ours."""

from __future__ import annotations

import time

import pytest
import yaml

from .conftest import MANIFESTS, FinishedJob, Jobs

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e")]

RACES = ("slow-sshd.yaml", "slow-pull.yaml")
TIMEOUT_S = 300.0


def run_together(jobs: Jobs, manifests: tuple[str, ...]) -> list[FinishedJob]:
    """Starts every manifest's job at once, then waits for each."""
    started = time.monotonic()
    names = [jobs.start(yaml.safe_load((MANIFESTS / m).read_text())) for m in manifests]
    return [jobs.wait(version, name, started, TIMEOUT_S) for version, name in names]


def launcher_pods(jobs: Jobs, name: str) -> list:
    selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
    return jobs.core.list_namespaced_pod(jobs.namespace, label_selector=selector).items


def launcher_restarts(jobs: Jobs, name: str) -> int:
    """Launcher pods beyond the first, plus in-place restarts of their containers."""
    pods = launcher_pods(jobs, name)
    restarts = sum(s.restart_count for p in pods for s in p.status.container_statuses or [])
    return max(len(pods) - 1, 0) + restarts


def outcome(done: FinishedJob) -> str:
    for kind in ("Succeeded", "Failed"):
        cond = done.condition(kind)
        if cond:
            return f"{kind} ({cond.get('reason')})"
    return "unfinished"


def last_line(log: str) -> str:
    lines = [line for line in log.splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def test_a_late_sshd_or_a_slow_image_pull_does_not_fail_the_launcher(jobs, kubeflow_peer, record_property):
    ours = run_together(jobs, RACES)
    rows = []
    for manifest, done in zip(RACES, ours, strict=True):
        restarts = launcher_restarts(jobs, done.name)
        (pod,) = launcher_pods(jobs, done.name)
        gate_log = jobs.core.read_namespaced_pod_log(pod.metadata.name, jobs.namespace, container="launch-gate") or ""
        rows.append((manifest, "mpi.operator", outcome(done), restarts, f"{done.seconds:.0f} s", last_line(gate_log)))
        record_property(f"{manifest}_ours_seconds", round(done.seconds, 1))
        assert done.condition("Succeeded"), (manifest, done.job.get("status"), done.launcher_log, gate_log)
        assert restarts == 0, manifest
        assert "pi is approximately 3.14159265" in done.launcher_log, done.launcher_log
        assert "workers answer, after" in gate_log, gate_log
    if isinstance(kubeflow_peer, str):
        rows.append(("both", "Kubeflow v0.8.2", kubeflow_peer, "", "", ""))
    else:
        with kubeflow_peer() as peer_jobs:
            for manifest, done in zip(RACES, run_together(peer_jobs, RACES), strict=True):
                restarts = launcher_restarts(peer_jobs, done.name)
                rows.append(
                    (
                        manifest,
                        "Kubeflow v0.8.2",
                        outcome(done),
                        restarts,
                        f"{done.seconds:.0f} s",
                        last_line(done.launcher_log),
                    )
                )
                record_property(f"{manifest}_kubeflow", outcome(done))
    print(
        "\n| job | operator | outcome | launcher restarts | apply -> finished | the launcher's (ours: the gate's) last line |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
