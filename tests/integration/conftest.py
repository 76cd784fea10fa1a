"""Integration fixtures. Each module in _fixtures/ holds the fixtures of the code that owns them (the cluster, the
install playbooks, the operator, the modules); they are imported here by name, so every integration test sees them.
The helpers the tests call go through tests/support."""

from tests.integration._fixtures.cluster import api_client, kubeconfig, local_cluster, namespace
from tests.integration._fixtures.install import install_lock, kubectl, playbook, uninstalled
from tests.integration._fixtures.operator import (
    operator_crd,
    operator_factory,
    pytest_runtest_makereport,
    running_operator,
)
from tests.integration._fixtures.reconcile import (
    kubeflow_operator,
    loop,
    podgroup_crd,
    reconcile,
    volcano_podgroup_crd,
)
from tests.integration._fixtures.submit import ansible_play, submit_playbook

__all__ = [
    "ansible_play",
    "api_client",
    "install_lock",
    "kubeconfig",
    "kubectl",
    "kubeflow_operator",
    "local_cluster",
    "loop",
    "namespace",
    "operator_crd",
    "operator_factory",
    "playbook",
    "podgroup_crd",
    "pytest_runtest_makereport",
    "reconcile",
    "running_operator",
    "submit_playbook",
    "uninstalled",
    "volcano_podgroup_crd",
]
