# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The filters of the role mpi.operator.migrate: its decisions, made by the pure module_utils/migration.py from what
the role read (documented in migration_*.yml beside this file)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ..module_utils import migration as M


def _plain(value: Any) -> Any:
    """Ansible's lazy containers and tagged strings as plain JSON data."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def migration_queries(first: Any = None, namespace: str = "") -> list:
    """No argument: what to read first; with the first read's results (and this install's namespace): what next."""
    return M.queries_first() if first is None else M.queries_second(_plain(first), str(namespace or ""))


def migration_settings(first: list, values: Any = None, direction: str = M.OURS) -> dict:
    if direction not in M.DIRECTIONS:
        raise AnsibleFilterError(f"migration_settings: direction must be one of {M.DIRECTIONS}, got {direction!r}")
    return M.migration_settings(_plain(first or []), _plain(values), direction)


def migration_plan(first: list, second: list, direction: str = M.OURS, **kwargs: Any) -> dict:
    return M.plan(direction, _plain(first or []), _plain(second or []), **_plain(kwargs))


def migration_pending(jobs: list, keys: list) -> list:
    return M.pending(_plain(jobs or []), _plain(keys or []))


def migration_leader(lease: Any, pods: list) -> str:
    return M.leader(_plain(lease), _plain(pods or []))


class FilterModule:
    def filters(self) -> dict:
        return {
            "migration_queries": migration_queries,
            "migration_settings": migration_settings,
            "migration_plan": migration_plan,
            "migration_pending": migration_pending,
            "migration_leader": migration_leader,
        }
