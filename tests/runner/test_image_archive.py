"""hack/build/images/archive.py (one cached build handed out under any name) and hack/build/images/image.sh's choices,
without building anything: the archive keeps the docker-save layout and every byte but the name; bad settings fail at
once, naming the setting. (tests/e2e/test_image_archive.py loads a real archive into the real node's containerd.)"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest

from hack.build.images.archive import retag
from hack.build.images.pack import pack
from tests.support.paths import ROOT

IMAGES = ROOT / "hack/build/images"


@pytest.fixture
def image_tar(tmp_path: pathlib.Path) -> pathlib.Path:
    rootfs = tmp_path / "rootfs"
    (rootfs / "usr/bin").mkdir(parents=True)
    (rootfs / "usr/bin/hello").write_text("#!/bin/sh\necho hello\n")
    out = tmp_path / "built.tar"
    pack(str(rootfs), str(out), "localhost/mpi-operator:local", {"Entrypoint": ["/usr/bin/hello"]})
    return out


def members(path: pathlib.Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def test_retag_names_the_image_and_keeps_every_other_byte(image_tar: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "out/mpi-operator-0.1.0.tar"
    out.parent.mkdir()
    retag(str(image_tar), str(out), "registry.example.com:5000/team/mpi-operator:0.1.0")
    before, after = members(image_tar), members(out)
    assert set(before) == set(after)
    manifest = json.loads(after["manifest.json"])
    assert manifest[0]["RepoTags"] == ["registry.example.com:5000/team/mpi-operator:0.1.0"]
    assert json.loads(before["manifest.json"])[0]["RepoTags"] == ["localhost/mpi-operator:local"]
    for name in set(before) - {"manifest.json"}:
        assert before[name] == after[name], name
    # The config and layer are still named by their digests, as ctr import and skopeo check.
    config = manifest[0]["Config"]
    assert config == hashlib.sha256(after[config]).hexdigest() + ".json"
    layer = manifest[0]["Layers"][0]
    assert json.loads(after[config])["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(after[layer]).hexdigest()]
    assert not list(out.parent.glob("*.partial"))


def test_retag_refuses_a_name_without_a_tag(image_tar: pathlib.Path, tmp_path: pathlib.Path) -> None:
    with pytest.raises(SystemExit, match="has no tag"):
        retag(str(image_tar), str(tmp_path / "x.tar"), "registry.example.com:5000/mpi-operator")


def image_sh(mode: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(IMAGES / "image.sh"), mode], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )


def test_image_sh_needs_a_tag() -> None:
    proc = image_sh("archive", IMAGE="localhost/mpi-operator")
    assert proc.returncode != 0 and "IMAGE=localhost/mpi-operator: give NAME:TAG" in proc.stderr


def test_image_sh_names_a_bad_builder() -> None:
    proc = image_sh("archive", IMAGE_BUILDER="kaniko")
    assert proc.returncode != 0 and "IMAGE_BUILDER=kaniko: one of auto, podman, buildah, docker, local" in proc.stderr


@pytest.mark.skipif(not shutil.which("docker"), reason="no docker CLI on this machine")
def test_image_sh_does_not_take_a_docker_cli_without_an_engine_for_a_builder() -> None:
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0:
        pytest.skip("this machine has a working Docker engine")
    proc = image_sh("build", IMAGE_BUILDER="docker")
    assert proc.returncode != 0 and "IMAGE_BUILDER=docker: 'docker' is missing or does not work here" in proc.stderr
