"""The local images (hack/build/images/build.sh) for the tools and tests that run pods on the real node: built (cached)
and imported into its containerd, named by the tag of this checkout's build; and how a pod chooses that node."""

from __future__ import annotations

import subprocess

from hack.lib.paths import ROOT

# The label and taint hack/worlds/node/up.sh gives the real node.
REAL_NODE_SELECTOR = {"mpi.operator/real-node": "true"}
REAL_NODE_TOLERATION = {"key": "mpi.operator/real-node", "operator": "Exists", "effect": "NoSchedule"}


def built_image(name: str) -> tuple[str, str]:
    """Builds (cached) and imports hack/build/images' `name`; (repository, the tag naming this build: its recipe's
    hash)."""
    out = subprocess.run(
        ["bash", str(ROOT / "hack/build/images/build.sh"), "--print", name],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.split()
    return out[0].rsplit(":", 1)[0], out[2]
