"""The parts of the shell that need no API server: SSH keys, API paths, the reconcile module's argument spec
(tests/unit/docs checks every module's documentation against its spec)."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization

from ansible_collections.mpi.operator.plugins.module_utils.kube import paths, sshkeys
from ansible_collections.mpi.operator.plugins.modules import mpijob_reconcile


def test_ssh_keys_are_ecdsa_p521_like_kubeflows() -> None:
    private, public = sshkeys.generate_ssh_keys()
    assert private.startswith(b"-----BEGIN EC PRIVATE KEY-----\n")
    assert public.startswith(b"ecdsa-sha2-nistp521 ") and public.endswith(b"\n")
    key = serialization.load_pem_private_key(private, password=None)
    assert key.curve.name == "secp521r1"
    assert (
        key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        == public.strip()
    )
    assert sshkeys.generate_ssh_keys()[0] != private


def test_paths() -> None:
    assert paths.collection("v1", "Pod", "ns") == "/api/v1/namespaces/ns/pods"
    assert paths.item("batch/v1", "Job", "ns", "pi-launcher") == "/apis/batch/v1/namespaces/ns/jobs/pi-launcher"
    assert (
        paths.mpijob_path("kubeflow.org/v2beta1", "ns", "pi") == "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs/pi"
    )
    assert paths.mpijob_path("kubeflow.org/v1", "ns") == "/apis/kubeflow.org/v1/namespaces/ns/mpijobs"
    assert paths.mpijob_path("batch.test.bdap.com/v1") == "/apis/batch.test.bdap.com/v1/mpijobs"  # every namespace
    assert paths.collection("batch/v1", "Job", "") == "/apis/batch/v1/jobs"
    assert paths.item("scheduling.k8s.io/v1", "PriorityClass", "", "high") == (
        "/apis/scheduling.k8s.io/v1/priorityclasses/high"
    )  # cluster-scoped
    assert paths.collection("scheduling.volcano.sh/v1beta1", "PodGroup", "ns") == (
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups"
    )


def test_module_argument_spec_is_the_contract() -> None:
    spec = mpijob_reconcile.argspec()
    # jobs, or a warm run's batch_from (main() requires exactly one of them)
    assert not spec["jobs"].get("required") and set(spec["jobs"]["options"]) == {"namespace", "name", "api_version"}
    assert spec["batch_from"]["type"] == "path" and spec["batch_timeout"]["default"] == 300
    assert spec["gang_scheduling"]["default"] == "" and spec["cluster_domain"]["default"] == ""
    assert spec["api_key"]["no_log"] and {"kubeconfig", "context", "host"} <= set(spec)
