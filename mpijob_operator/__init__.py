"""The MPIJob operator loop: watch -> queue -> batch -> ansible-runner (mpi.operator.mpijob_reconcile).

The loop reads what the reconcile module reports with the collection's own core (module_utils/mpijob: the result
contract, the API names), imported from the collection its runs use.
"""
import os
import sys

__version__ = "0.1.0"

# `make venv` links the checkout into <checkout>/.collections/ansible_collections/mpi/operator.
CHECKOUT_COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".collections")


def collections_path() -> list[str]:
    """Where the runs' ansible finds collections: $ANSIBLE_COLLECTIONS_PATH (the operator image sets it), else the
    checkout's, else ansible's defaults."""
    configured = [p for p in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if p]
    if configured:
        return configured
    if os.path.isdir(CHECKOUT_COLLECTIONS):
        return [CHECKOUT_COLLECTIONS]
    return [os.path.expanduser("~/.ansible/collections"), "/usr/share/ansible/collections"]


def _import_the_collection() -> None:
    """Makes `ansible_collections.mpi.operator` importable from the first collections path that has it (else from
    sys.path as it is: a collection installed into site-packages)."""
    for path in collections_path():
        if os.path.isdir(os.path.join(path, "ansible_collections", "mpi", "operator")):
            if path not in sys.path:
                sys.path.insert(0, path)
            return


_import_the_collection()
