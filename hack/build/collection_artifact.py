"""Packs an installed collection (a folder with MANIFEST.json and FILES.json, as `ansible-galaxy collection install`
leaves it) back into the artifact Galaxy serves: <namespace>-<name>-<version>.tar.gz holding MANIFEST.json, FILES.json
and each entry FILES.json lists that the folder has (ansible-galaxy extracts every entry FILES.json names, and checks
each file's checksum; the `ansible` package leaves some entries out, such as .github/, so FILES.json is written again
without them, and MANIFEST.json with FILES.json's new checksum).
For the execution environment's build (hack/build/ee.sh): kubernetes.core comes from the `ansible` package here,
never from Galaxy.

usage: python hack/build/collection_artifact.py COLLECTION_DIR OUT_DIR   (prints the artifact's path)"""

from __future__ import annotations

import hashlib
import io
import json
import pathlib
import sys
import tarfile


def pack(collection: pathlib.Path, out_dir: pathlib.Path) -> pathlib.Path:
    manifest = json.loads((collection / "MANIFEST.json").read_text())
    listing = json.loads((collection / "FILES.json").read_text())
    entries = [e for e in listing["files"] if e["name"] == "." or (collection / e["name"]).exists()]
    files_json = json.dumps({**listing, "files": entries}, indent=4).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    info = manifest["collection_info"]
    out = out_dir / f"{info['namespace']}-{info['name']}-{info['version']}.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for name, data in (("MANIFEST.json", json.dumps(manifest, indent=4).encode()), ("FILES.json", files_json)):
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o644
            tar.addfile(member, io.BytesIO(data))
        for entry in entries:
            if entry["name"] != ".":
                tar.add(collection / entry["name"], arcname=entry["name"], recursive=False)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("usage: ")[1])
    print(pack(pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2])))
