"""hack/experiments/peer_e2e/peer_e2e.py's reading of the Kubeflow e2e suite's output (Ginkgo v1, -ginkgo.v), on
excerpts of real runs."""

from __future__ import annotations

import importlib.util

from tests.support.paths import ROOT

_spec = importlib.util.spec_from_file_location("peer_e2e", ROOT / "hack/experiments/peer_e2e/peer_e2e.py")
peer_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer_e2e)

T = " "  # Ginkgo ends a spec's first line with a space
SRC = "/root/go/pkg/mod/github.com/kubeflow/mpi-operator@v0.8.2/test/e2e/mpi_job_test.go"

# A pass over 5 s (its outcome line followed by the spec's tree), a pass under 5 s, a failure (pod logs, then the
# tree and the assertion), and a spec the run ended inside.
OUTPUT = f"""Running Suite: E2e Suite
========================
Random Seed: 1795836407
Will run 4 of 14 specs

STEP: Obtaining clients
MPIJob with OpenMPI implementation when has malformed command{T}
  should fail
  {SRC}:96
STEP: Creating MPIJob
STEP: Waiting for MPIJob to finish

• [SLOW TEST:6.058 seconds]
MPIJob
{SRC}:41
  with OpenMPI implementation
  {SRC}:87
    when has malformed command
    {SRC}:92
      should fail
      {SRC}:96
------------------------------
MPIJob with OpenMPI implementation when running as root when running with host network{T}
  should succeed
  {SRC}:142
STEP: Creating MPIJob
•
------------------------------
MPIJob with custom cluster-domain when running as root{T}
  should succeed
  {SRC}:579
STEP: Scale-In the deployment to 0
== BEGIN pi-worker-0 pod logs ==
Server listening on 0.0.0.0 port 2222.
== END pi-worker-0 pod logs ==

• Failure [206.809 seconds]
MPIJob
{SRC}:41
  with custom cluster-domain
  {SRC}:532
    when running as root
    {SRC}:578
      should succeed [It]
      {SRC}:579

      Expected
          <*v2beta1.JobCondition | 0x0>: nil
      not to be nil
------------------------------
MPIJob with MPICH Implementation when running as root{T}
  should succeed
  {SRC}:314
STEP: Creating MPIJob
panic: test timed out after 1h0m0s
"""


def test_each_spec_once_by_its_full_text_with_its_outcome_and_seconds() -> None:
    assert peer_e2e.parse(OUTPUT) == {
        "MPIJob with OpenMPI implementation when has malformed command should fail": {
            "outcome": "passed",
            "seconds": 6.058,
        },
        "MPIJob with OpenMPI implementation when running as root when running with host network should succeed": {
            "outcome": "passed",
            "seconds": None,
        },
        "MPIJob with custom cluster-domain when running as root should succeed": {
            "outcome": "failed",
            "seconds": 206.809,
        },
        "MPIJob with MPICH Implementation when running as root should succeed": {"outcome": "failed", "seconds": None},
    }


def test_table_puts_the_operators_side_by_side_and_marks_a_spec_one_of_them_did_not_run() -> None:
    results = {"kubeflow": peer_e2e.parse(OUTPUT), "ours": {}}
    table = peer_e2e.table(results, ["kubeflow", "ours"]).splitlines()
    assert table[0] == "| spec | kubeflow | ours |"
    assert "| MPIJob with custom cluster-domain when running as root should succeed | failed (207 s) | - |" in table


def test_a_suite_built_with_trimpath_names_its_sources_by_module_path() -> None:
    output = """------------------------------
MPIJob with OpenMPI implementation when running as root\x20
  should succeed
  github.com/kubeflow/mpi-operator@v0.8.2/test/e2e/mpi_job_test.go:108
STEP: Creating MPIJob

\u2022 [SLOW TEST:5.144 seconds]
MPIJob
github.com/kubeflow/mpi-operator@v0.8.2/test/e2e/mpi_job_test.go:41
  with OpenMPI implementation
  github.com/kubeflow/mpi-operator@v0.8.2/test/e2e/mpi_job_test.go:87
    when running as root
    github.com/kubeflow/mpi-operator@v0.8.2/test/e2e/mpi_job_test.go:107
      should succeed
      github.com/kubeflow/mpi-operator@v0.8.2/test/e2e/mpi_job_test.go:108
------------------------------
"""
    assert peer_e2e.parse(output) == {
        "MPIJob with OpenMPI implementation when running as root should succeed": {
            "outcome": "passed",
            "seconds": 5.144,
        }
    }
