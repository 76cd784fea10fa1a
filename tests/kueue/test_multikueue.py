"""MultiKueue: a job created on the manager cluster with `managedBy: kueue.x-k8s.io/multikueue` is left alone by the
manager's operator, runs on a worker cluster (its own operator, its own Kueue), and its status comes back."""

from __future__ import annotations

import base64
import pathlib
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from hack.lib.operator import OperatorProcess
from hack.lib.wait import wait_until
from tests.kueue.conftest import GROUP, JOB_CPU, Queues, queued_job
from tests.support.mpijob import get_mpijob, has_condition, install_crd

MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def children_of(api: client.ApiClient, namespace: str, job: str) -> list[str]:
    """Every object the operator makes for a job, found by the job's label."""
    selector = f"training.kubeflow.org/job-name={job}"
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    found = []
    for kind, lister in (
        ("Pod", core.list_namespaced_pod),
        ("Service", core.list_namespaced_service),
        ("ConfigMap", core.list_namespaced_config_map),
        ("Secret", core.list_namespaced_secret),
        ("Job", batch.list_namespaced_job),
    ):
        found += [f"{kind} {o.metadata.name}" for o in lister(namespace, label_selector=selector).items]
    return found


def test_a_multikueue_job_runs_on_the_worker_and_its_status_comes_back(
    queues: Queues,
    running_operator: Any,
    worker_kubeconfig: str,
    api_client: client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
) -> None:
    worker_api = config.new_client_from_config(config_file=worker_kubeconfig)
    install_crd(worker_api)
    client.CoreV1Api(worker_api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    on_worker = Queues(worker_api, namespace)
    worker_operator = OperatorProcess(
        worker_kubeconfig, tmp_path, ["--namespace", namespace, "--no-leader-elect"], name="worker-operator"
    ).start()
    core = client.CoreV1Api(api_client)
    secret = queues.name("mk")
    try:
        worker_operator.wait_ready()
        on_worker.local_queue(on_worker.cluster_queue(on_worker.flavor(), f"{JOB_CPU}m"))
        # The manager: a MultiKueueCluster from the worker's kubeconfig (a Secret in Kueue's namespace), its config,
        # an AdmissionCheck using it, and a ClusterQueue with that check.
        core.create_namespaced_secret(
            "kueue-system",
            client.V1Secret(
                metadata=client.V1ObjectMeta(name=secret),
                data={"kubeconfig": base64.b64encode(pathlib.Path(worker_kubeconfig).read_bytes()).decode()},
            ),
        )
        cluster = queues.cluster_object(
            "multikueueclusters",
            "MultiKueueCluster",
            queues.name("worker"),
            {"spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}}},
        )
        mk_config = queues.cluster_object(
            "multikueueconfigs", "MultiKueueConfig", queues.name("mk"), {"spec": {"clusters": [cluster]}}
        )
        check = queues.cluster_object(
            "admissionchecks",
            "AdmissionCheck",
            queues.name("ac"),
            {
                "spec": {
                    "controllerName": MULTIKUEUE,
                    "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": mk_config},
                }
            },
        )
        local = queues.local_queue(
            queues.cluster_queue(
                queues.flavor(), f"{JOB_CPU}m", admissionChecksStrategy={"admissionChecks": [{"name": check}]}
            )
        )

        def check_active() -> bool:
            ac = queues.custom.get_cluster_custom_object(GROUP, "v1beta2", "admissionchecks", check)
            return any(
                c["type"] == "Active" and c["status"] == "True" for c in ac.get("status", {}).get("conditions", [])
            )

        wait_until(check_active, 60, what="the MultiKueue admission check Active (the worker reachable)")

        body = queued_job("far", local, "3s")
        body["spec"]["runPolicy"]["managedBy"] = MULTIKUEUE
        client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            "kubeflow.org", "v2beta1", namespace, "mpijobs", body
        )

        def running_on_worker() -> dict | None:
            remote = get_mpijob(worker_api, namespace, "far")
            return remote if remote and children_of(worker_api, namespace, "far") else None

        remote = wait_until(running_on_worker, 60, what="the job and its children on the worker")
        assert not remote["spec"]["runPolicy"].get("managedBy"), remote  # the worker's operator runs it
        assert remote["metadata"]["labels"].get("kueue.x-k8s.io/prebuilt-workload-name"), remote["metadata"]
        assert children_of(api_client, namespace, "far") == []

        def finished_on_manager() -> bool:
            return has_condition(get_mpijob(api_client, namespace, "far"), "Succeeded")

        wait_until(finished_on_manager, 120, what="the job Succeeded on the manager (its status from the worker)")
        # The manager's operator made nothing for it, to the end.
        assert children_of(api_client, namespace, "far") == []
        assert get_mpijob(api_client, namespace, "far")["spec"]["runPolicy"]["managedBy"] == MULTIKUEUE
    finally:
        worker_operator.stop()
        queues.delete_all()
        try:
            core.delete_namespaced_secret(secret, "kueue-system")
        except ApiException as exc:
            if exc.status != 404:
                raise
        client.CoreV1Api(worker_api).delete_namespace(namespace)
        on_worker.delete_all()
        worker_api.close()
