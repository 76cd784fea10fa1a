"""`make chaos` (hack/experiments/chaos/chaos.sh sizes the local cluster, then runs `python -m hack.experiments.chaos`):
the scenarios named in CHAOS_SCENARIOS (default all five: kills storm node failover upgrade), one table. Sizes by
environment (docs/dev/chaos.md lists them): CHAOS_JOBS (1000) x CHAOS_WORKERS (2), CHAOS_OPERATOR_KILLS (20),
CHAOS_APISERVER_RESTARTS (2), CHAOS_ETCD_RESTARTS (1), CHAOS_STORM_GOOD (200), CHAOS_STORM_SIZE (1000),
CHAOS_FAILOVER_JOBS (200), CHAOS_UPGRADE_JOBS (200), CHAOS_TIMEOUT (900 s per wait), CHAOS_SEED (1). Exit status 1 when
a scenario has a finding, 2 for a wrong setting."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from hack.experiments.chaos import failover, node, scenarios, storm
from hack.experiments.chaos.incluster import InCluster
from hack.lib.images import built_image

# In the order a full run takes them: the in-cluster install (failover, upgrade) comes last, then goes.
SCENARIOS = ("kills", "storm", "node", "failover", "upgrade")


def env(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


def table(rows: list[scenarios.Row]) -> str:
    lines = [
        "| scenario | jobs | faults injected | result | settled after the last fault | all Succeeded after told |"
        " lost or duplicated |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lost = [f for f in r.findings if f.startswith(("lost", "orphan", "duplicate")) or " extra " in f]
        lines.append(
            f"| {r.scenario} | {r.jobs} | {len(r.faults)} | {'ok' if r.ok else f'{len(r.findings)} findings'}"
            f" | {'-' if r.settle_s is None else f'{r.settle_s:.1f} s'}"
            f" | {'-' if r.finish_s is None else f'{r.finish_s:.1f} s'} | {len(lost)} |"
        )
    return "\n".join(lines)


def in_cluster(api: client.ApiClient, kubeconfig: str, work: Path) -> tuple[InCluster, str, str]:
    """The operator installed in-cluster (two replicas) watching a fresh namespace, for failover and upgrade."""
    scenarios.fresh_namespace(client.CoreV1Api(api), "chaos-incluster")
    op = InCluster(kubeconfig, api, "chaos-incluster", work)
    repository, tag = built_image("operator")
    took = op.install(repository, tag)
    print(f"## the operator {repository}:{tag} installed in-cluster, 2 replicas, in {took:.0f} s", flush=True)
    return op, repository, tag


def run(name: str, api: client.ApiClient, kubeconfig: str, work: Path, installed: list) -> scenarios.Row:
    timeout = env("CHAOS_TIMEOUT", 900)
    if name == "kills":
        return scenarios.kills_at_scale(
            api,
            kubeconfig,
            work,
            jobs=int(env("CHAOS_JOBS", 1000)),
            workers=int(env("CHAOS_WORKERS", 2)),
            operator_kills=int(env("CHAOS_OPERATOR_KILLS", 20)),
            apiserver_restarts=int(env("CHAOS_APISERVER_RESTARTS", 2)),
            etcd_restarts=int(env("CHAOS_ETCD_RESTARTS", 1)),
            timeout=timeout,
            seed=int(env("CHAOS_SEED", 1)),
        )
    if name == "storm":
        return storm.bad_input_storm(
            api,
            kubeconfig,
            work,
            good=int(env("CHAOS_STORM_GOOD", 200)),
            storm=int(env("CHAOS_STORM_SIZE", 1000)),
            seed=int(env("CHAOS_SEED", 1)),
            timeout=timeout,
        )
    if name == "node":
        return node.real_node(api, kubeconfig, work, timeout=timeout)
    if not installed:
        installed.extend(in_cluster(api, kubeconfig, work))
    op, repository, tag = installed
    if name == "failover":
        return failover.leader_failover(api, op, jobs=int(env("CHAOS_FAILOVER_JOBS", 200)), timeout=timeout)
    return failover.upgrade_under_load(
        api, op, repository, tag, jobs=int(env("CHAOS_UPGRADE_JOBS", 200)), timeout=timeout
    )


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    api = config.new_client_from_config(kubeconfig)
    client.Configuration.set_default(api.configuration)
    work = Path(tempfile.mkdtemp(prefix="mpi-chaos-"))
    names = (os.environ.get("CHAOS_SCENARIOS") or " ".join(SCENARIOS)).replace(",", " ").split()
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"CHAOS_SCENARIOS: unknown {', '.join(unknown)} (known: {', '.join(SCENARIOS)})", file=sys.stderr)
        return 2
    if "node" in names and node_missing(api):
        print(f"CHAOS_SCENARIOS: node needs the real node: {node_missing(api)}", file=sys.stderr)
        return 2
    scenarios.delete_leftovers(client.CoreV1Api(api))
    rows, installed = [], []
    try:
        for name in names:
            scenarios.namespaces_settled(client.CoreV1Api(api))
            start = time.monotonic()
            row = run(name, api, kubeconfig, work, installed)
            rows.append(row)
            print(f"## {row.scenario}: {time.monotonic() - start:.0f} s", flush=True)
            for line in row.faults:
                print(f"- {line}")
            for line in row.notes:
                print(f"- {line}")
            for finding in row.findings[:50]:
                print(f"- FINDING {finding}")
            if len(row.findings) > 50:
                print(f"- ... {len(row.findings) - 50} more findings")
    finally:
        if installed and rows and all(r.ok for r in rows):
            installed[0].uninstall(installed[1], installed[2])
        elif installed:
            print("the in-cluster operator is left installed for a look (playbooks/uninstall.yml removes it)")
    print(table(rows))
    print(f"operator logs: {work}")
    return 0 if all(r.ok for r in rows) else 1


def node_missing(api: client.ApiClient) -> str | None:
    try:
        ready = [c for c in client.CoreV1Api(api).read_node("mpi-real-node").status.conditions if c.type == "Ready"]
    except ApiException as exc:
        return f"no node mpi-real-node ({exc.status}): hack/worlds/node/up.sh brings it up where the machine allows"
    return None if ready and ready[0].status == "True" else "node mpi-real-node is not Ready"


if __name__ == "__main__":
    sys.exit(main())
