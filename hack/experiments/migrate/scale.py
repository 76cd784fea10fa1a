"""`make migrate-scale`: the switch from the Kubeflow MPI Operator to ours and back, at scale, on the local cluster.

The Kubeflow operator v0.8.2 installed as its users install it: its release manifest (deploy/v2beta1/mpi-operator.yaml,
its CRD included, in the namespace mpi-operator), the Deployment's image made from the peer binary, its pod on the real
node (the image, the pull policy and the real node's selector and toleration are all that is changed). Under it,
MIGRATE_KWOK_JOBS (100) jobs whose pods kwok runs, in MIGRATE_NAMESPACES (4) namespaces, and MIGRATE_REAL_JOBS (2)
real `mpirun` jobs on the real node (OpenMPI 4, 4 ranks that wait for a file, then compute pi). Then:

1. the preview (`--check --diff`): the plan as the user sees it;
2. the switch to ours (playbooks/migrate.yml, the settings carried from the Kubeflow Deployment, ours' image given);
3. half the kwok jobs and one real job told to finish: they must Succeed under ours;
4. the preview of the way back, then the way back (mpi_operator_migrate_to=kubeflow);
5. the rest told to finish: they must Succeed under Kubeflow's.

After each switch: pods restarted, children recreated (same name, another uid), children gone, jobs lost, statuses
gone backwards (all must be 0), and how long the jobs went unreconciled: from the stopped operator's last pod gone to
each job's first reconcile by the new one (ours: its first status.phase; Kubeflow's: its first "Finished syncing job"
log line). Writes build/migrate-scale/results.json and the plans; prints a table. Needs root (the real node's images)
and the cluster to itself: it replaces the MPIJob CRD with the Kubeflow one for the run, and puts the collection's back.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from hack.lib.images import built_image
from hack.lib.kubeflow import kubeflow_manifest, kubeflow_manifest_path
from hack.lib.migration import (
    PhaseWatch,
    compare,
    create_jobs,
    install_kubeflow,
    job_phase,
    kubeflow_first_syncs,
    kwok_job,
    list_jobs,
    real_job,
    run_migrate,
    snapshot,
    tell_kwok,
    tell_real,
)
from hack.lib.mpijob import install_crd
from hack.lib.paths import ROOT, cache, local_kubeconfig
from hack.lib.wait import wait_until

KWOK_JOBS = int(os.environ.get("MIGRATE_KWOK_JOBS", "100"))
REAL_JOBS = int(os.environ.get("MIGRATE_REAL_JOBS", "2"))
NAMESPACES = [f"migrate-{i}" for i in range(int(os.environ.get("MIGRATE_NAMESPACES", "4")))]
TIMEOUT = float(os.environ.get("MIGRATE_TIMEOUT", "600"))
OUT = ROOT / "build/migrate-scale"
KUBECONFIG = str(local_kubeconfig())
KUBECTL = str(cache() / "bin/kubectl")
OPERATOR_NS = "mpi-operator"  # the manifest's
KUBEFLOW_SELECTOR = "app=mpi-operator,kustomize.component=mpi-operator"
OUR_SELECTOR = "app.kubernetes.io/managed-by=mpi.operator,app.kubernetes.io/component=controller"


def log(msg: str) -> None:
    print(f"[migrate-scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class PodsGone:
    """When the pods of `selector` in OPERATOR_NS were first all gone after start()."""

    def __init__(self, core: client.CoreV1Api, selector: str) -> None:
        self.core, self.selector, self.at = core, selector, 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PodsGone:
        self._thread.start()
        return self

    def _run(self) -> None:
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end:
            try:
                if not self.core.list_namespaced_pod(OPERATOR_NS, label_selector=self.selector).items:
                    self.at = time.time()
                    return
            except ApiException:
                pass
            time.sleep(0.2)


def check_alone(api: client.ApiClient) -> None:
    """The run replaces the CRD and installs in mpi-operator: no other MPIJob and no install there may be in its way."""
    custom = client.CustomObjectsApi(api)
    try:
        others = [
            f"{j['metadata']['namespace']}/{j['metadata']['name']}"
            for j in custom.list_cluster_custom_object("kubeflow.org", "v2beta1", "mpijobs")["items"]
            if j["metadata"]["namespace"] not in NAMESPACES
        ]
    except ApiException:
        others = []
    deployments = client.AppsV1Api(api).list_namespaced_deployment(OPERATOR_NS).items
    if others or deployments:
        sys.exit(
            f"migrate-scale needs the cluster to itself: MPIJobs elsewhere {others[:10]}, Deployments in "
            f"{OPERATOR_NS} {[d.metadata.name for d in deployments]}; remove them (or make cluster-down cluster-up)"
        )


def kubeflow_crd_exactly(api: client.ApiClient) -> None:
    """The CRD as the Kubeflow manifest has it (a replace: an apply would keep the fields another manager owns)."""
    docs = [d for d in yaml.safe_load_all(kubeflow_manifest_path().read_text()) if d]
    body = next(d for d in docs if d["kind"] == "CustomResourceDefinition")
    ext = client.ApiextensionsV1Api(api)
    try:
        current = ext.read_custom_resource_definition(body["metadata"]["name"])
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        ext.replace_custom_resource_definition(body["metadata"]["name"], body)
    except ApiException as exc:
        if exc.status != 404:
            raise


def phases(api: client.ApiClient) -> dict[str, str]:
    return {f"{ns}/{j['metadata']['name']}": job_phase(j) for ns in NAMESPACES for j in list_jobs(api, ns)}


def wait_phase(api: client.ApiClient, keys: list[str], phase: str, what: str) -> float:
    started = time.monotonic()
    wait_until(lambda: all(phases(api).get(k) == phase for k in keys), TIMEOUT, what, interval=2)
    return round(time.monotonic() - started, 1)


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "min": round(ordered[0], 1),
        "median": round(statistics.median(ordered), 1),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
        "max": round(ordered[-1], 1),
    }


def switch(api: client.ApiClient, core: client.CoreV1Api, variables: dict, name: str, work: Path) -> dict[str, Any]:
    """Preview then the switch; what it kept and how long the jobs went unreconciled."""
    preview = run_migrate(KUBECONFIG, variables, work, "--check", "--diff")
    (OUT / f"{name}-check.log").write_text(preview.output)
    if preview.returncode != 0:
        sys.exit(f"the preview of {name} failed:\n{preview.output[-6000:]}")
    (OUT / f"{name}-plan.txt").write_text(preview.shown_plan() + "\n")
    before = snapshot(api, NAMESPACES)
    to_ours = variables.get("mpi_operator_migrate_to", "ours") == "ours"
    gone = PodsGone(core, KUBEFLOW_SELECTOR if to_ours else OUR_SELECTOR).start()
    started = time.time()
    with PhaseWatch(api, NAMESPACES) as watch:
        run = run_migrate(KUBECONFIG, variables, work)
    (OUT / f"{name}.log").write_text(run.output)
    if run.returncode != 0:
        sys.exit(f"{name} failed:\n{run.output[-8000:]}")
    keys = list(before.jobs)
    if to_ours:
        first = watch.first  # the playbook waited until ours had reconciled every job
    else:
        # The playbook waits only until Kubeflow's pod leads: its first sync of each job is read from its log.
        first = {}

        def synced() -> bool:
            pod = core.list_namespaced_pod(OPERATOR_NS, label_selector=KUBEFLOW_SELECTOR).items[0]
            log = core.read_namespaced_pod_log(pod.metadata.name, OPERATOR_NS)
            first.update(kubeflow_first_syncs(log, time.gmtime().tm_year))
            return all(k in first for k in keys)

        wait_until(synced, TIMEOUT, "the Kubeflow operator's first sync of every job", interval=2)
    after = snapshot(api, NAMESPACES)
    found = compare(before, after)
    unreconciled = [first[k] - gone.at for k in keys if k in first and gone.at]
    report = [line for line in run.output.splitlines() if "without an operator" in line or "pods took" in line]
    return {
        "playbook_seconds": round(run.seconds, 1),
        "stopped_after_seconds": round(gone.at - started, 1) if gone.at else None,
        "jobs": len(keys),
        "reconciled": len([k for k in keys if k in first]),
        "unreconciled_seconds": spread(unreconciled),
        "children": len(before.children),
        "pods": len(before.restarts),
        **{k: len(v) for k, v in found.items()},
        "details": {k: v[:20] for k, v in found.items() if v},
        "playbook_report": " ".join(report),
    }


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for stale in OUT.glob("*"):
        stale.unlink()
    log("cluster with its real node (hack/worlds/cluster/up.sh)")
    subprocess.run(
        ["bash", "hack/worlds/cluster/up.sh"], cwd=ROOT, check=True, env=dict(os.environ, MPI_CLUSTER_REAL_NODE="1")
    )
    api = config.new_client_from_config(KUBECONFIG)
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    check_alone(api)
    repository, tag = built_image("operator")
    openmpi = ":".join(built_image("openmpi4"))
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip(),
        "kwok_jobs": KWOK_JOBS,
        "real_jobs": REAL_JOBS,
        "namespaces": NAMESPACES,
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            log("the Kubeflow operator by its manifest (CRD included), its pod on the real node")
            kubeflow_crd_exactly(api)
            results["kubeflow_image"] = install_kubeflow(KUBECONFIG, KUBECTL)
            wait_until(
                lambda: (
                    (apps.read_namespaced_deployment("mpi-operator", OPERATOR_NS).status.available_replicas or 0) >= 1
                ),
                300,
                "the Kubeflow operator available",
                interval=1,
            )
            for ns in NAMESPACES:
                try:
                    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
                except ApiException as exc:
                    if exc.status != 409:
                        raise
            kwok = [(NAMESPACES[i % len(NAMESPACES)], f"kw-{i:03d}") for i in range(KWOK_JOBS)]
            real = [(NAMESPACES[0], f"real-{i}") for i in range(REAL_JOBS)]
            for ns in NAMESPACES:
                create_jobs(api, ns, [kwok_job(n) for jns, n in kwok if jns == ns])
            create_jobs(api, NAMESPACES[0], [real_job(n, openmpi) for _, n in real])
            every = [f"{ns}/{n}" for ns, n in kwok + real]
            results["running_under_kubeflow_seconds"] = wait_phase(
                api, every, "Running", "every job Running under Kubeflow's"
            )
            log(f"{len(every)} jobs Running under the Kubeflow operator")

            ours = {
                "mpi_operator_image_repository": repository,
                "mpi_operator_image_tag": tag,
                "mpi_operator_image_pull_policy": "Never",
                "mpi_operator_wait_timeout": 300,
                "mpi_operator_migrate_takeover_timeout": int(TIMEOUT),
            }
            log("to ours")
            results["to_ours"] = switch(api, core, ours, "to-ours", work)
            log(f"to ours: {results['to_ours']}")
            first_half = kwok[: KWOK_JOBS // 2]
            tell_kwok_all(api, first_half)
            for ns, n in real[:1]:
                tell_real(KUBECONFIG, KUBECTL, ns, n)
            done = [f"{ns}/{n}" for ns, n in first_half + real[:1]]
            results["succeeded_under_ours_seconds"] = wait_phase(
                api, done, "Succeeded", "half the jobs Succeeded under ours"
            )

            log("back to Kubeflow's")
            results["to_kubeflow"] = switch(api, core, {"mpi_operator_migrate_to": "kubeflow"}, "to-kubeflow", work)
            log(f"back: {results['to_kubeflow']}")
            rest = kwok[KWOK_JOBS // 2 :]
            tell_kwok_all(api, rest)
            for ns, n in real[1:]:
                tell_real(KUBECONFIG, KUBECTL, ns, n)
            results["succeeded_under_kubeflow_seconds"] = wait_phase(
                api, every, "Succeeded", "every job Succeeded under Kubeflow's"
            )
            final = phases(api)
            results["jobs_lost"] = len([k for k in every if k not in final])
            results["jobs_succeeded"] = len([k for k in every if final.get(k) == "Succeeded"])
            results["real_ranks_on_workers"] = real_ranks(core, real)
        finally:
            results["seconds"] = round(time.monotonic() - started, 1)
            (OUT / "results.json").write_text(json.dumps(results, indent=2))
            teardown(api)
    print(table(results))
    for name, command in (
        ("to-ours", "ansible-playbook playbooks/migrate.yml -e @ours.yml --check --diff"),
        ("to-kubeflow", "ansible-playbook playbooks/migrate.yml -e mpi_operator_migrate_to=kubeflow --check --diff"),
    ):
        plan = OUT / f"{name}-plan.txt"
        if plan.exists():
            print(f"\nThe preview, as `{command}` shows it:\n\n{plan.read_text().rstrip()}")
    bad = [
        f"{way}: {k}={results[way][k]}"
        for way in ("to_ours", "to_kubeflow")
        for k in ("recreated", "gone", "restarted", "lost", "backwards")
        if results.get(way, {}).get(k)
    ]
    if bad or results.get("jobs_succeeded") != KWOK_JOBS + REAL_JOBS:
        print(f"FAILED: {bad or results}", file=sys.stderr)
        return 1
    return 0


def tell_kwok_all(api: client.ApiClient, jobs: list[tuple[str, str]]) -> None:
    for ns in NAMESPACES:
        tell_kwok(api, ns, [n for jns, n in jobs if jns == ns])


def real_ranks(core: client.CoreV1Api, real: list[tuple[str, str]]) -> dict[str, int]:
    """Ranks each real job's launcher log reports on its workers (4 expected)."""
    counts = {}
    for ns, name in real:
        pods = core.list_namespaced_pod(
            ns, label_selector=f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
        ).items
        text = core.read_namespaced_pod_log(pods[0].metadata.name, ns) if pods else ""
        counts[name] = text.count(f"on host {name}-worker-")
    return counts


