"""The one helper library the dev tools (hack/experiments: bench, chaos, peer_e2e) and the tests (through
tests/support) share: the checkout's paths, the environment of ansible against the checkout, the operator and the
Kubeflow MPI Operator as processes, the local images, MPIJobs (the builder, the CRD, the API calls) and polling.
Nothing here depends on the test suite."""
