"""`make chaos`: faults at scale against the operator on the local cluster, and the pieces of it that need no cluster
(mutations.py: the bad manifests of the storm, also fed to the pure core by tests/unit)."""
