"""`make chaos`: faults at scale against the operator on the local cluster, and the pieces of it that need no cluster
(mutations.py: the bad manifests of the storm, also fed to the pure core by tests/unit)."""

# Importing it makes the checkout's collection importable as ansible_collections.mpi.operator (mpijob_operator puts
# .collections on sys.path), as hack/lib does.
import mpijob_operator  # noqa: F401
