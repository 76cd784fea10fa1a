"""Writes a copy of an image tar in the `docker save` layout (as pack.py and containerfile.py make them) naming the
image REF, so one cached build can be handed out under any name: the tar that `kind load image-archive`,
`ctr -n k8s.io images import`, `podman load`, `docker load` and `skopeo copy docker-archive:` read.

usage: archive.py SOURCE.tar OUT.tar REF
Only manifest.json changes (its RepoTags); the config and layers are copied byte for byte.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile


def retag(source: str, out: str, refs: str | list[str]) -> None:
    """Writes `out` naming the image `refs`; `out` may be `source` (renamed in place)."""
    refs = [refs] if isinstance(refs, str) else refs
    for ref in refs:
        if ":" not in ref.rsplit("/", 1)[-1]:
            sys.exit(f"archive.py: {ref!r} has no tag (NAME:TAG)")
    partial = out + ".partial"
    with tarfile.open(source) as src, tarfile.open(partial, "w") as dst:
        manifest = json.load(src.extractfile("manifest.json"))
        if len(manifest) != 1:
            sys.exit(f"archive.py: {source} holds {len(manifest)} images, expected one")
        manifest[0]["RepoTags"] = refs
        body = json.dumps(manifest).encode()
        for member in src:
            if member.name == "manifest.json":
                info = tarfile.TarInfo("manifest.json")
                info.size, info.mtime, info.mode = len(body), member.mtime, member.mode
                dst.addfile(info, io.BytesIO(body))
            else:
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    os.replace(partial, out)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    os.makedirs(os.path.dirname(os.path.abspath(sys.argv[2])), exist_ok=True)
    retag(sys.argv[1], sys.argv[2], sys.argv[3])
