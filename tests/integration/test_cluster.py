"""The test cluster behaves like a real one: the API server's semantics, the controllers, the scheduler, and the
simulated (kwok) nodes with the pod outcomes tests can ask for (docs/dev/local-cluster.md)."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from hack.lib.wait import wait_until
from tests.support.paths import ROOT, local_kubeconfig

pytestmark = pytest.mark.integration

OUTCOME = "kwok.mpi.operator/outcome"
OUTCOME_AFTER = "kwok.mpi.operator/outcome-after"


def _gone(read) -> bool:
    try:
        read()
    except ApiException as e:
        if e.status == 404:
            return True
        raise
    return False


# Real images, so the same tests pass on a cluster of your own; kwok's nodes never pull them.
RUNS = client.V1Container(name="main", image="registry.k8s.io/pause:3.10")
FINISHES = client.V1Container(name="main", image="registry.k8s.io/e2e-test-images/busybox:1.36.1-1", command=["true"])


def _pod(name: str, annotations: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, annotations=annotations),
        spec=client.V1PodSpec(containers=[RUNS], restart_policy="Never"),
    )


def _job(name: str, completions: int = 1, annotations: dict[str, str] | None = None, **spec) -> client.V1Job:
    return client.V1Job(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1JobSpec(
            completions=completions,
            parallelism=completions,
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(annotations=annotations),
                spec=client.V1PodSpec(containers=[FINISHES], restart_policy="Never"),
            ),
            **spec,
        ),
    )


def _pods_summary(core: client.CoreV1Api, namespace: str) -> list[tuple[str, str | None, str | None]]:
    return [(p.metadata.name, p.spec.node_name, p.status.phase) for p in core.list_namespaced_pod(namespace).items]


def _job_condition(batch: client.BatchV1Api, name: str, namespace: str, kind: str) -> bool:
    status = batch.read_namespaced_job_status(name, namespace).status
    return any(c.type == kind and c.status == "True" for c in status.conditions or [])


def test_readyz_ok(api_client: client.ApiClient):
    args = api_client.param_serialize(
        "GET", "/readyz", query_params=[("verbose", "true")], auth_settings=["BearerToken"]
    )
    response = api_client.call_api(*args)
    response.read()
    body = response.data.decode()
    assert response.status == 200, body
    assert "[+]etcd ok" in body and "readyz check passed" in body, body


def test_server_version_is_pinned(api_client: client.ApiClient, local_cluster: bool):
    if not local_cluster:
        pytest.skip("the pinned version applies to the local cluster only")
    pinned = _versions()
    assert client.VersionApi(api_client).get_code().git_version == pinned["KUBE_VERSION"]


def _versions() -> dict[str, str]:
    with open(ROOT / "hack/worlds/cluster/versions.env", encoding="utf-8") as f:
        return dict(line.strip().split("=", 1) for line in f if line.strip() and not line.startswith("#"))


def test_kwok_nodes_ready(api_client: client.ApiClient, local_cluster: bool):
    nodes = client.CoreV1Api(api_client).list_node(label_selector="type=kwok").items
    if not local_cluster and not nodes:
        pytest.skip("no kwok nodes in this (user) cluster")
    expected = int(os.environ.get("MPI_CLUSTER_NODES", "4"))
    # the cluster's own nodes; tests running beside this one add kwok nodes of their own (test_gang's gang-node, the
    # accelerator tests' GPU nodes), named otherwise
    nodes = [n for n in nodes if n.metadata.name.startswith("kwok-node-")]
    assert sorted(n.metadata.name for n in nodes) == sorted(f"kwok-node-{i}" for i in range(expected))
    for node in nodes:
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True", node.metadata.name
        assert node.status.allocatable["cpu"] == "32" and node.status.allocatable["memory"] == "128Gi"
        assert node.status.allocatable["pods"] == "110"
        assert not node.spec.taints, f"{node.metadata.name} is tainted: pods would not land on it by default"


@pytest.fixture
def widget_crd(api_client: client.ApiClient):
    """A namespaced CRD with a structural schema, a CEL rule, and the status and scale subresources."""
    ext = client.ApiextensionsV1Api(api_client)
    group = f"t{uuid.uuid4().hex[:8]}.cluster.test.mpi.operator"
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["replicas"],
                "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}},
                "x-kubernetes-validations": [
                    {"rule": "self.replicas <= self.maxReplicas", "message": "replicas exceed maxReplicas"}
                ],
            },
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}, "phase": {"type": "string"}}},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {
                        "status": {},
                        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                    },
                }
            ],
        },
    }
    ext.create_custom_resource_definition(crd)

    def established() -> bool:
        conditions = ext.read_custom_resource_definition(f"widgets.{group}").status.conditions or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    wait_until(established, 30, what="CRD Established")
    yield group
    ext.delete_custom_resource_definition(f"widgets.{group}")


def test_crd_with_status_subresource_is_served(api_client: client.ApiClient, namespace: str, widget_crd: str):
    objs = client.CustomObjectsApi(api_client)
    args = (widget_crd, "v1", namespace, "widgets")
    body = {
        "apiVersion": f"{widget_crd}/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"replicas": 1, "maxReplicas": 3},
        "status": {"phase": "Ignored"},
    }
    # The resource may take a moment to appear in discovery after Established.
    created = wait_until(lambda: _create_when_served(objs, args, body), 30, what="widgets served")
    assert "status" not in created or created["status"] == {}, (
        "status must be ignored on create with a status subresource"
    )

    objs.patch_namespaced_custom_object_status(*args, "w1", {"status": {"phase": "Running", "replicas": 1}})
    got = objs.get_namespaced_custom_object(*args, "w1")
    assert got["status"] == {"phase": "Running", "replicas": 1}
    assert got["spec"] == {"replicas": 1, "maxReplicas": 3}

    scale = objs.get_namespaced_custom_object_scale(*args, "w1")
    assert scale["spec"]["replicas"] == 1 and scale["status"]["replicas"] == 1
    objs.patch_namespaced_custom_object_scale(*args, "w1", {"spec": {"replicas": 2}})
    assert objs.get_namespaced_custom_object(*args, "w1")["spec"]["replicas"] == 2

    with pytest.raises(ApiException) as bad:
        objs.create_namespaced_custom_object(
            *args, {**body, "metadata": {"name": "w2"}, "spec": {"replicas": 5, "maxReplicas": 3}}
        )
    assert bad.value.status == 422 and "replicas exceed maxReplicas" in bad.value.body
    with pytest.raises(ApiException) as unknown:
        objs.create_namespaced_custom_object(
            *args, {**body, "metadata": {"name": "w3"}, "spec": {"replicas": "two", "maxReplicas": 3}}
        )
    assert unknown.value.status == 422


def _create_when_served(objs: client.CustomObjectsApi, args: tuple, body: dict) -> dict | None:
    try:
        return objs.create_namespaced_custom_object(*args, body)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def test_deployment_pods_run_on_kwok_nodes(api_client: client.ApiClient, namespace: str, local_cluster: bool):
    apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
    labels = {"app": "web"}
    apps.create_namespaced_deployment(
        namespace,
        client.V1Deployment(
            metadata=client.V1ObjectMeta(name="web"),
            spec=client.V1DeploymentSpec(
                replicas=3,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels),
                    spec=client.V1PodSpec(containers=[RUNS]),
                ),
            ),
        ),
    )
    try:
        wait_until(
            lambda: apps.read_namespaced_deployment_status("web", namespace).status.available_replicas == 3,
            120,
            what="3 available replicas",
        )
    except TimeoutError as e:
        raise TimeoutError(f"{e}; pods: {_pods_summary(core, namespace)}") from None
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    assert len(pods) == 3
    for pod in pods:
        assert pod.status.phase == "Running"
        assert any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)
        assert pod.status.pod_ip
        if local_cluster:
            assert pod.spec.node_name.startswith("kwok-node-"), pod.spec.node_name


def test_job_completes_and_ttl_deletes_it(api_client: client.ApiClient, namespace: str):
    batch = client.BatchV1Api(api_client)
    batch.create_namespaced_job(namespace, _job("done", completions=2, ttl_seconds_after_finished=2))
    wait_until(lambda: _job_condition(batch, "done", namespace, "Complete"), 60, what="Job Complete")
    # The TTL-after-finished controller deletes the finished Job.
    wait_until(lambda: _gone(lambda: batch.read_namespaced_job("done", namespace)), 60, what="Job deleted by its TTL")


def test_deleting_an_owner_collects_its_dependents(api_client: client.ApiClient, namespace: str):
    core = client.CoreV1Api(api_client)
    owner = core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner")))
    ref = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dependent", owner_references=[ref]))
    )
    core.create_namespaced_pod(
        namespace,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="dependent-pod", owner_references=[ref]),
            spec=client.V1PodSpec(containers=[RUNS]),
        ),
    )
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")
    wait_until(
        lambda: _gone(lambda: core.read_namespaced_config_map("dependent", namespace)),
        60,
        what="dependent ConfigMap collected",
    )
    wait_until(
        lambda: _gone(lambda: core.read_namespaced_pod("dependent-pod", namespace)), 60, what="dependent Pod collected"
    )


def test_deleting_a_namespace_finishes(api_client: client.ApiClient):
    core = client.CoreV1Api(api_client)
    name = f"t-ns-delete-{uuid.uuid4().hex[:6]}"
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={"mpi.operator/test": "true"}))
    )
    wait_until(
        lambda: not _gone(lambda: core.read_namespaced_service_account("default", name)),
        30,
        what="default ServiceAccount",
    )
    core.create_namespaced_pod(name, _pod("running"))
    core.create_namespaced_config_map(name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="data")))
    wait_until(lambda: core.read_namespaced_pod("running", name).status.phase == "Running", 30, what="pod Running")
    core.delete_namespace(name)
    wait_until(lambda: _gone(lambda: core.read_namespace(name)), 90, what=f"namespace {name} deleted")


def test_server_side_apply_tracks_field_owners(api_client: client.ApiClient, namespace: str):
    core = client.CoreV1Api(api_client)

    def apply(manager: str, data: dict[str, str], force: bool = False) -> client.V1ConfigMap:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "applied", "namespace": namespace},
            "data": data,
        }
        return core.patch_namespaced_config_map(
            "applied", namespace, body, field_manager=manager, force=force, _content_type="application/apply-patch+yaml"
        )

    apply("first", {"a": "1"})
    with pytest.raises(ApiException) as conflict:
        apply("second", {"a": "2"})
    assert conflict.value.status == 409
    assert apply("second", {"a": "2"}, force=True).data == {"a": "2"}
    managers = {m.manager for m in core.read_namespaced_config_map("applied", namespace).metadata.managed_fields}
    assert managers == {"second"}, "a forced apply takes the field over"


def test_rbac_denies_until_bound(api_client: client.ApiClient, kubeconfig: str, namespace: str):
    core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="reader"))
    )
    token = core.create_namespaced_service_account_token(
        "reader", namespace, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    ).status.token
    conf = client.Configuration()
    conf.host = api_client.configuration.host
    conf.ssl_ca_cert = api_client.configuration.ssl_ca_cert
    conf.verify_ssl = api_client.configuration.verify_ssl
    conf.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(conf) as as_reader:
        reader = client.CoreV1Api(as_reader)
        with pytest.raises(ApiException) as denied:
            reader.list_namespaced_config_map(namespace)
        assert denied.value.status == 403
        rbac.create_namespaced_role_binding(
            namespace,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="reader-view"),
                role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="view"),
                subjects=[client.RbacV1Subject(kind="ServiceAccount", name="reader", namespace=namespace)],
            ),
        )
        wait_until(lambda: _can_list(reader, namespace), 10, what="RoleBinding honoured")


def _can_list(core: client.CoreV1Api, namespace: str) -> bool:
    try:
        core.list_namespaced_config_map(namespace)
        return True
    except ApiException as e:
        if e.status == 403:
            return False
        raise


def test_kwok_pod_outcomes(api_client: client.ApiClient, namespace: str, local_cluster: bool):
    """The documented annotations steer simulated pods: fail, evict, stay pending, finish later, keep running."""
    if not local_cluster:
        pytest.skip("pod outcomes are simulated by the local kwok cluster only")
    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    core.create_namespaced_pod(namespace, _pod("fails", {OUTCOME: "fail", "kwok.mpi.operator/exit-code": "3"}))
    core.create_namespaced_pod(namespace, _pod("evicted", {OUTCOME: "evict"}))
    core.create_namespaced_pod(namespace, _pod("pending", {OUTCOME: "pending"}))
    core.create_namespaced_pod(namespace, _pod("bare"))
    core.create_namespaced_pod(namespace, _pod("succeeds", {OUTCOME: "succeed"}))
    batch.create_namespaced_job(namespace, _job("slow", annotations={OUTCOME_AFTER: "1h"}))
    batch.create_namespaced_job(namespace, _job("broken", annotations={OUTCOME: "fail"}, backoff_limit=0))

    def phase(name: str) -> str:
        return core.read_namespaced_pod(name, namespace).status.phase

    wait_until(lambda: phase("fails") == "Failed", 30, what="pod 'fails' Failed")
    terminated = core.read_namespaced_pod("fails", namespace).status.container_statuses[0].state.terminated
    assert terminated.exit_code == 3

    wait_until(lambda: phase("evicted") == "Failed", 30, what="pod 'evicted' Failed")
    evicted = core.read_namespaced_pod("evicted", namespace).status
    assert evicted.reason == "Evicted"
    assert any(c.type == "DisruptionTarget" and c.status == "True" for c in evicted.conditions)

    wait_until(lambda: phase("succeeds") == "Succeeded", 30, what="bare pod with outcome succeed Succeeded")
    wait_until(lambda: _job_condition(batch, "broken", namespace, "Failed"), 30, what="Job 'broken' Failed")

    # By now the default 2 s outcome delay has passed several times over: the others must still be where they were.
    pending = core.read_namespaced_pod("pending", namespace)
    assert pending.spec.node_name and pending.status.phase == "Pending", "scheduled but never started"
    assert phase("bare") == "Running", "pods not owned by a Job keep running"
    slow = core.list_namespaced_pod(namespace, label_selector="job-name=slow").items
    assert [p.status.phase for p in slow] == ["Running"], "outcome-after: 1h holds the Job's pod Running"

    core.delete_namespaced_pod("bare", namespace)
    wait_until(lambda: _gone(lambda: core.read_namespaced_pod("bare", namespace)), 30, what="pod deletion confirmed")


def test_kubeconfig_script_prints_only_the_path(local_cluster: bool):
    if not local_cluster:
        pytest.skip("checks the local cluster's scripts")
    out = subprocess.run(
        ["bash", "hack/worlds/cluster/kubeconfig.sh"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out == f"{local_kubeconfig()}\n"


@pytest.mark.slow
@pytest.mark.serial  # a second control plane: two cores' worth of start-up beside the timed tests
def test_cluster_up_recovers_from_a_killed_session(local_cluster: bool, tmp_path):
    """A second, separate cluster (own state dir and ports, same binaries): cluster-up after a kill -9 and lost pid
    files stops the leftovers and starts a working cluster; cluster-down leaves no process behind."""
    if not local_cluster:
        pytest.skip("needs the binaries of the local cluster")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bin").symlink_to(local_kubeconfig().parents[1] / "bin")
    env = {
        **os.environ,
        "MPI_OPERATOR_CACHE": str(cache),
        "MPI_CLUSTER_PORT_OFFSET": "1000",
        "MPI_CLUSTER_NODES": "1",
        "MPI_CLUSTER_REAL_NODE": "0",
    }  # one real node per machine: it belongs to the main cluster
    env.pop("KUBECONFIG", None)

    def script(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", f"hack/worlds/cluster/{name}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )

    def ours() -> set[int]:
        prefix = str(cache / "bin") + "/"
        found = set()
        for proc in os.listdir("/proc"):
            try:
                with open(f"/proc/{proc}/cmdline", "rb") as f:
                    arg0 = f.read().split(b"\0", 1)[0].decode()
            except (OSError, ValueError):
                continue
            if arg0.startswith(prefix):
                found.add(int(proc))
        return found

    host_network_before = _real_node_network()
    try:
        first = script("up.sh")
        assert first.returncode == 0, first.stderr
        started = ours()
        assert len(started) == 5, started
        # A killed session: the API server dies, every pid file is lost, the rest keeps running.
        pids = cache / "cluster" / "pids"
        os.kill(int((pids / "kube-apiserver.pid").read_text()), 9)
        for pid_file in pids.glob("*.pid"):
            pid_file.unlink()
        second = script("up.sh")
        assert second.returncode == 0, second.stderr
        assert "stopping stray etcd" in second.stderr
        assert second.stdout.strip().splitlines()[-1] == f"kubeconfig: {cache / 'cluster' / 'kubeconfig'}"
        assert not started & ours(), "leftovers of the killed session still run"
        status = script("status.sh")
        assert status.returncode == 0, status.stdout
    finally:
        down = script("down.sh")
    assert down.returncode == 0, down.stderr
    assert not ours(), "cluster-down left processes behind"
    # The second cluster has no real node: its cluster-down must leave the main node's bridge, DNAT and pods' network
    # namespaces alone (it once deleted them, and every later in-cluster operator hung on its first API call).
    assert _real_node_network() == host_network_before


def _real_node_network() -> dict[str, bool]:
    """Whether the host-wide pieces of the main cluster's real node exist: its bridge and its DNAT table."""

    def ok(*cmd: str) -> bool:
        return subprocess.run(list(cmd), capture_output=True).returncode == 0

    return {
        "bridge mpi0": ok("ip", "link", "show", "mpi0"),
        "nft table mpi_node": ok("nft", "list", "table", "ip", "mpi_node"),
    }
