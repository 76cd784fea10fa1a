"""hack/build/images/build.sh and its one builder, containerfile.py, with a throw-away Containerfile (a root filesystem
of the host's own dash and libc, so no debootstrap): a build is cached by its key and a second run is a hit; a change
re-runs only the steps from the one it touches; a step that fails fails the build and packs nothing, instead of
caching and importing a broken image."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("debootstrap") or not shutil.which("ctr"),
    reason="build.sh needs root, debootstrap and ctr (installed by `make cluster-up` where the machine allows)",
)

# The smallest root a RUN step works in: containerfile.py runs `/usr/bin/env -i ... /bin/sh -c` chrooted.
ROOT_FILES = ("/bin/sh", "/usr/bin/env", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2")


@pytest.fixture
def images(tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of hack/build/images with an image `scratchtest`: FROM scratch, that root, a COPY and RUN steps."""
    images = tmp_path / "hack/build/images"
    shutil.copytree(ROOT / "hack/build/images", images)
    rootfs = tmp_path / "rootfs"
    for name in ("etc", "proc", "dev", "run", "tmp"):
        (rootfs / name).mkdir(parents=True)
    for path in ROOT_FILES:
        (rootfs / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(path), rootfs / path.lstrip("/"))
    (images / "scratchtest").mkdir()
    with tarfile.open(images / "scratchtest/rootfs.tar", "w") as tar:
        tar.add(rootfs, ".")
    (images / "scratchtest/hello.txt").write_text("hello\n")
    containerfile(images, 'echo "$GREETING" > /greeting')
    return images


def containerfile(images: pathlib.Path, last_run: str) -> None:
    (images / "scratchtest/Containerfile").write_text(
        # The first RUN also prints: a step's output must not mix with build.sh's result line on stdout.
        "FROM scratch\nADD scratchtest/rootfs.tar /\nENV GREETING=hi\nRUN echo one > /one && echo step output\n"
        f'COPY scratchtest/hello.txt /hello.txt\nRUN {last_run}\nENTRYPOINT ["/bin/sh"]\n'
    )


def build(images: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPI_OPERATOR_CACHE=str(images.parents[1] / "cache"), MPI_IMAGE_TAG="test")
    return subprocess.run(
        ["bash", str(images / "build.sh"), "--no-import", "--print", "scratchtest"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def builder_log(images: pathlib.Path) -> str:
    return (images.parents[1] / "cache/images/mpi-scratchtest.log").read_text()


def members(image_tar: str) -> tuple[dict, dict[str, bytes]]:
    """(manifest, {path: content}) of the image's one layer."""
    with tarfile.open(image_tar) as image:
        manifest = json.load(image.extractfile("manifest.json"))[0]
        config = json.load(image.extractfile(manifest["Config"]))
        with tarfile.open(fileobj=image.extractfile(manifest["Layers"][0])) as layer:
            files = {m.name.lstrip("./"): layer.extractfile(m).read() for m in layer if m.isfile()}
    return {**manifest, "config": config["config"]}, files


def test_an_image_builds_once_and_a_second_run_is_a_cache_hit(images: pathlib.Path) -> None:
    first = build(images)
    assert first.returncode == 0, first.stderr
    assert "step output" in builder_log(images)
    ref, tar, key = first.stdout.split()
    assert ref == "localhost/mpi-scratchtest:test" and tar.endswith(f"mpi-scratchtest-{key}.tar")
    manifest, files = members(tar)
    assert manifest["RepoTags"] == [ref, f"localhost/mpi-scratchtest:{key}"]
    assert manifest["config"]["Entrypoint"] == ["/bin/sh"] and "GREETING=hi" in manifest["config"]["Env"]
    assert files["greeting"] == b"hi\n" and files["hello.txt"] == b"hello\n" and files["one"] == b"one\n"
    built_at = os.stat(tar).st_mtime_ns

    second = build(images)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert "mpi-scratchtest: cached" in builder_log(images) and "RUN" not in builder_log(images)
    assert os.stat(tar).st_mtime_ns == built_at


def test_a_change_reruns_only_the_steps_from_the_one_it_touches(images: pathlib.Path) -> None:
    _, _, key = build(images).stdout.split()
    (images / "scratchtest/hello.txt").write_text("changed\n")
    proc = build(images)
    assert proc.returncode == 0, proc.stderr
    _, tar, new_key = proc.stdout.split()
    assert new_key != key
    log = builder_log(images)
    # Steps 1-4 (FROM, ADD, ENV, the first RUN) come from the cache; the COPY and the last RUN run again.
    assert "using cached steps 1-4" in log and "echo one" not in log and 'echo "$GREETING"' in log
    assert members(tar)[1]["hello.txt"] == b"changed\n"
    kept = [p.name for p in (images.parents[1] / "cache/images").glob("mpi-scratchtest-*.tar")]
    assert kept == [f"mpi-scratchtest-{new_key}.tar"]


def test_a_failing_step_fails_the_build(images: pathlib.Path) -> None:
    containerfile(images, "echo half done > /x && false")
    proc = build(images)
    assert proc.returncode != 0, proc.stdout
    assert "RUN failed" in proc.stderr and "building mpi-scratchtest failed" in proc.stderr
    assert not list((images.parents[1] / "cache/images").glob("mpi-scratchtest-*.tar"))
