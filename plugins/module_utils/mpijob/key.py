"""A job's key: which MPIJob a queue entry, a watch event, a run and a result are about."""
from __future__ import annotations

from typing import NamedTuple

from .apis import by_group, group_of, storage_api_version


class Key(NamedTuple):
    """One MPIJob: its namespace, its name and its API's storage apiVersion. Two APIs may each have a job of the same
    name in one namespace: two keys. One API's versions name the same job (kubeflow.org's v1 and v2beta1): one key."""

    namespace: str
    name: str
    api_version: str


def job_key(namespace: str, name: str, api_version: str | None = None) -> Key:
    """The key of a job named with any served apiVersion of its API. None is kubeflow.org: the short form of
    mpijob_reconcile's `jobs` entries and results, which leave kubeflow.org's apiVersion out. An apiVersion of an API
    not served here is kept as it is (nothing reconciles such a job; the module refuses it)."""
    if api_version and by_group(group_of(api_version)) is None:
        return Key(namespace, name, api_version)
    return Key(namespace, name, storage_api_version(api_version))
