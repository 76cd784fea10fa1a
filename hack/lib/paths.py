"""Where the checkout is and this machine's cache: the hack/ scripts' $MPI_OPERATOR_CACHE (~/.cache/mpi-operator
unless set), which holds the cluster's binaries and state, the images and the peers' builds."""

from __future__ import annotations

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cache() -> pathlib.Path:
    """Read when called: a caller may point a subprocess, never this process, at another cache."""
    return pathlib.Path(os.environ.get("MPI_OPERATOR_CACHE") or pathlib.Path.home() / ".cache/mpi-operator")


def local_kubeconfig() -> pathlib.Path:
    """Where hack/worlds/cluster/up.sh writes the local cluster's cluster-admin kubeconfig."""
    return cache() / "cluster" / "kubeconfig"
