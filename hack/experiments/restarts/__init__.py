"""`make restarts`: what each kind of failure does to the same MPIJob under ours with a failure policy, ours without
one, and the Kubeflow MPI Operator v0.8.2 (docs/dev/restarts.md)."""
