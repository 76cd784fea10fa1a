"""`make chaos` (hack/chaos.sh sizes the local cluster, then runs `python -m hack.chaos`): the scenarios named in
CHAOS_SCENARIOS (default: kills), one table. Sizes by environment: CHAOS_JOBS (1000) x CHAOS_WORKERS (2),
CHAOS_OPERATOR_KILLS (20), CHAOS_APISERVER_RESTARTS (2), CHAOS_ETCD_RESTARTS (1), CHAOS_TIMEOUT (900 s per wait),
CHAOS_SEED (1: when the faults fall). Exit status 1 when a scenario has a finding."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from kubernetes import client, config

from hack.chaos import scenarios


def env(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


def table(rows: list[scenarios.Row]) -> str:
    lines = ["| scenario | jobs | faults injected | result | settled after the last fault | all Succeeded after told |"
             " lost or duplicated |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lost = [f for f in r.findings if f.startswith(("lost", "orphan", "duplicate")) or " extra " in f]
        lines.append(f"| {r.scenario} | {r.jobs} | {len(r.faults)} | {'ok' if r.ok else f'{len(r.findings)} findings'}"
                     f" | {'-' if r.settle_s is None else f'{r.settle_s:.1f} s'}"
                     f" | {'-' if r.finish_s is None else f'{r.finish_s:.1f} s'} | {len(lost)} |")
    return "\n".join(lines)


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    api = config.new_client_from_config(kubeconfig)
    client.Configuration.set_default(api.configuration)
    work = Path(tempfile.mkdtemp(prefix="mpi-chaos-"))
    rows = []
    for name in (os.environ.get("CHAOS_SCENARIOS") or "kills").replace(",", " ").split():
        start = time.monotonic()
        if name == "kills":
            row = scenarios.kills_at_scale(
                api, kubeconfig, work, jobs=int(env("CHAOS_JOBS", 1000)), workers=int(env("CHAOS_WORKERS", 2)),
                operator_kills=int(env("CHAOS_OPERATOR_KILLS", 20)),
                apiserver_restarts=int(env("CHAOS_APISERVER_RESTARTS", 2)),
                etcd_restarts=int(env("CHAOS_ETCD_RESTARTS", 1)), timeout=env("CHAOS_TIMEOUT", 900),
                seed=int(env("CHAOS_SEED", 1)))
        else:
            print(f"unknown scenario {name!r} (known: kills)", file=sys.stderr)
            return 2
        rows.append(row)
        print(f"## {row.scenario}: {time.monotonic() - start:.0f} s", flush=True)
        for fault in row.faults:
            print(f"- {fault}")
        for finding in row.findings[:50]:
            print(f"- FINDING {finding}")
        if len(row.findings) > 50:
            print(f"- ... {len(row.findings) - 50} more findings")
    print(table(rows))
    print(f"operator logs: {work}")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
