"""Frees the real node's containerd of images nothing can use any more (hack/images/lib.sh runs it after an import).

The node's kubelet never collects images (imageGCHighThresholdPercent 100: it would remove the imported images, which
no registry can give back), so without this every build stays: 1.5 GB for each Horovod build, and once the disk ran
below the kubelet's hard eviction threshold, whose reclaim removed the pause image with the rest.

Removed, when no container (of any state) was made from them:
- the earlier builds of REPO: images whose every name is REPO:<16 hex digits> other than --keep, imported over
  --min-age seconds ago (another checkout's build may be about to run);
- images without any name left (what a removed name leaves behind in the CRI's store, `ctr import --digests` too).
`crictl rmi` removes an image with all its names, hence the "every name" rule: :local and the current build's name
share their image with nothing older.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time


def crictl(args: argparse.Namespace, *argv: str) -> str:
    # Removing a big image takes longer than crictl's default 2 s timeout.
    return subprocess.run([args.crictl, "-r", args.endpoint, "--timeout", "120s", *argv], check=True,
                          capture_output=True, text=True).stdout


def imported_at(args: argparse.Namespace, ref: str) -> int:
    """When lib.sh imported `ref` (its mpi.operator/imported label); 0 when unknown (an import before the label)."""
    out = subprocess.run(["ctr", "-a", args.endpoint.removeprefix("unix://"), "-n", "k8s.io", "images", "ls",
                          f"name=={ref}"], capture_output=True, text=True).stdout
    found = re.search(r"mpi\.operator/imported=(\d+)", out)
    return int(found[1]) if found else 0


def prunable(args: argparse.Namespace, image: dict, now: float) -> bool:
    tags = image.get("repoTags") or []
    if not tags:
        return True
    build = re.compile(re.escape(args.repo) + r":[0-9a-f]{16}")
    return all(build.fullmatch(tag) and tag != f"{args.repo}:{args.keep}" and
               now - imported_at(args, tag) > args.min_age for tag in tags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="e.g. localhost/mpi-horovod")
    parser.add_argument("--keep", required=True, help="the tag of the build just imported (16 hex digits)")
    parser.add_argument("--crictl", required=True)
    parser.add_argument("--endpoint", default="unix:///run/containerd/containerd.sock")
    parser.add_argument("--min-age", type=float, default=3600.0)
    parser.add_argument("--dry-run", action="store_true", help="only print what would be removed")
    args = parser.parse_args()
    now = time.time()
    images = json.loads(crictl(args, "images", "-o", "json"))["images"]
    containers = json.loads(crictl(args, "ps", "-a", "-o", "json"))["containers"]
    used = {c["imageRef"] for c in containers} | {c["image"]["image"] for c in containers}
    for image in images:
        if image["id"] in used or not prunable(args, image, now):
            continue
        names = image.get("repoTags") or image.get("repoDigests") or [image["id"][:19]]
        if args.dry_run:
            print(f"[images] would remove {' '.join(names)}", file=sys.stderr)
            continue
        try:
            crictl(args, "rmi", image["id"])
            print(f"[images] removed {' '.join(names)} ({int(image.get('size', 0)) >> 20} MiB, unused)", file=sys.stderr)
        except subprocess.CalledProcessError as err:
            print(f"[images] could not remove {' '.join(names)}: {err.stderr.strip()}", file=sys.stderr)


if __name__ == "__main__":
    main()
