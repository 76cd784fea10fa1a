"""hack/images/build.sh with throw-away recipes (no base system, so no debootstrap): a step of a recipe that fails
fails the build and packs nothing, instead of caching and importing a broken image."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("debootstrap") or not shutil.which("ctr"),
    reason="build.sh needs root, debootstrap and ctr (installed by `make cluster-up` where the machine allows)",
)


def build(tmp_path: pathlib.Path, customize: str) -> subprocess.CompletedProcess[str]:
    images = tmp_path / "hack/images"
    shutil.copytree(ROOT / "hack/images", images)
    (images / "recipes/scratch.sh").write_text(
        f'image=scratch\nsuite=\npackages=\nimage_config=\'{{"Cmd":["/x"]}}\'\ncustomize() {{ {customize}; }}\n'
    )
    env = dict(os.environ, MPI_OPERATOR_CACHE=str(tmp_path / "cache"))
    return subprocess.run(["bash", str(images / "build.sh"), "--no-import", "--print", "scratch"],
                          env=env, capture_output=True, text=True, timeout=60)


def test_a_recipe_builds_into_a_cached_tar(tmp_path):
    proc = build(tmp_path, 'echo hi > "$1/x"')
    assert proc.returncode == 0, proc.stderr
    ref, tar, _ = proc.stdout.split()
    assert ref == "localhost/scratch:local" and pathlib.Path(tar).is_file()


def test_a_failing_recipe_step_fails_the_build(tmp_path):
    proc = build(tmp_path, 'false; echo packed anyway > "$1/x"')
    assert proc.returncode != 0, proc.stdout
    assert not list((tmp_path / "cache/images").glob("scratch-*.tar"))
