"""meta/execution-environment.yml as ansible-builder reads it from the installed collection, and examples/ee's EE
definition (the one docs/install.md shows) with the built tarball makes a build context. The image itself is built by
hack/build/ee.sh and run by ansible-navigator in tests/integration/test_navigator.py."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest
import yaml
from packaging.requirements import Requirement

from tests.support.ansible import ansible_env
from tests.support.paths import ROOT

from ._support import VENV_BIN


def requirements(path: pathlib.Path) -> dict[str, Requirement]:
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return {(r := Requirement(line)).name.lower(): r for line in lines if line and not line.startswith("-")}


def test_the_ci_pins_are_inside_the_declared_ranges() -> None:
    """requirements.txt (what CI and the operator image test) must be a version the EE ranges allow."""
    pins, ranges = requirements(ROOT / "requirements.txt"), requirements(ROOT / "meta/ee-requirements.txt")
    for name, declared in ranges.items():
        assert name in pins, f"{name}: declared for EEs but not tested (not in requirements.txt)"
        pinned = next(iter(pins[name].specifier)).version if pins[name].specifier else None
        if pinned and str(next(iter(pins[name].specifier)).operator) == "==":
            assert declared.specifier.contains(pinned), f"{name}: the tested {pinned} is outside {declared}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    """(the tarball, a collections path holding it installed with kubernetes.core)."""
    base = tmp_path_factory.mktemp("ee")
    env = ansible_env(ANSIBLE_CONFIG=str(base / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(base / "collections"))
    (base / "ansible.cfg").write_text("")
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(base), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    tarball = next(base.glob("mpi-operator-*.tar.gz"))
    kc = (ROOT / ".collections/ansible_collections/kubernetes/core").resolve()
    shutil.copytree(kc, base / "collections/ansible_collections/kubernetes/core")
    proc = subprocess.run(
        [
            str(VENV_BIN / "ansible-galaxy"),
            "collection",
            "install",
            "--offline",
            "-p",
            str(base / "collections"),
            str(tarball),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tarball, base / "collections"


def test_ansible_builder_reads_the_collection_requirements(built: tuple[pathlib.Path, pathlib.Path]) -> None:
    _, collections = built
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-builder"), "introspect", str(collections)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    found = yaml.safe_load(proc.stdout.split("\n", 1)[1])
    ours = sorted(
        line.split("#")[0].strip() for line in found["python"] if line.endswith("from collection mpi.operator")
    )
    # PyYAML is left out by ansible-builder itself (ansible-core brings it).
    assert ours == ["cryptography>=42", "kubernetes>=30.0"], found


def test_ansible_builder_creates_a_build_context_for_an_ee_with_the_tarball(
    built: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    tarball, _ = built
    shutil.copy(tarball, tmp_path / tarball.name)
    # examples/ee as docs/install.md shows it (the page holds the definition as written), with this build's tarball.
    definition = (ROOT / "examples/ee/execution-environment.yml").read_text()
    doc = (ROOT / "docs/install.md").read_text()
    assert doc.split("<!-- examples/ee/execution-environment.yml -->\n```yaml\n", 1)[1].split("```", 1)[0] == definition
    (tmp_path / "execution-environment.yml").write_text(definition.replace("mpi-operator-0.1.0.tar.gz", tarball.name))
    requirements = (ROOT / "examples/ee/requirements.yml").read_text()
    (tmp_path / "requirements.yml").write_text(requirements.replace("mpi-operator-0.1.0.tar.gz", tarball.name))
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "-c", "context"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    context = tmp_path / "context"
    assert (context / "_build" / tarball.name).is_file()
    assert "kubernetes.core" in (context / "_build/requirements.yml").read_text()
    containerfile = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()).read_text()
    assert "ansible-galaxy" in containerfile or "assemble" in containerfile
