"""hack/build/images/prune.py on the real node's containerd: what an import leaves behind goes, nothing else.
Five tiny images (the pause image's layer under five distinct configs) named as build.sh names builds."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import uuid

import pytest

from tests.support.paths import CACHE, ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

SOCK = os.environ.get("MPI_CONTAINERD_SOCK", "/run/containerd/containerd.sock")


def ctr(*args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(["ctr", "-a", SOCK, "-n", "k8s.io", *args], input=stdin, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def distinct_image(names: list[str], salt: str) -> bytes:
    """A docker-save tar of the pause image's layer, its config made distinct by a label, named `names`."""
    source = next((CACHE / "images").glob("pause-*.tar"))
    with tarfile.open(source) as tar:
        [entry] = json.load(tar.extractfile("manifest.json"))
        config = json.load(tar.extractfile(entry["Config"]))
        layer = tar.extractfile(entry["Layers"][0]).read()
    config.setdefault("config", {}).setdefault("Labels", {})["mpi.operator/prune-test"] = salt
    config_bytes = json.dumps(config).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": names, "Layers": ["layer.tar"]}]).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("manifest.json", manifest), (config_name, config_bytes), ("layer.tar", layer)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def names() -> set[str]:
    return set(ctr("images", "ls", "-q").split())


def listed() -> list[tuple[str, str]]:
    """(name, manifest digest) of every image name (`ctr images ls`: REF TYPE DIGEST ...)."""
    return [(f[0], f[2]) for f in (line.split() for line in ctr("images", "ls").splitlines()[1:]) if len(f) > 2]


def digests() -> set[str]:
    return {d for _, d in listed()}


@pytest.mark.skipif(not os.path.exists(SOCK), reason="needs the real node's containerd")
def test_prune_removes_earlier_unused_builds_and_keeps_the_rest() -> None:
    repo = f"localhost/mpi-prune-test-{uuid.uuid4().hex[:6]}"
    old, current, recent, shared, in_use = (f"{repo}:{c * 16}" for c in "abcde")
    images = {
        "old": [old],
        "current": [current],
        "recent": [recent],
        "shared": [shared, f"{repo}:local"],
        "in-use": [in_use],
    }
    long_ago = str(int(time.time()) - 7200)
    container = f"prune-test-{uuid.uuid4().hex[:6]}"
    try:
        for salt, refs in images.items():
            ctr("images", "import", "-", stdin=distinct_image(refs, f"{salt}-{repo}"))
        for ref in (old, shared, in_use):
            ctr("images", "label", ref, f"mpi.operator/imported={long_ago}")
        ctr("images", "label", recent, f"mpi.operator/imported={int(time.time())}")
        # A container made from an earlier build (of any state: this one never ran) keeps it.
        ctr("containers", "create", in_use, container)
        [old_digest] = {d for name, d in listed() if name == old}

        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "hack/build/images/prune.py"),
                "--repo",
                repo,
                "--keep",
                "b" * 16,
                "--address",
                SOCK,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        left = names()
        assert old not in left, proc.stderr  # an earlier build, imported 2 h ago, no container: removed
        assert current in left  # the build just imported
        assert recent in left  # imported minutes ago: maybe another checkout's, about to run
        assert {shared, f"{repo}:local"} <= left  # one of its names is not an earlier build's
        assert in_use in left, proc.stderr  # a container was made from it
        assert f"removed {old}" in proc.stderr
        # Every name of the removed image went with its tag: the CRI's sha256:<ID> and repo@digest ones too.
        assert old_digest not in digests(), proc.stderr
    finally:  # these images are the test's own: every name of theirs goes, the CRI's own (sha256:<ID>) included
        subprocess.run(
            ["ctr", "-a", SOCK, "-n", "k8s.io", "containers", "rm", container], capture_output=True, timeout=120
        )
        ours = {d for name, d in listed() if name.startswith(repo)}
        mine = [name for name, d in listed() if d in ours]
        if mine:
            subprocess.run(["ctr", "-a", SOCK, "-n", "k8s.io", "images", "rm", *mine], capture_output=True, timeout=180)
