"""Packs a root filesystem into one image tar in the `docker save` layout, which
`ctr images import` reads: manifest.json, the image config, and a single layer tar.

usage: pack.py ROOTFS OUT.tar NAME:TAG CONFIG_JSON   (hack/build/images/containerfile.py packs its builds with it)
CONFIG_JSON holds the OCI runtime config (Env, Entrypoint, Cmd, User, WorkingDir, ...).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile

# Mount points the runtime fills in; their build-time contents must not ship.
RUNTIME_DIRS = ("dev", "proc", "sys")


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pack(rootfs: str, out: str, refs: str | list[str], runtime_config: dict) -> None:
    refs = [refs] if isinstance(refs, str) else refs
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(out))) as tmp:
        layer = os.path.join(tmp, "layer.tar")
        excludes = [f"--exclude=./{d}/*" for d in RUNTIME_DIRS]
        subprocess.run(
            ["tar", "--numeric-owner", "--xattrs", "-C", rootfs, "-cf", layer, *excludes, "."],
            check=True,
        )
        diff_id = sha256_file(layer)
        config = {
            "architecture": "amd64",
            "os": "linux",
            "config": runtime_config,
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
            # No tag in the config: its digest is the image's identity in the keys of the images built on it. So the
            # builder's path here stays as it was before hack/ was sorted: a new one would rebuild every image.
            "history": [{"created_by": "hack/images/containerfile.py"}],
        }
        config_bytes = json.dumps(config, sort_keys=True).encode()
        config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
        manifest = [{"Config": config_name, "RepoTags": refs, "Layers": [f"{diff_id}/layer.tar"]}]
        with open(os.path.join(tmp, config_name), "wb") as f:
            f.write(config_bytes)
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        partial = out + ".partial"
        with tarfile.open(partial, "w") as image:
            image.add(os.path.join(tmp, "manifest.json"), "manifest.json")
            image.add(os.path.join(tmp, config_name), config_name)
            image.add(layer, f"{diff_id}/layer.tar")
        os.replace(partial, out)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    pack(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
