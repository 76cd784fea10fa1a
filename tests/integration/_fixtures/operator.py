"""Fixtures of the operator loop: the MPIJob CRD installed, and the operator started as a real subprocess
(hack/lib/operator.py's OperatorProcess: `python -m mpijob_operator`) against the test cluster; its log is
printed when a test fails."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hack.lib.operator import OperatorProcess
from tests.support.mpijob import install_crd
from tests.support.paths import ROOT


@pytest.fixture(scope="session")
def operator_crd(api_client: Any) -> None:
    install_crd(api_client)


@pytest.fixture
def operator_factory(
    kubeconfig: str, operator_crd: None, tmp_path: pathlib.Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., OperatorProcess]]:
    """Starts operators (`make_operator("--namespace", ns)`); stops them after the test and shows their logs
    when it failed."""
    started: list[OperatorProcess] = []

    def make(
        *args: str, name: str = "operator", ready: bool | float = True, root: pathlib.Path = ROOT
    ) -> OperatorProcess:
        """`ready`: wait until it is ready (for that many seconds, if a number); `root`: the source tree it runs from."""
        op = OperatorProcess(kubeconfig, tmp_path, list(args), name=name, root=root).start()
        started.append(op)
        if ready:
            op.wait_ready(60 if ready is True else ready)
        return op

    yield make
    for op in started:
        op.stop()
    report = getattr(request.node, "rep_call", None)
    if report is None or report.failed:
        for op in started:
            sys.stderr.write(f"\n----- {op.log_path.name} -----\n{op.logs()[-20000:]}\n")


@pytest.fixture
def running_operator(operator_factory: Callable[..., OperatorProcess], namespace: str) -> OperatorProcess:
    """One operator watching only this test's namespace (the namespace-scoped mode), no leader election."""
    return operator_factory("--namespace", namespace, "--no-leader-elect")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
