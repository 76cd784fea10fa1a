"""Every test's setup: the checkout's collection for the ansible tools, and the tiers. pytest.ini's pythonpath makes the
checkout (hack.lib, tests.support, mpijob_operator) and the collection (ansible_collections.mpi.operator) importable."""

from __future__ import annotations

import os
import pathlib

import pytest
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".collections")
if not os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "mpi", "operator")):
    raise RuntimeError("run `make venv` first: .collections/ansible_collections/mpi/operator is missing")
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", COLLECTIONS)
os.environ.setdefault("ANSIBLE_CONFIG", os.path.join(ROOT, "ansible.cfg"))
# Ansible's own collection loader, as ansible-playbook and ansible-test install it, before anything imports the
# collection: the role templates the unit tests render with Ansible's templar find this collection's plugins (the
# lookup mpi.operator.mpijob_apis) as a play would.
_AnsibleCollectionFinder(paths=[COLLECTIONS])._install()


# The tiers, by what a test needs: each folder is one tier, named as the folder, and its tests get that marker. A
# test that needs more than its folder's tier says so with the other tier's marker (an integration test that needs
# the real node: e2e) and runs with that tier. hack/make/test.sh TIER (`make test-TIER`) selects one tier alone.
TIERS = ("unit", "runner", "integration", "e2e", "kueue")
TESTS = pathlib.Path(__file__).resolve().parent


def pytest_itemcollected(item):
    folder = pathlib.Path(item.path).resolve().relative_to(TESTS).parts[0]
    if folder in TIERS:
        item.add_marker(getattr(pytest.mark, folder))


# The groups of tests that one worker runs one after the other (`xdist_group`), longest first: under
# `pytest -n N --dist loadgroup --no-loadscope-reorder` (hack/make/test.sh) the workers take work in this order, so the
# longest chains start first and the short independent tests fill the other workers around them.
LONGEST_FIRST = ("installs", "e2e", "e2e-elastic", "kubeflow-peer")
# The background build each group's tests wait for (hack/make/test.sh), or a test's own (`needs_build(NAME)`): on a fresh
# machine the cluster tiers start while these still build, and hack/make/test.sh names them in MPI_TEST_BUILDING. A group
# whose every test waits then goes after two thirds of the ungrouped tests instead of blocking a worker from the
# start; in a group where only some tests wait, those go to the group's end and the group keeps its place (the `e2e`
# group: only the batch.test.bdap.com Horovod test runs Horovod, and deferring the whole group left it running alone
# at the end of a cold run, the machine mostly idle in its last ten minutes).
NEEDS_BUILD = {"e2e-elastic": "horovod", "kubeflow-peer": "kubeflow-peer", "gang": "scheduler-plugins"}


def _group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return (mark.kwargs.get("name") or (mark.args[0] if mark.args else None)) if mark else None


def _needs(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("needs_build")
    return mark.args[0] if mark else NEEDS_BUILD.get(_group(item) or "")


def suite_order(items: list[pytest.Item], building: set[str]) -> list[pytest.Item]:
    """The groups longest first, then the ungrouped tests, those groups whose build is still going after two thirds of
    those (in other groups, the tests that wait for a build at the group's end), and the image-archive tests last. The image-archive tests import the operator's image content under other
    names, and in a full run the next in-cluster install on the real node then got ErrImageNeverPull for the build's
    own tag (containerd 1.6's CRI; not root-caused yet), so nothing that installs from the build runs after them
    (hack/make/test.sh runs them in its serial phase, after every parallel one)."""

    def rank(item: pytest.Item) -> int:
        group = _group(item)
        return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)

    last = [i for i in items if i.nodeid.startswith("tests/e2e/test_image_archive.py")]

    def waits(item: pytest.Item) -> bool:
        return _needs(item) in building

    # Sorted by rank, then the tests that wait after the others of their rank (a group's first test, which places
    # the group, stays the first of its group that does not wait).
    rest = sorted((i for i in items if i not in last), key=lambda i: (rank(i), waits(i)))
    whole = {_group(i) for i in rest if _group(i)} - {_group(i) for i in rest if _group(i) and not waits(i)}
    waiting = [i for i in rest if _group(i) in whole or (_group(i) is None and waits(i))]
    ready = [i for i in rest if i not in waiting]
    ungrouped = [i for i in ready if rank(i) == len(LONGEST_FIRST)]
    cut = len(ready) - len(ungrouped) // 3
    return ready[:cut] + waiting + ready[cut:] + last


def pytest_collection_modifyitems(session, config, items):
    items[:] = suite_order(items, set(os.environ.get("MPI_TEST_BUILDING", "").split()))
