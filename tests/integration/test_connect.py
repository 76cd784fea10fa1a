"""The modules reach the real API server both ways module_utils/kube/ connects: urllib3 alone for a plain
kubeconfig (here a ServiceAccount token), and the kubernetes client's loader for an exec credential plugin."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import stat

import pytest
import yaml
from kubernetes import client

from tests.support.ansible import ansible_env, run_module
from tests.support.mpijob import create_mpijob, new_mpijob


def mpijob_info(kubeconfig: str | None, namespace: str, env_extra: dict | None = None, **args: object) -> dict:
    """mpi.operator.mpijob_info's result, with only these connection settings (no $KUBECONFIG, no ~/.kube)."""
    if kubeconfig is not None:
        args["kubeconfig"] = kubeconfig
    return run_module(
        "mpi.operator.mpijob_info",
        {"namespace": namespace, **args},
        ansible_env(None, **(env_extra or {})),
        timeout=120,
    )


@pytest.fixture
def service_account_token(api_client: client.ApiClient, namespace: str) -> str:
    """A token of a ServiceAccount that may read MPIJobs in `namespace` only."""
    core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "reader"}})
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": ["kubeflow.org"], "resources": ["mpijobs"], "verbs": ["get", "list"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
        },
    )
    request = core.create_namespaced_service_account_token("reader", namespace, {"spec": {"expirationSeconds": 600}})
    return request.status.token


def kubeconfig_with(admin_kubeconfig: str, user: dict, path: pathlib.Path) -> str:
    """The admin kubeconfig's cluster (server, CA) with another user."""
    doc = yaml.safe_load(pathlib.Path(admin_kubeconfig).read_text())
    cluster = doc["clusters"][0]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [cluster],
                "users": [{"name": "t", "user": user}],
                "contexts": [{"name": "t", "context": {"cluster": cluster["name"], "user": "t"}}],
            }
        )
    )
    return str(path)


@pytest.mark.integration
def test_token_and_exec_credentials_both_reach_the_api_server(
    api_client: client.ApiClient,
    operator_crd: None,
    kubeconfig: str,
    namespace: str,
    service_account_token: str,
    tmp_path: pathlib.Path,
) -> None:
    create_mpijob(api_client, namespace, new_mpijob("visible", 1))

    token_config = kubeconfig_with(kubeconfig, {"token": service_account_token}, tmp_path / "token.yaml")
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(
        "#!/bin/sh\nprintf '%s' '"
        + json.dumps(
            {
                "apiVersion": "client.authentication.k8s.io/v1",
                "kind": "ExecCredential",
                "status": {"token": service_account_token},
            }
        )
        + "'\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    exec_config = kubeconfig_with(
        kubeconfig,
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}},
        tmp_path / "exec.yaml",
    )

    for config in (token_config, exec_config):
        result = mpijob_info(config, namespace)
        assert not result["failed"], result
        assert [j["mpijob"]["metadata"]["name"] for j in result["jobs"]] == ["visible"], config

    # The token's grants are what the API server enforces: another namespace is forbidden, said clearly.
    denied = mpijob_info(token_config, "default")
    assert denied["failed"] and "forbidden" in denied["msg"].lower(), denied


def admin_credential_files(kubeconfig: str, tmp_path: pathlib.Path) -> tuple[str, str, str, str]:
    """(server, CA file, client certificate file, key file) of the admin kubeconfig."""
    doc = yaml.safe_load(pathlib.Path(kubeconfig).read_text())
    cluster, user = doc["clusters"][0]["cluster"], doc["users"][0]["user"]
    files = []
    for name, data in (
        ("ca.crt", cluster["certificate-authority-data"]),
        ("admin.crt", user["client-certificate-data"]),
        ("admin.key", user["client-key-data"]),
    ):
        (tmp_path / name).write_bytes(base64.b64decode(data))
        files.append(str(tmp_path / name))
    return cluster["server"], files[0], files[1], files[2]


@pytest.mark.integration
def test_host_client_certificate_and_ca_from_kubernetes_core_variables_without_a_kubeconfig(
    api_client: client.ApiClient,
    operator_crd: None,
    kubeconfig: str,
    namespace: str,
    tmp_path: pathlib.Path,
) -> None:
    create_mpijob(api_client, namespace, new_mpijob("visible", 1))
    server, ca, cert, key = admin_credential_files(kubeconfig, tmp_path)
    # Options as parameters; the CA only from K8S_AUTH_SSL_CA_CERT, kubernetes.core's variable.
    result = mpijob_info(None, namespace, {"K8S_AUTH_SSL_CA_CERT": ca}, host=server, client_cert=cert, client_key=key)
    assert not result["failed"], result
    assert [j["mpijob"]["metadata"]["name"] for j in result["jobs"]] == ["visible"]
    # All from the environment, with the kubernetes client's names.
    result = mpijob_info(
        None,
        namespace,
        {"K8S_AUTH_HOST": server, "K8S_AUTH_SSL_CA_CERT": ca, "K8S_AUTH_CERT_FILE": cert, "K8S_AUTH_KEY_FILE": key},
    )
    assert not result["failed"], result
    # Without the CA the server's certificate is not trusted: the variable was what made it work.
    untrusted = mpijob_info(None, namespace, host=server, client_cert=cert, client_key=key)
    assert untrusted["failed"] and "certificate" in untrusted["msg"].lower(), untrusted


@pytest.mark.integration
@pytest.mark.parametrize("transport", ["urllib3", "kubernetes-client"])
def test_impersonation_is_what_the_api_server_authorizes(
    api_client: client.ApiClient,
    operator_crd: None,
    kubeconfig: str,
    namespace: str,
    service_account_token: str,
    transport: str,
) -> None:
    create_mpijob(api_client, namespace, new_mpijob("visible", 1))
    # Two files (the same one twice) make module_utils/kube/auth.py hand the kubeconfig to the kubernetes client's loader.
    config = kubeconfig if transport == "urllib3" else f"{kubeconfig}{os.pathsep}{kubeconfig}"
    reader = f"system:serviceaccount:{namespace}:reader"
    allowed = mpijob_info(config, namespace, impersonate_user=reader, impersonate_groups=["system:serviceaccounts"])
    assert not allowed["failed"], allowed
    assert [j["mpijob"]["metadata"]["name"] for j in allowed["jobs"]] == ["visible"]
    denied = mpijob_info(config, "default", impersonate_user=reader)
    assert denied["failed"] and "forbidden" in denied["msg"].lower() and reader in denied["msg"], denied
