"""hack/images/prune.py on the real node's containerd: what an import leaves behind goes, nothing else.
Four tiny images (the pause image's layer under four distinct configs) named as build.sh names builds."""

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

from tests.e2e.conftest import CACHE, ROOT

pytestmark = [pytest.mark.realnode, pytest.mark.xdist_group("e2e")]

SOCK = os.environ.get("MPI_CONTAINERD_SOCK", "/run/containerd/containerd.sock")
CRICTL = CACHE / "bin/crictl"


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


@pytest.mark.skipif(not CRICTL.exists() or not os.path.exists(SOCK), reason="needs the real node's containerd")
def test_prune_removes_earlier_unused_builds_and_keeps_the_rest() -> None:
    repo = f"localhost/mpi-prune-test-{uuid.uuid4().hex[:6]}"
    old, current, recent, shared = (f"{repo}:{c * 16}" for c in "abcd")
    images = {"old": [old], "current": [current], "recent": [recent], "shared": [shared, f"{repo}:local"]}
    long_ago = str(int(time.time()) - 7200)
    try:
        for salt, refs in images.items():
            ctr("images", "import", "-", stdin=distinct_image(refs, f"{salt}-{repo}"))
        for ref in (old, shared):
            ctr("images", "label", ref, f"mpi.operator/imported={long_ago}")
        ctr("images", "label", recent, f"mpi.operator/imported={int(time.time())}")

        proc = subprocess.run([sys.executable, str(ROOT / "hack/images/prune.py"), "--repo", repo, "--keep", "b" * 16,
                               "--crictl", str(CRICTL)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        left = names()
        assert old not in left, proc.stderr  # an earlier build, imported 2 h ago, no container: removed
        assert current in left  # the build just imported
        assert recent in left  # imported minutes ago: maybe another checkout's, about to run
        assert {shared, f"{repo}:local"} <= left  # one of its names is not an earlier build's
        assert f"removed {old}" in proc.stderr
    finally:  # these images are the test's own: crictl rmi takes them with every name, the CRI's own included
        listed = subprocess.run([str(CRICTL), "-r", f"unix://{SOCK}", "images", "-o", "json"], capture_output=True,
                                text=True, timeout=120).stdout
        for image in json.loads(listed)["images"]:
            if any(tag.startswith(repo) for tag in image["repoTags"]):
                subprocess.run([str(CRICTL), "-r", f"unix://{SOCK}", "--timeout", "120s", "rmi", image["id"]],
                               capture_output=True, timeout=180)
