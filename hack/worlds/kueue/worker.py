"""The objects of a MultiKueue worker's Kueue (hack/worlds/kueue/worker.sh): the worker cluster has kwok nodes only, so
its Kueue runs as a pod on the manager cluster's real node, talking to the worker's API server with the worker's
kubeconfig, and the worker's API server calls its webhooks at the real node's address.

usage: kubectl kustomize CONFIG/default | worker.py --image REF --node NAME --node-ip IP --certs DIR
           --kubeconfig FILE --worker-out WORKER.yaml --manager-out MANAGER.yaml
WORKER.yaml (applied to the worker cluster): Kueue's CRDs, its namespace, its webhook configurations calling
https://IP:9444 with the CA of DIR. MANAGER.yaml (applied to the manager cluster, namespace kueue-worker): the
Deployment, its configuration, and a Secret with the worker's kubeconfig and the serving certificate of DIR.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import pathlib
import sys

import yaml
from manifests import CONFIG_KEY, configuration  # beside this file: the frameworks and config both Kueues run with

NAMESPACE = "kueue-worker"  # on the manager cluster
WEBHOOK_PORT, HEALTH_PORT, METRICS_PORT = 9444, 8091, 8453  # beside the manager's Kueue, in the same network


def worker_objects(objects: list[dict], node_ip: str, ca: bytes) -> list[dict]:
    """The CRDs, the namespace and the webhooks (by URL), from Kueue's own manifests."""
    out = []
    for obj in objects:
        kind = obj["kind"]
        if kind in ("CustomResourceDefinition", "Namespace"):
            out.append(obj)
        elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            obj = copy.deepcopy(obj)
            for hook in obj["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {
                    "url": f"https://{node_ip}:{WEBHOOK_PORT}{path}",
                    "caBundle": base64.b64encode(ca).decode(),
                }
            out.append(obj)
    return out


def manager_objects(objects: list[dict], image: str, node: str, kubeconfig: bytes, certs: pathlib.Path) -> list[dict]:
    """Kueue's Deployment and configuration, run for the worker: its certificates given (no internal certificate
    management: its CA goes into the worker's webhooks), other ports, the worker's kubeconfig."""
    config = configuration(objects)[1]
    config.update(
        namespace="kueue-system",
        internalCertManagement={"enable": False},
        leaderElection={"leaderElect": False},
        health={"healthProbeBindAddress": f":{HEALTH_PORT}"},
        metrics={"bindAddress": f":{METRICS_PORT}"},
        webhook={"port": WEBHOOK_PORT, "certDir": "/certs"},
        # The visibility API server authenticates its callers with the cluster it runs in: not the worker's.
        featureGates={"VisibilityOnDemand": False},
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "kueue-worker", "namespace": NAMESPACE},
        "data": {
            name: base64.b64encode(data).decode()
            for name, data in {
                "kubeconfig": kubeconfig,
                "tls.crt": (certs / "tls.crt").read_bytes(),
                "tls.key": (certs / "tls.key").read_bytes(),
            }.items()
        },
    }
    items = lambda *names: [{"key": n, "path": n} for n in names]  # noqa: E731
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kueue-worker", "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app": "kueue-worker"}},
            "template": {
                # A changed configuration or certificate rolls the pod.
                "metadata": {
                    "labels": {"app": "kueue-worker"},
                    "annotations": {
                        "mpi.operator/config": hashlib.sha256(
                            (yaml.safe_dump(config, sort_keys=True) + secret["data"]["tls.crt"]).encode()
                        ).hexdigest()[:16]
                    },
                },
                "spec": {
                    "hostNetwork": True,
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "automountServiceAccountToken": False,
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [
                        {
                            "name": "manager",
                            "image": image,
                            "imagePullPolicy": "Never",
                            "command": ["/manager"],
                            "args": [f"--config=/config/{CONFIG_KEY}", "--zap-log-level=2"],
                            "env": [{"name": "KUBECONFIG", "value": "/kubeconfig/kubeconfig"}],
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"memory": "512Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "readinessProbe": {"httpGet": {"path": "/readyz", "port": HEALTH_PORT}, "periodSeconds": 2},
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/config"},
                                {"name": "certs", "mountPath": "/certs"},
                                # A fixed path, without internal certificate management.
                                {"name": "certs", "mountPath": "/etc/kueue/metrics/certs"},
                                {"name": "kubeconfig", "mountPath": "/kubeconfig"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "config", "configMap": {"name": "kueue-worker"}},
                        {
                            "name": "certs",
                            "secret": {"secretName": "kueue-worker", "items": items("tls.crt", "tls.key")},
                        },
                        {"name": "kubeconfig", "secret": {"secretName": "kueue-worker", "items": items("kubeconfig")}},
                    ],
                },
            },
        },
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kueue-worker", "namespace": NAMESPACE},
            "data": {CONFIG_KEY: yaml.safe_dump(config, sort_keys=False)},
        },
        secret,
        deployment,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--image", "--node", "--node-ip", "--certs", "--kubeconfig", "--worker-out", "--manager-out"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    objects = [o for o in yaml.safe_load_all(sys.stdin) if o]
    certs = pathlib.Path(args.certs)
    pathlib.Path(args.worker_out).write_text(
        yaml.safe_dump_all(worker_objects(objects, args.node_ip, (certs / "ca.crt").read_bytes()), sort_keys=False)
    )
    pathlib.Path(args.manager_out).write_text(
        yaml.safe_dump_all(
            manager_objects(objects, args.image, args.node, pathlib.Path(args.kubeconfig).read_bytes(), certs),
            sort_keys=False,
        )
    )


if __name__ == "__main__":
    main()
