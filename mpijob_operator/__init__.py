# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The MPIJob operator loop: watch -> queue -> batch -> ansible-runner (mpi.operator.mpijob_reconcile).

The loop reads what the reconcile module reports with the collection's own core (module_utils/mpijob: the result
type, the API names), imported as ansible_collections.mpi.operator from the collections path on PYTHONPATH (the
image's Containerfile, hack/make/env.sh from a checkout): every module of this package may import it.
"""
import os

__version__ = "0.1.0"

# `make venv` links the checkout into <checkout>/.collections/ansible_collections/mpi/operator.
CHECKOUT_COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".collections")


def collections_paths() -> list[str]:
    """Where this collection is installed: $ANSIBLE_COLLECTIONS_PATH (the image, hack/make/env.sh), else the checkout's
    .collections (`make venv`): the collection the operator's runs use."""
    given = os.environ.get("ANSIBLE_COLLECTIONS_PATH") or os.environ.get("ANSIBLE_COLLECTIONS_PATHS") or ""
    return [p for p in [*given.split(os.pathsep), CHECKOUT_COLLECTIONS]
            if p and os.path.isdir(os.path.join(p, "ansible_collections", "mpi", "operator"))]
