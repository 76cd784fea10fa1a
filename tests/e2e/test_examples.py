"""The user guide's examples, run as a user runs them: each command read from its page (the README, docs/submit.md),
each manifest as written, on real pods. The namespace places its pods on the real node through the API server's own
admission plugins (PodNodeSelector, PodTolerationRestriction: hack/worlds/cluster/components.sh), so no manifest is
changed; the registry images the examples name are our local images of the same shape (hack/lib/images.py
STAND_INS), named so in the node's containerd. The one change to a command: the job's namespace."""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import sys
from collections.abc import Iterator

import pytest
from kubernetes import client

from hack.lib.images import REAL_NODE_SELECTOR, REAL_NODE_TOLERATION, STAND_INS, stand_in
from tests.e2e.conftest import JOBS_NAMESPACE, kubeconfig_path
from tests.support.ansible import ansible_env, run_playbook
from tests.support.paths import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e")]

PLACEMENT = {
    "scheduler.alpha.kubernetes.io/node-selector": ",".join(f"{k}={v}" for k, v in REAL_NODE_SELECTOR.items()),
    "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps([REAL_NODE_TOLERATION]),
}


def page_commands(page: str) -> list[list[str]]:
    """The commands of the page's ```bash blocks: continuation lines joined, comments dropped, split as a shell
    splits them."""
    commands, block, line = [], False, ""
    for text in (ROOT / page).read_text().splitlines():
        if text.startswith("```"):
            block = text.strip() == "```bash"
            continue
        if not block:
            continue
        line += text.rstrip()
        if line.endswith("\\"):
            line = line[:-1] + " "
            continue
        words = shlex.split(line, comments=True)
        line = ""
        if words:
            commands.append(words)
    return commands


def page_command(page: str, *words: str) -> list[str]:
    """The one command of `page` holding every one of `words`."""
    found = [c for c in page_commands(page) if all(w in c for w in words)]
    assert len(found) == 1, f"{page}: {len(found)} commands hold {words}: {found}"
    return found[0]


@pytest.fixture
def namespace(api: client.ApiClient, operator: None) -> Iterator[str]:
    """The operator's watched namespace, its pods placed on the real node for the test, the stand-in images named."""
    for reference in STAND_INS:
        stand_in(reference)
    core = client.CoreV1Api(api)
    core.patch_namespace(JOBS_NAMESPACE, {"metadata": {"annotations": PLACEMENT}})
    try:
        yield JOBS_NAMESPACE
    finally:
        core.patch_namespace(JOBS_NAMESPACE, {"metadata": {"annotations": dict.fromkeys(PLACEMENT)}})


def run(command: list[str], namespace: str, *extra: str):
    """The page's `ansible-playbook` command, the job in `namespace`, the modules on this Python."""
    assert command[0] == "ansible-playbook", command
    playbook, args = command[1], command[2:]
    more = ["-e", f"mpijob_namespace={namespace}", "-e", f"ansible_python_interpreter={sys.executable}", *extra]
    return run_playbook(pathlib.Path(playbook), ansible_env(kubeconfig_path()), *args, *more, timeout=600)


def delete(namespace: str, name: str) -> None:
    args = ["-e", f"mpijob_name={name}", "-e", "mpijob_state=absent"]
    run(["ansible-playbook", "playbooks/submit.yml", *args], namespace).expect_ok()


def test_the_readme_example_runs_as_written(namespace: str) -> None:
    """README: `ansible-playbook mpi.operator.submit -e mpijob_src=examples/v2beta1/pi.yaml`, Kubeflow's pi image,
    non-root."""
    command = page_command("README.md", "mpi.operator.submit", "mpijob_src=examples/v2beta1/pi.yaml")
    try:
        r = run(command, namespace)
        assert r.returncode == 0, r.output[-6000:]
        assert "Succeeded, workers" in r.output and "pi is approximately 3.14159" in r.output, r.output[-6000:]
    finally:
        delete(namespace, "pi")


def test_the_v1_hello_world_of_the_guide_runs_as_written(namespace: str) -> None:
    command = page_command("docs/submit.md", "mpijob_src=examples/v1/openmpi-helloworld.yaml")
    try:
        r = run(command, namespace)
        assert r.returncode == 0, r.output[-6000:]
        assert r.output.count("Hello world from processor") >= 2, r.output[-6000:]
    finally:
        delete(namespace, "openmpi-helloworld")


def test_the_short_form_of_the_guide_runs_as_written(namespace: str) -> None:
    """docs/submit.md's short form: no manifest, the image and the mpirun command alone."""
    command = page_command("docs/submit.md", "mpijob_name=pi", "mpijob_workers=2")
    try:
        r = run(command, namespace)
        assert r.returncode == 0, r.output[-6000:]
        assert "pi is approximately 3.14159" in r.output, r.output[-6000:]
    finally:
        delete(namespace, "pi")


# make e2e runs the workload examples too (MPI_E2E_WORKLOADS=1); make test runs the guide's commands above and leaves
# these four (5 minutes on the 2-core machine, beside the rest of the e2e chain) to it.
WORKLOADS = os.environ.get("MPI_E2E_WORKLOADS") == "1"


@pytest.mark.skipif(not WORKLOADS, reason="the workload examples run in make e2e (MPI_E2E_WORKLOADS=1)")
@pytest.mark.parametrize(
    ("example", "printed"),
    [
        ("pi-intel", "pi is approximately 3.14159"),
        ("pi-mpich", "pi is approximately 3.14159"),
        ("horovod-pytorch", "trained on 2 ranks: final loss"),
        # its image built from its own Containerfile (hack/lib/images.py STAND_INS)
        ("mpi4py", "sum of the ranks 1, expected 1"),
    ],
)
def test_the_workload_examples_run_as_written(namespace: str, example: str, printed: str) -> None:
    """The command each example's header gives (`# Submit:`), the manifest as written."""
    path = ROOT / f"examples/v2beta1/{example}.yaml"
    header = next(line for line in path.read_text().splitlines() if line.startswith("# Submit:"))
    command = shlex.split(header.removeprefix("# Submit:"))
    try:
        r = run(command, namespace)
        assert r.returncode == 0, r.output[-6000:]
        assert printed in r.output, r.output[-6000:]
    finally:
        delete(namespace, example)