def teardown(api: client.ApiClient) -> None:
    """The jobs' namespaces, the Kubeflow install but its CRD, the saved ConfigMap; the collection's CRD back."""
    core = client.CoreV1Api(api)
    for ns in NAMESPACES:
        try:
            core.delete_namespace(ns, propagation_policy="Background")
        except ApiException as exc:
            if exc.status != 404:
                raise
    docs = kubeflow_manifest("unused", crd=False)
    subprocess.run(
        [KUBECTL, f"--kubeconfig={KUBECONFIG}", "delete", "--ignore-not-found", "--wait=true", "-f", "-"],
        input=yaml.safe_dump_all(docs),
        text=True,
        capture_output=True,
        check=False,
    )
    wait_until(lambda: not [n for n in core.list_namespace().items if n.metadata.name in NAMESPACES], 600, "namespaces")
    install_crd(api)


def cell(value: Any) -> str:
    """A table cell: a spread as min / median / p90 / max."""
    if isinstance(value, dict):
        return " / ".join(str(value.get(k)) for k in ("min", "median", "p90", "max")) if value else "none"
    return str(value)


def table(r: dict[str, Any]) -> str:
    rows = [
        f"{r.get('date')}, commit {r.get('commit')}: {r['kwok_jobs']} MPIJobs on kwok nodes and {r['real_jobs']} real "
        f"mpirun jobs on the real node, in {len(r['namespaces'])} namespaces\n",
        "| | to ours | back to Kubeflow's |",
        "|---|---|---|",
    ]
    a, b = r.get("to_ours", {}), r.get("to_kubeflow", {})
    for key, what in (
        ("jobs", "MPIJobs"),
        ("pods", "pods"),
        ("children", "children (Services, ConfigMaps, Secrets, Jobs, pods)"),
        ("restarted", "pods restarted"),
        ("recreated", "children recreated"),
        ("gone", "children gone"),
        ("lost", "jobs lost"),
        ("backwards", "statuses backwards"),
        ("reconciled", "jobs reconciled by the new operator"),
        ("stopped_after_seconds", "old operator's pods gone after (s)"),
        (
            "unreconciled_seconds",
            "unreconciled: old pods gone -> each job's first reconcile, min / median / p90 / max (s)",
        ),
        ("playbook_seconds", "playbook (s)"),
    ):
        rows.append(f"| {what} | {cell(a.get(key))} | {cell(b.get(key))} |")
    rows.append(
        f"\nSucceeded when told: {r.get('jobs_succeeded')} of {r['kwok_jobs'] + r['real_jobs']} (half under ours in "
        f"{r.get('succeeded_under_ours_seconds')} s, the rest under Kubeflow's in {r.get('succeeded_under_kubeflow_seconds')} s); "
        f"jobs lost {r.get('jobs_lost')}; real ranks on workers {r.get('real_ranks_on_workers')}; total {r.get('seconds')} s"
    )
    return "\n".join(rows)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TimeoutError as exc:
        sys.exit(f"migrate-scale: {exc}")
