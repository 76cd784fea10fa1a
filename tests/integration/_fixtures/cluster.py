"""The Kubernetes API server that integration tests run against.

$KUBECONFIG wins when it points at a reachable cluster (a user's kind cluster, say); otherwise the local cluster is
started (and built the first time) through the one entry point, `hack/worlds/cluster/up.sh`.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from hack.lib.wait import wait_until
from tests.support.paths import ROOT, local_kubeconfig

_UP = ROOT / "hack/worlds/cluster/up.sh"


def _reachable(kubeconfig: str | None) -> bool:
    """True when the cluster of this kubeconfig (None: $KUBECONFIG, with its merging rules) answers /version."""
    try:
        api = config.new_client_from_config(config_file=kubeconfig)
    except Exception:  # any broken kubeconfig means "not usable", and we fall back to the local cluster
        return False
    try:
        client.VersionApi(api).get_code(_request_timeout=5)
        return True
    except Exception:  # unreachable, refused, TLS or auth errors all mean the same here
        return False
    finally:
        api.close()


def _start_local_cluster() -> str:
    proc = subprocess.run(["bash", str(_UP)], capture_output=True, text=True, timeout=3600, check=False)
    if proc.returncode != 0:
        pytest.fail(
            f"hack/worlds/cluster/up.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}{proc.stdout[-2000:]}"
        )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    path = last.removeprefix("kubeconfig: ").strip()
    if not path or not os.path.isfile(path):
        pytest.fail(f"hack/worlds/cluster/up.sh did not end with 'kubeconfig: <path>' (got {last!r})")
    return path


@pytest.fixture(scope="session")
def kubeconfig() -> str:
    """Path of a cluster-admin kubeconfig, also exported as KUBECONFIG and K8S_AUTH_KUBECONFIG for subprocesses."""
    user = os.environ.get("KUBECONFIG")
    # The local cluster always goes through up.sh: it is quick when healthy, and repairs it when not. Unless
    # hack/make/test.sh has just brought it up for every worker of this run (MPI_TEST_CLUSTER_UP): one up.sh per worker
    # would be one more chance for a check on a busy machine to restart the cluster under the other workers.
    ours = bool(user) and os.path.realpath(user) == os.path.realpath(local_kubeconfig())
    up = os.environ.get("MPI_TEST_CLUSTER_UP")
    if up and os.path.realpath(up) == os.path.realpath(local_kubeconfig()) and _reachable(up):
        path = up
    else:
        path = user if user and not ours and _reachable(None) else _start_local_cluster()
    os.environ["KUBECONFIG"] = path
    os.environ["K8S_AUTH_KUBECONFIG"] = path
    return path


@pytest.fixture(scope="session")
def local_cluster(kubeconfig: str) -> bool:
    """True when the tests run against the local kwok cluster of hack/worlds/cluster (not a user's own cluster)."""
    return os.path.realpath(kubeconfig) == os.path.realpath(local_kubeconfig())


@pytest.fixture(scope="session")
def api_client(kubeconfig: str) -> Iterator[client.ApiClient]:
    """A kubernetes ApiClient for the test cluster."""
    api = config.new_client_from_config(config_file=None if ":" in kubeconfig else kubeconfig)
    yield api
    api.close()


def _namespace_name(test_name: str) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].rstrip("-")
    return f"t-{stem}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(api_client: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test (named after it), deleted afterwards without waiting."""
    core = client.CoreV1Api(api_client)
    name = _namespace_name(request.node.name)
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={"mpi.operator/test": "true"}))
    )

    def default_service_account() -> bool:
        try:
            return bool(core.read_namespaced_service_account("default", name))
        except ApiException as e:
            if e.status == 404:
                return False
            raise

    # Pods are refused until the service-account controller has made the namespace's default ServiceAccount.
    wait_until(default_service_account, 30, what=f"ServiceAccount default in {name}")
    yield name
    try:
        core.delete_namespace(name, propagation_policy="Background")
    except ApiException as e:
        if e.status != 404:
            raise
