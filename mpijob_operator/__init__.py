"""The MPIJob operator loop: watch -> queue -> batch -> ansible-runner (mpi.operator.mpijob_reconcile)."""

__version__ = "0.1.0"
