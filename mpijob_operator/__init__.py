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
