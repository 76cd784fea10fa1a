"""The T9k seed's own recovery, as its example writes it: `extraMPIArgs` with `--enable-recovery --max-restarts 100`
(PRRTE's options, OpenMPI 5), on the real node with the OpenMPI 5 image, and a rank killed mid-run; then the same
under the operator's failure policy, to see how mpirun's recovery and the operator's world restart compose
(docs/dev/restarts.md). Run alone, on the local cluster with its real node:

    bash hack/make/env.sh python -m hack.experiments.restarts.t9k_recovery

Each case prints what it saw: the job's phase and restarts, the launcher's exit, the ranks' restarts as mpirun
reports them, and the end of the launcher's log."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from hack.experiments.restarts.__main__ import fresh_namespace
from hack.lib.images import REAL_NODE_SELECTOR, REAL_NODE_TOLERATION, built_image
from hack.lib.mpijob import install_crd
from hack.lib.operator import OperatorProcess
from hack.lib.paths import ROOT
from hack.lib.wait import wait_until

NS = "restarts-t9k"
GROUP, VERSION = "batch.tensorstack.dev", "v1beta1"
# the rank sleeps first, so that it can be killed mid-run; then the tutorial's program
CMD = ["sh", "-c", "sleep 30; exec ./random_walk 20 40 2"]


def job(name: str, policy: dict[str, Any] | None) -> dict[str, Any]:
    """The seed's example (its extraMPIArgs as written, recovery included) on the real node's OpenMPI 5."""
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "worker": {
                "replicas": 2,
                "extraMPIArgs": [
                    "-N",
                    "3",
                    "--enable-recovery",
                    "--max-restarts",
                    "100",
                    "--allow-run-as-root",
                    "-bind-to",
                    "none",
                ],
                "cmd": CMD,
                "template": {
                    "spec": {
                        "nodeSelector": REAL_NODE_SELECTOR,
                        "tolerations": [REAL_NODE_TOLERATION],
                        "containers": [
                            {
                                "name": "mpi-worker",
                                "image": ":".join(built_image("openmpi5")),
                                "imagePullPolicy": "Never",
                                "workingDir": "/usr/local/code",
                            }
                        ],
                    }
                },
            },
            "mca": {"btl": "^openib"},
            "runPolicy": {"cleanUpWorkers": True},
            "ssh": {"sshdPath": "/usr/sbin/sshd"},
            "mpiHome": "/usr/local",
        },
    }
    if policy is not None:
        body["spec"]["runPolicy"]["failurePolicy"] = policy
    return body


def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
    kubectl_bin = pathlib.Path.home() / ".cache/mpi-operator/bin/kubectl"
    return subprocess.run([str(kubectl_bin), "-n", NS, *args], capture_output=True, text=True, timeout=120, check=False)


def case(custom: Any, core: Any, name: str, policy: dict[str, Any] | None, kill: bool, timeout: float = 240) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, NS, "mpijobs", job(name, policy))
    started = time.monotonic()

    def phase() -> str:
        return (custom.get_namespaced_custom_object(GROUP, VERSION, NS, "mpijobs", name).get("status") or {}).get(
            "phase", ""
        )

    def launcher_pods() -> list[Any]:
        selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
        return core.list_namespaced_pod(NS, label_selector=selector).items

    wait_until(lambda: phase() == "Running", 180, f"{name} Running", interval=1)
    print(f"\n== {name}: recovery flags as written, failurePolicy {policy}, kill a rank: {kill}")
    if kill:
        time.sleep(8)
        killed = kubectl("exec", f"{name}-worker-1", "--", "pkill", "-9", "-f", "random_walk")
        print(f"killed the ranks on {name}-worker-1 at {time.monotonic() - started:.0f} s: rc {killed.returncode}")
    while time.monotonic() - started < timeout and phase() not in ("Succeeded", "Failed"):
        time.sleep(2)
    obj = custom.get_namespaced_custom_object(GROUP, VERSION, NS, "mpijobs", name)
    status = obj.get("status") or {}
    conditions = {
        c["type"]: (c["status"], c.get("reason"), c.get("message", "")[:200]) for c in status.get("conditions") or []
    }
    print(
        f"after {time.monotonic() - started:.0f} s: phase {status.get('phase')}, restartCount "
        f"{status.get('restartCount')}, restarts {status.get('restarts')}"
    )
    for ctype, value in conditions.items():
        print(f"  {ctype}: {value}")
    for pod in sorted(launcher_pods(), key=lambda p: p.metadata.creation_timestamp):
        states = [s.state for s in pod.status.container_statuses or []]
        ended = [s.terminated.exit_code for s in states if s and s.terminated]
        try:
            log = core.read_namespaced_pod_log(pod.metadata.name, NS) or ""
        except ApiException as exc:
            log = f"(no log: {exc.reason})"
        lines = log.splitlines()
        restarts = [line for line in lines if "restart" in line.lower() or "recover" in line.lower()]
        print(f"  launcher pod {pod.metadata.name}: {pod.status.phase}, exit {ended}, {len(lines)} log lines")
        for line in restarts[:8]:
            print(f"    | {line}")
        for line in lines[-6:]:
            print(f"    > {line}")


def main() -> int:
    kubeconfig = os.environ["KUBECONFIG"]
    api = config.new_client_from_config(config_file=kubeconfig)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    install_crd(api, ROOT / "roles/crds/files/mpijobs.batch.tensorstack.dev.yaml")
    fresh_namespace(core, NS)
    work = pathlib.Path(tempfile.mkdtemp(prefix="mpi-t9k-recovery-"))
    op = OperatorProcess(kubeconfig, work, ["--namespace", NS, "--no-leader-elect", "--apis", GROUP]).start()
    op.wait_ready(120)
    try:
        wanted = sys.argv[1:] or ["plain", "killed", "killed-policy"]
        if "plain" in wanted:
            case(custom, core, "recovery-plain", None, kill=False)
        if "killed" in wanted:
            case(custom, core, "recovery-killed", None, kill=True)
        if "killed-policy" in wanted:
            case(custom, core, "recovery-policy", {"maxRestarts": 1}, kill=True, timeout=360)
    finally:
        op.stop()
        # the killed cases leave ranks that wait in MPI for ever, spinning: nothing of them may stay behind
        core.delete_namespace(NS)
        print(f"\noperator log: {op.log_path}; namespace {NS} deleted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
