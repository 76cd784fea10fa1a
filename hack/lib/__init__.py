"""What drives the operators and the cluster from outside, for the dev tools (hack/experiments/bench/bench.py, hack/experiments/peer_e2e/peer_e2e.py) and
the tests (through tests/support) alike: the checkout's paths, the environment of ansible against the checkout, the
operator and the Kubeflow MPI Operator as processes, and MPIJobs (the builder, the CRD, the API calls). Nothing
here depends on the test suite.

Importing it makes the checkout's collection importable as ansible_collections.mpi.operator (mpijob_operator puts
.collections on sys.path), which hack/lib/mpijob.py reads the MPIJob API's names from."""
import mpijob_operator  # noqa: F401
