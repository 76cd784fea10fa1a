# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The `api_version` option of the modules that name an existing MPIJob (mpijob, mpijob_info, mpijob_wait)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  api_version:
    description:
      - The API of the job named by O(name) when it is not C(kubeflow.org) (whose V(kubeflow.org/v2beta1) and
        V(kubeflow.org/v1) jobs are the same objects). Either V(batch.tensorstack.dev/v1beta1), T9k's MPIJob, or
        V(batch.test.bdap.com/v1), the kubebuilder MPI operator's. C(docs/apis.md) of the collection describes them.
      - M(mpi.operator.mpijob) given a manifest (O(mpi.operator.mpijob#module:src), O(mpi.operator.mpijob#module:definition)
        or O(mpi.operator.mpijob#module:template)) takes the job's API from its C(apiVersion); this option is not
        needed then.
    type: str
    aliases: [apiVersion]
"""
