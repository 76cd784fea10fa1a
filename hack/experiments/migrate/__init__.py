"""The switch between the Kubeflow MPI Operator and ours at scale (`make migrate-scale`, scale.py)."""
