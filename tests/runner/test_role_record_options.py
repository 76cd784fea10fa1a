"""The operator role refuses a record size that is not a size and an accelerator name that is not an extended
resource, naming the variable, before it talks to any cluster (ansible-playbook, no cluster)."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

from tests.support.ansible import ansible_env, run_playbook

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.import_role:
        name: mpi.operator.operator
"""


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"mpi_operator_record_pod_bytes": "8KB"}, "mpi_operator_record_pod_bytes and mpi_operator_record_total_bytes"),
        ({"mpi_operator_record_total_bytes": "lots"}, 'and \\"lots\\")'),
        ({"mpi_operator_accelerators": ["gpu"]}, "Each of mpi_operator_accelerators must be an extended resource"),
        ({"mpi_operator_accelerators": ["kubernetes.io/gpu"]}, "(got ['kubernetes.io/gpu'])"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(tmp_path: pathlib.Path, variables: dict, named: str) -> None:
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    run = run_playbook(
        play,
        ansible_env("/nonexistent-kubeconfig"),
        "-i",
        "localhost,",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        variables=variables,
        vars_file=tmp_path / "vars.json",
    )
    assert run.returncode != 0, run.output
    assert "Check the record's sizes and the accelerators" in run.output and named in run.output, run.output
    assert json.dumps(variables) == (tmp_path / "vars.json").read_text()
