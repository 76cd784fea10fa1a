"""The Kubeflow MPI Operator as a peer: the binary hack/build/kubeflow.sh builds from the Go module proxy (cached), run
out of cluster against a cluster through a kubeconfig, watching one namespace and holding its leader election lease
there. The differential tests (tests/integration/test_reconcile_kubeflow.py), the e2e timing runs and `make bench`
(hack/experiments/bench/bench.py) all run it through this module."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time

from hack.lib.paths import ROOT

KUBEFLOW_VERSION = "v0.8.2"  # the Kubeflow MPI Operator release the contract is taken from
# v0.8.2 serves /healthz on this port, fixed in cmd/mpi-operator/app/server.go (no flag), and exits when it is taken:
# two of its processes cannot run on one machine at the same time.
HEALTH_PORT = 8080


def kubeflow_operator_binary() -> str | None:
    """The Kubeflow MPI Operator built from the Go module proxy by hack/build/kubeflow.sh (cached); None without Go."""
    script = ROOT / "hack/build/kubeflow.sh"
    env = dict(os.environ, KUBEFLOW_MPI_OPERATOR_VERSION=KUBEFLOW_VERSION)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=3600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"building the Kubeflow MPI Operator failed:\n{proc.stderr[-3000:]}")
    return proc.stdout.strip() or None


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class KubeflowProcess:
    """One Kubeflow MPI Operator process watching `namespace` (its lease there too), its output in `log_path`."""

    def __init__(self, binary: str, kubeconfig: str, namespace: str, args: list[str], log_path: pathlib.Path):
        self.log_path = log_path
        self.args = [binary, "--namespace", namespace, "--lock-namespace", namespace, *args]
        self.env = dict(os.environ, KUBECONFIG=kubeconfig)  # v0.8.2 takes $KUBECONFIG over --kubeConfig
        self.proc: subprocess.Popen | None = None

    def start(self, port_wait: float = 120) -> KubeflowProcess:
        """Starts it once the health port is free (another one, e.g. a differential test's, may still hold it)."""
        end = time.monotonic() + port_wait
        while _port_taken(HEALTH_PORT) and time.monotonic() < end:
            time.sleep(0.5)
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.args, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        return self

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout: float = 60) -> None:
        """Until its workers run: leader, informer caches synced ("Started workers")."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            assert self.proc is not None
            if self.proc.poll() is not None:
                hint = (
                    f" (port {HEALTH_PORT} is taken: another Kubeflow MPI Operator runs on this machine)"
                    if "address already in use" in self.logs()
                    else ""
                )
                raise RuntimeError(
                    f"the Kubeflow MPI Operator exited with {self.proc.returncode}{hint}:\n{self.logs()[-3000:]}"
                )
            if "Started workers" in self.logs():
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Kubeflow MPI Operator not ready in {timeout:.0f}s:\n{self.logs()[-3000:]}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


# The Kubeflow MPI Operator installed in-cluster as its users install it: the release's own manifest
# (deploy/v2beta1/mpi-operator.yaml: Namespace, CRD, ServiceAccount, RBAC, Deployment), applied with
# `kubectl apply --server-side`, its Deployment's image the peer binary's (hack/build/images/kubeflow-operator).
MANIFEST_NAMESPACE = "mpi-operator"  # the manifest's namespace, and its --lock-namespace


def kubeflow_manifest_path() -> pathlib.Path:
    """The release's install manifest in the Go module cache (the module source hack/build/kubeflow.sh builds from)."""
    gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    return (
        pathlib.Path(gomodcache)
        / f"github.com/kubeflow/mpi-operator@{KUBEFLOW_VERSION}/deploy/v2beta1/mpi-operator.yaml"
    )


def kubeflow_manifest(
    image: str,
    *,
    pull_policy: str | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict] | None = None,
    namespace: str = MANIFEST_NAMESPACE,
    watch_namespace: str = "",
    crd: bool = True,
) -> list[dict]:
    """The manifest's objects with its Deployment's image replaced by `image`, and only what is asked changed besides:
    the pull policy and the pod's node selector and tolerations (where its image is: the real node), and, for a test
    that shares the cluster, the operator's namespace and the cluster-scoped names made its own (`namespace`: as
    kustomize's namespace and nameSuffix would rename them, the lock namespace with them), the jobs it watches
    (`watch_namespace`, its --namespace flag) and the CRD left out (`crd=False`)."""
    import yaml

    docs = [d for d in yaml.safe_load_all(kubeflow_manifest_path().read_text()) if d]
    if not crd:
        docs = [d for d in docs if d["kind"] != "CustomResourceDefinition"]
    renamed = namespace != MANIFEST_NAMESPACE
    for doc in docs:
        meta = doc["metadata"]
        if renamed:
            if doc["kind"] == "Namespace":
                meta["name"] = namespace
            elif "namespace" in meta:
                meta["namespace"] = namespace
            elif doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
                meta["name"] = f"{meta['name']}-{namespace}"
            if doc["kind"] == "ClusterRoleBinding":
                doc["roleRef"]["name"] = f"{doc['roleRef']['name']}-{namespace}"
                for subject in doc["subjects"]:
                    subject["namespace"] = namespace
        if doc["kind"] != "Deployment":
            continue
        pod = doc["spec"]["template"]["spec"]
        for container in pod["containers"]:
            container["image"] = image
            if pull_policy:
                container["imagePullPolicy"] = pull_policy
            if renamed:
                container["args"] = [
                    f"--lock-namespace={namespace}" if a.startswith("--lock-namespace") else a
                    for a in container["args"]
                ]
            if watch_namespace:
                container["args"].append(f"--namespace={watch_namespace}")
        if node_selector:
            pod["nodeSelector"] = node_selector
        if tolerations:
            pod["tolerations"] = tolerations
    return docs


def apply_manifest(docs: list[dict], kubeconfig: str, kubectl: str) -> None:
    """`kubectl apply --server-side -f`, the install command of the Kubeflow MPI Operator's README (taking over fields
    another manager set, as a re-install over an earlier one does)."""
    import yaml

    proc = subprocess.run(
        [kubectl, f"--kubeconfig={kubeconfig}", "apply", "--server-side", "--force-conflicts", "-f", "-"],
        input=yaml.safe_dump_all(docs, sort_keys=False),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl apply of the Kubeflow manifest failed:\n{proc.stdout}{proc.stderr}")
