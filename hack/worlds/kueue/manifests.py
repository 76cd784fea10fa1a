"""Kueue's manifests as its release renders them (`kubectl kustomize config/default` of the module), made to run on
this project's local cluster: only what differs from a user's cluster changes, each change said below.

usage: kubectl kustomize CONFIG/default | manifests.py --image REF --node NAME --api-server HOST:PORT > kueue.yaml
"""

from __future__ import annotations

import argparse
import hashlib
import sys

import yaml

# The integrations Kueue runs here: MPIJobs, and batch/job, which its manifests' Job webhook needs: without it Kueue
# v0.17.0's webhook panics on every Job created (a 500 for the operator's launcher Jobs). Kueue leaves a Job owned by
# an MPIJob it manages to that MPIJob's workload. The rest (pods, Deployments, Ray, ...) are not the subject here.
FRAMEWORKS = ["batch/job", "kubeflow.org/mpijob"]
CONFIG_KEY = "controller_manager_config.yaml"


def configuration(objects: list[dict]) -> tuple[dict, dict]:
    """Kueue's ConfigMap among its manifests and its configuration, the frameworks set to FRAMEWORKS."""
    config_map = next(o for o in objects if o["kind"] == "ConfigMap" and CONFIG_KEY in o.get("data", {}))
    config = yaml.safe_load(config_map["data"][CONFIG_KEY])
    config["integrations"]["frameworks"] = FRAMEWORKS
    return config_map, config


def patch(objects: list[dict], image: str, node: str, api_server: str) -> list[dict]:
    host, _, port = api_server.rpartition(":")
    # A changed configuration rolls the Deployment (the ConfigMap's name has no hash suffix to do it).
    config_map, config = configuration(objects)
    config_map["data"][CONFIG_KEY] = yaml.safe_dump(config, sort_keys=False)
    config_digest = hashlib.sha256(config_map["data"][CONFIG_KEY].encode()).hexdigest()[:16]
    out = []
    for obj in objects:
        kind = obj["kind"]
        if kind == "APIService":
            # The visibility API is optional; registered, a stopped Kueue would break every client's discovery.
            continue
        if kind == "Deployment":
            obj["spec"]["template"]["metadata"].setdefault("annotations", {})["mpi.operator/kueue-config"] = (
                config_digest
            )
            obj["spec"]["strategy"] = {"type": "Recreate"}  # its host ports: the old pod must go first
            pod = obj["spec"]["template"]["spec"]
            # The real node has no kube-proxy and no registry: Kueue runs in its network namespace (the API server
            # reaches the webhooks at the node's address, --enable-aggregator-routing), from the imported image, and
            # talks to the API server where the host serves it.
            pod.update(
                hostNetwork=True,
                dnsPolicy="ClusterFirstWithHostNet",
                nodeSelector={"kubernetes.io/hostname": node},
                tolerations=[{"operator": "Exists", "effect": "NoSchedule"}],
            )
            for container in pod["containers"]:
                if container["name"] != "manager":
                    continue
                container.update(image=image, imagePullPolicy="Never")
                container["env"] = [e for e in container.get("env", []) if not e["name"].startswith("KUBERNETES_")] + [
                    {"name": "KUBERNETES_SERVICE_HOST", "value": host},
                    {"name": "KUBERNETES_SERVICE_PORT", "value": port},
                ]
                # The real node's two cores are shared with MPI ranks.
                container["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}
        out.append(obj)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--api-server", required=True, help="HOST:PORT of the API server, from the node")
    args = parser.parse_args()
    objects = [o for o in yaml.safe_load_all(sys.stdin) if o]
    yaml.safe_dump_all(patch(objects, args.image, args.node, args.api_server), sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
