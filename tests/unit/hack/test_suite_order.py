"""The order tests/conftest.py gives the suite's tests: the xdist groups longest first, the groups whose build is still
going (hack/make/test.sh's MPI_TEST_BUILDING) after two thirds of the ungrouped tests (in a group where only some tests
wait for a build, those at the group's end), the image-archive tests last."""

from __future__ import annotations

import dataclasses

import pytest

from tests.conftest import suite_order


@dataclasses.dataclass(eq=False)
class Item:
    nodeid: str
    group: str | None = None
    needs: str | None = None  # its own needs_build marker

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        if name == "needs_build":
            return pytest.mark.needs_build(self.needs).mark if self.needs else None
        assert name == "xdist_group"
        return pytest.mark.xdist_group(self.group).mark if self.group else None


def ids(items: list[Item]) -> list[str]:
    return [i.nodeid for i in items]


ITEMS = [
    Item("tests/e2e/test_image_archive.py::test_load"),
    Item("tests/integration/test_a.py::test_1"),
    Item("tests/e2e/test_elastic.py::test_resize", "e2e-elastic"),
    Item("tests/integration/test_a.py::test_2"),
    Item("tests/integration/test_reconcile_kubeflow.py::test_peer", "kubeflow-peer"),
    Item("tests/e2e/test_apis.py::test_seed", "e2e"),
    Item("tests/e2e/test_apis.py::test_horovod", "e2e", needs="horovod"),
    Item("tests/e2e/test_mpijobs.py::test_pi", "e2e"),
    Item("tests/integration/test_b.py::test_3"),
    Item("tests/integration/test_install.py::test_install", "installs"),
    Item("tests/integration/test_b.py::test_4"),
    Item("tests/integration/test_b.py::test_5"),
    Item("tests/integration/test_b.py::test_6"),
]


def test_with_every_build_done_the_longest_groups_come_first_and_the_image_archive_last() -> None:
    assert ids(suite_order(ITEMS, set())) == [
        "tests/integration/test_install.py::test_install",
        "tests/e2e/test_apis.py::test_seed",
        "tests/e2e/test_apis.py::test_horovod",
        "tests/e2e/test_mpijobs.py::test_pi",
        "tests/e2e/test_elastic.py::test_resize",
        "tests/integration/test_reconcile_kubeflow.py::test_peer",
        "tests/integration/test_a.py::test_1",
        "tests/integration/test_a.py::test_2",
        "tests/integration/test_b.py::test_3",
        "tests/integration/test_b.py::test_4",
        "tests/integration/test_b.py::test_5",
        "tests/integration/test_b.py::test_6",
        "tests/e2e/test_image_archive.py::test_load",
    ]


def test_groups_waiting_for_a_build_go_after_two_thirds_of_the_ungrouped_tests() -> None:
    # The e2e group keeps its place (only one of its tests waits for Horovod: it goes to the group's end); the
    # e2e-elastic group, every test of which waits, goes after two thirds of the ungrouped tests.
    assert ids(suite_order(ITEMS, {"horovod"})) == [
        "tests/integration/test_install.py::test_install",
        "tests/e2e/test_apis.py::test_seed",
        "tests/e2e/test_mpijobs.py::test_pi",
        "tests/e2e/test_apis.py::test_horovod",
        "tests/integration/test_reconcile_kubeflow.py::test_peer",
        "tests/integration/test_a.py::test_1",
        "tests/integration/test_a.py::test_2",
        "tests/integration/test_b.py::test_3",
        "tests/integration/test_b.py::test_4",
        "tests/e2e/test_elastic.py::test_resize",
        "tests/integration/test_b.py::test_5",
        "tests/integration/test_b.py::test_6",
        "tests/e2e/test_image_archive.py::test_load",
    ]
    # The peer's group, waiting too: after the same two thirds, behind the Horovod ones (their order among groups).
    peer = "tests/integration/test_reconcile_kubeflow.py::test_peer"
    expected = [n for n in ids(suite_order(ITEMS, {"horovod"})) if n != peer]
    expected.insert(expected.index("tests/integration/test_b.py::test_5"), peer)
    assert ids(suite_order(ITEMS, {"horovod", "kubeflow-peer"})) == expected
