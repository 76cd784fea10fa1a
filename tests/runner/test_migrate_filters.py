"""The role mpi.operator.migrate's filters run by Ansible itself (ansible ad hoc, the collection's filter plugins
loaded as a play loads them): a chart's values.yaml read from a file and carried over, and a plan made from read
results, through Ansible's own types (lazy containers, tagged strings). The decisions themselves are unit-tested
(tests/unit/module_utils/test_migration.py)."""

from __future__ import annotations

import json
import pathlib

from tests.support.ansible import ansible_env, run_module

KUBEFLOW = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "mpi-operator", "namespace": "mpi-operator", "labels": {"app": "mpi-operator"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "mpi-operator"}},
        "template": {
            "spec": {
                "containers": [
                    {"name": "mpi-operator", "image": "mpioperator/mpi-operator:0.8.2", "args": ["--namespace=team"]}
                ]
            }
        },
    },
}
# The cloud vendor chart's documented keys, and one it does not have.
VALUES = """\
image:
  repository: ccr.ccs.tencentyun.com/tke-market/mpi-operator
  tag: "latest"
namespace:
  create: false
  name: ml-system
podMonitor:
  enabled: true
"""


def _debug(msg: str, variables: dict, tmp_path: pathlib.Path) -> object:
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(variables))
    result = run_module("ansible.builtin.debug", {"msg": msg}, ansible_env(), "-e", f"@{vars_file}")
    assert not result["failed"], result
    return result["msg"]


def test_values_file_carried_over(tmp_path: pathlib.Path) -> None:
    (tmp_path / "values.yaml").write_text(VALUES)
    carried = _debug(
        "{{ first | mpi.operator.migration_settings(lookup('ansible.builtin.file', values) | ansible.builtin.from_yaml) }}",
        {"first": [{"kind": "Deployment", "resources": [KUBEFLOW]}], "values": str(tmp_path / "values.yaml")},
        tmp_path,
    )
    assert carried["variables"] == {
        "mpi_operator_namespace_name": "ml-system",
        "mpi_operator_namespace_create": False,
        "mpi_operator_watch_namespace": "team",
    }
    assert carried["sources"]["mpi_operator_watch_namespace"] == "Deployment mpi-operator/mpi-operator: --namespace"
    assert carried["unknown"] == ["podMonitor.enabled"]
    assert carried["previous_image"] == "ccr.ccs.tencentyun.com/tke-market/mpi-operator:latest"


def test_plan_through_ansible(tmp_path: pathlib.Path) -> None:
    plan = _debug(
        "{{ first | mpi.operator.migration_plan([], 'ours', settings={'mpi_operator_namespace_name': 'mpi-operator'}) }}",
        {
            "first": [
                {"kind": "Deployment", "resources": [KUBEFLOW]},
                {"kind": "CustomResourceDefinition", "resources": []},
            ]
        },
        tmp_path,
    )
    assert plan["refusals"] == ["the CRD mpijobs.kubeflow.org is not installed: there are no MPIJobs to migrate"]
    assert plan["lines"][0] == "Switch the MPIJobs of namespace team from the Kubeflow MPI Operator to mpi.operator"
    queries = _debug("{{ none | mpi.operator.migration_queries }}", {}, tmp_path)
    assert {"api_version": "apps/v1", "kind": "Deployment"} in queries
