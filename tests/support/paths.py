"""Where the tests find the checkout, this machine's cache and the tools in it (hack/lib/paths.py: the hack/
scripts' $MPI_OPERATOR_CACHE, ~/.cache/mpi-operator unless set, which holds the cluster's binaries and state, the
images and the peers' builds). CACHE is read once, at import; cache() when called: a test may point a subprocess,
never this process, at another cache."""

from __future__ import annotations

import os
import shutil

from hack.lib.paths import ROOT, cache, local_kubeconfig

__all__ = ["CACHE", "ROOT", "cache", "kubectl_path", "local_kubeconfig"]

CACHE = cache()


def kubectl_path() -> str:
    """The kubectl built for the local cluster, else one on PATH."""
    for candidate in (os.environ.get("KUBECTL"), str(cache() / "bin/kubectl"), shutil.which("kubectl")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("kubectl not found: run `make cluster-up` (it builds $CACHE/bin/kubectl)")
