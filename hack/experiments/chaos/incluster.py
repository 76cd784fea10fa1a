"""The operator in-cluster, as a platform team runs it: built from the Containerfile, imported into the real node's
containerd, installed by playbooks/install.yml on the real node with two replicas and leader election, watching one
namespace. What the failover and upgrade scenarios do to it: who leads (the Lease), a replica's pod deleted, its
container's process SIGKILLed on the node, the install run again with another image."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hack.lib.ansible import ansible_env
from hack.lib.images import REAL_NODE_SELECTOR, REAL_NODE_TOLERATION
from hack.lib.paths import ROOT

OPERATOR_NAMESPACE = "chaos-operator"
LEASE = "mpi-operator"  # mpijob_operator/__main__.py's LEASE_NAME
DEPLOYMENT = "mpi-operator"
CONTAINERD_SOCK = "/run/containerd/containerd.sock"


def ctr(*args: str) -> str:
    return subprocess.run(
        ["ctr", "-a", CONTAINERD_SOCK, "-n", "k8s.io", *args], check=True, stdout=subprocess.PIPE, text=True
    ).stdout


def tag_image(repository: str, tag: str, new_tag: str) -> None:
    """The image under a second tag: to the Deployment another image (its pods are replaced), the same build."""
    if f"{repository}:{new_tag}" not in ctr("images", "ls", "-q").split():
        ctr("images", "tag", f"{repository}:{tag}", f"{repository}:{new_tag}")


@dataclass
class InCluster:
    """playbooks/install.yml's operator watching `namespace`."""

    kubeconfig: str
    api: client.ApiClient
    namespace: str
    work: pathlib.Path
    replicas: int = 2

    def install_vars(self, repository: str, tag: str) -> dict:
        return {
            "mpi_operator_namespace_name": OPERATOR_NAMESPACE,
            "mpi_operator_watch_namespace": self.namespace,
            "mpi_operator_image_repository": repository,
            "mpi_operator_image_tag": tag,
            "mpi_operator_image_pull_policy": "Never",
            "mpi_operator_replicas": self.replicas,
            "mpi_operator_node_selector": REAL_NODE_SELECTOR,
            "mpi_operator_tolerations": [REAL_NODE_TOLERATION],
            "mpi_operator_wait_timeout": 300,
            "mpi_operator_adopt_crd": True,
        }

    def playbook(self, name: str, repository: str, tag: str) -> float:
        """Runs playbooks/NAME with this install's variables; its seconds. Fails with the play's tail."""
        vars_file = self.work / f"{name}-{tag}.json"
        vars_file.write_text(json.dumps(self.install_vars(repository, tag)))
        start = time.monotonic()
        env = ansible_env(self.kubeconfig)
        bin_dir = pathlib.Path(sys.executable).parent
        proc = subprocess.run(
            [str(bin_dir / "ansible-playbook"), str(ROOT / "playbooks" / name), "-e", f"@{vars_file}"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        (self.work / f"{name}-{tag}.log").write_text(proc.stdout)
        if proc.returncode != 0:
            raise RuntimeError(f"{name} failed ({proc.returncode}): {proc.stdout[-3000:]}")
        return time.monotonic() - start

    def install(self, repository: str, tag: str) -> float:
        return self.playbook("install.yml", repository, tag)

    def uninstall(self, repository: str, tag: str) -> float:
        return self.playbook("uninstall.yml", repository, tag)

    def holder(self) -> str | None:
        """The pod that holds the Lease (the identity is `<pod name>_<uuid>`), or None."""
        try:
            lease = client.CoordinationV1Api(self.api).read_namespaced_lease(
                LEASE, OPERATOR_NAMESPACE, _request_timeout=5
            )
        except (ApiException, OSError, Exception):
            return None
        identity = lease.spec.holder_identity or ""
        return identity or None

    def pods(self) -> list[client.V1Pod]:
        return (
            client.CoreV1Api(self.api)
            .list_namespaced_pod(OPERATOR_NAMESPACE, label_selector="app.kubernetes.io/name=mpi-operator")
            .items
        )

    def delete_pod(self, name: str) -> None:
        client.CoreV1Api(self.api).delete_namespaced_pod(name, OPERATOR_NAMESPACE)

    def kill_container(self, pod_name: str) -> int:
        """SIGKILLs the operator container's process of `pod_name` on the node (a crash: the kubelet restarts the
        container); its host pid."""
        pod = client.CoreV1Api(self.api).read_namespaced_pod(pod_name, OPERATOR_NAMESPACE)
        container_id = pod.status.container_statuses[0].container_id.split("://", 1)[1]
        for line in ctr("tasks", "ls").splitlines()[1:]:
            task, pid, _status = line.split()[:3]
            if task == container_id:
                os.kill(int(pid), signal.SIGKILL)
                return int(pid)
        raise RuntimeError(f"no containerd task {container_id} for pod {pod_name}")


def pod_of(identity: str | None) -> str | None:
    return identity.split("_", 1)[0] if identity else None
