"""Frees the real node's containerd of images nothing can use any more (hack/build/images/lib.sh runs it after an
import).

The node's kubelet never collects images (imageGCHighThresholdPercent 100: it would remove the imported images, which
no registry can give back), so without this every build stays: 1.5 GB for each Horovod build, and once the disk ran
below the kubelet's hard eviction threshold, whose reclaim removed the pause image with the rest.

An image is what the kubelet sees as one: every name in containerd's k8s.io namespace whose manifest has the same
config (the image ID; the CRI's own `sha256:<ID>` name and `<repo>@<digest>` names among them). Removed, when no
container (of any state, pod sandboxes included) was made from it:
- the earlier builds of REPO: images whose every tag is REPO:<16 hex digits> other than --keep, imported over
  --min-age seconds ago (another checkout's build may be about to run);
- images without any tag (what a removed tag leaves behind in the CRI's store, `ctr import --digests` too).
Every name of an image goes at once, hence the "every tag" rule: :local and the current build's tag share their image
with nothing older. Only containerd's own `ctr` is used (it comes with containerd).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import time


def ctr(args: argparse.Namespace, *argv: str) -> str:
    return subprocess.run(
        ["ctr", "-a", args.address, "-n", "k8s.io", *argv], check=True, capture_output=True, text=True, timeout=300
    ).stdout


def listed_images(args: argparse.Namespace) -> list[tuple[str, str, dict[str, str]]]:
    """(name, manifest digest, labels) of every image name: `ctr images ls` columns REF TYPE DIGEST SIZE (a number
    and its unit) PLATFORMS LABELS, where LABELS is `-` or k=v,k=v."""
    out = []
    for line in ctr(args, "images", "ls").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 7:
            continue
        labels = dict(kv.split("=", 1) for kv in fields[-1].split(",") if "=" in kv)
        out.append((fields[0], fields[2], labels))
    return out


def is_tag(name: str) -> bool:
    """A repo:tag name, not the CRI's sha256:<ID> nor a repo@digest."""
    return not name.startswith("sha256:") and "@" not in name


def prunable(args: argparse.Namespace, names: list[str], labels: dict[str, dict[str, str]], now: float) -> bool:
    tags = [n for n in names if is_tag(n)]
    if not tags:
        return True
    build = re.compile(re.escape(args.repo) + r":[0-9a-f]{16}")
    return all(
        build.fullmatch(tag)
        and tag != f"{args.repo}:{args.keep}"
        and now - int(labels[tag].get("mpi.operator/imported", 0)) > args.min_age
        for tag in tags
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="e.g. localhost/mpi-horovod")
    parser.add_argument("--keep", required=True, help="the tag of the build just imported (16 hex digits)")
    parser.add_argument("--address", default="/run/containerd/containerd.sock", help="containerd's socket")
    parser.add_argument("--min-age", type=float, default=3600.0)
    parser.add_argument("--dry-run", action="store_true", help="only print what would be removed")
    args = parser.parse_args()
    now = time.time()
    listed = listed_images(args)
    labels = {name: lab for name, _, lab in listed}
    config_of: dict[str, str] = {}  # manifest digest -> config digest (the image ID)
    for digest in {d for _, d, _ in listed}:
        try:
            config_of[digest] = json.loads(ctr(args, "content", "get", digest))["config"]["digest"]
        except (subprocess.CalledProcessError, ValueError, KeyError):
            config_of[digest] = digest  # an index or missing content: its own image, as far as this goes
    images: dict[str, list[str]] = collections.defaultdict(list)  # image ID -> every name
    image_of: dict[str, str] = {}
    for name, digest, _ in listed:
        images[config_of[digest]].append(name)
        image_of[name] = config_of[digest]
    # `ctr containers ls`: CONTAINER IMAGE RUNTIME; IMAGE is one of the image's names (the CRI's first tag).
    used = {image_of.get(line.split()[1]) for line in ctr(args, "containers", "ls").splitlines()[1:] if line.strip()}
    for image_id, names in sorted(images.items()):
        if image_id in used or not prunable(args, names, labels, now):
            continue
        shown = " ".join(n for n in names if is_tag(n)) or image_id[:19]
        if args.dry_run:
            print(f"[images] would remove {shown}", file=sys.stderr)
            continue
        try:
            ctr(args, "images", "rm", *names)
            print(f"[images] removed {shown} (unused)", file=sys.stderr)
        except subprocess.CalledProcessError as err:
            print(f"[images] could not remove {shown}: {err.stderr.strip()}", file=sys.stderr)


if __name__ == "__main__":
    main()
