# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Where each kind lives on a cluster, from its discovery documents (the k8s_objects and k8s_read modules)."""

from __future__ import annotations

from .. import objects as O
from ..mpijob.errors import SubmitError
from .paths import group_path
from .rest import Rest


class Kinds:
    """Where each kind lives, from the API server's discovery, one request per API group version."""

    def __init__(self, rest: Rest):
        self.rest = rest
        self._groups: dict[str, dict[str, tuple[str, bool]] | None] = {}

    def find(self, api_version: str, kind: str) -> tuple[str, bool] | None:
        if api_version not in self._groups:
            doc = self.rest.get(group_path(api_version))
            self._groups[api_version] = O.resources(doc) if doc is not None else None
        return (self._groups[api_version] or {}).get(kind)

    def path(self, obj: dict) -> str:
        api_version, kind, namespace, name = O.ref(obj)
        found = self.find(api_version, kind)
        if found is None:
            raise SubmitError(
                f"{O.label(obj)}: the cluster serves no kind {kind} in {api_version} (is its CRD installed?)"
            )
        plural, namespaced = found
        if namespaced and not namespace:
            raise SubmitError(f"{O.label(obj)}: metadata.namespace is required for a {kind}")
        return O.path(api_version, plural, namespaced, namespace, name)
