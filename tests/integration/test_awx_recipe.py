"""docs/install.md's AWX job template recipe (examples/awx): its wrapper playbook installs the operator, then
uninstall.yml removes it, with the cluster given only as AWX's Kubernetes bearer-token credential gives it
(K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT; no kubeconfig), from a ServiceAccount's
token."""

from __future__ import annotations

import base64
import pathlib
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client

from tests.integration._fixtures.install import INSTALL_NAMESPACE, local_cluster_vars
from tests.support.ansible import ansible_env, run_playbook
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("installs")]


@pytest.fixture
def awx_credential(
    api_client: client.ApiClient, namespace: str, kubeconfig: str, tmp_path: pathlib.Path
) -> Iterator[dict]:
    """The environment AWX gives a job with a bearer-token credential: a ServiceAccount bound to cluster-admin (what
    an install needs: it creates CRDs and ClusterRoles), its token, the cluster's CA in a file."""
    core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "awx"}})
    binding = f"awx-installer-{namespace}"
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": binding},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "awx", "namespace": namespace}],
        }
    )
    token = core.create_namespaced_service_account_token("awx", namespace, {"spec": {"expirationSeconds": 1200}})
    cluster = yaml.safe_load(pathlib.Path(kubeconfig).read_text())["clusters"][0]["cluster"]
    ca = tmp_path / "ca.crt"
    ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    try:
        yield {
            "K8S_AUTH_HOST": cluster["server"],
            "K8S_AUTH_API_KEY": token.status.token,
            "K8S_AUTH_VERIFY_SSL": "True",
            "K8S_AUTH_SSL_CA_CERT": str(ca),
        }
    finally:
        rbac.delete_cluster_role_binding(binding)


def test_the_awx_wrapper_installs_and_uninstall_removes_with_the_credential_alone(
    awx_credential: dict,
    uninstalled: None,
    operator_crd: None,
    api_client: client.ApiClient,
    kubeconfig: str,
    tmp_path: pathlib.Path,
) -> None:
    env = ansible_env(None, **awx_credential)
    install_vars = local_cluster_vars(kubeconfig)
    run = run_playbook(
        ROOT / "examples/awx/install.yml", env, variables=install_vars, vars_file=tmp_path / "vars.json"
    ).expect_ok()
    assert run.recap["changed"] > 0
    assert awx_credential["K8S_AUTH_API_KEY"] not in run.output
    apps = client.AppsV1Api(api_client)
    deployment = apps.read_namespaced_deployment("mpi-operator", INSTALL_NAMESPACE)
    assert deployment.status.available_replicas == 1
    # Again: nothing changes (what a scheduled AWX job does every night)
    run_playbook(
        ROOT / "examples/awx/install.yml", env, variables=install_vars, vars_file=tmp_path / "vars.json"
    ).expect_unchanged()
    run_playbook(
        ROOT / "playbooks/uninstall.yml", env, variables=install_vars, vars_file=tmp_path / "vars.json"
    ).expect_ok()
