"""The local images (hack/build/images/build.sh) for the tools and tests that run pods on the real node: built (cached)
and imported into its containerd, named by the tag of this checkout's build; and how a pod chooses that node."""

from __future__ import annotations

import subprocess

from hack.lib.paths import ROOT

# The label and taint hack/worlds/node/up.sh gives the real node.
REAL_NODE_SELECTOR = {"mpi.operator/real-node": "true"}
REAL_NODE_TOLERATION = {"key": "mpi.operator/real-node", "operator": "Exists", "effect": "NoSchedule"}


def _build(name: str) -> tuple[str, str, str]:
    """Builds (cached) and imports hack/build/images' `name`: (its reference, its tar, its build key)."""
    out = subprocess.run(
        ["bash", str(ROOT / "hack/build/images/build.sh"), "--print", name],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.split()
    return out[0], out[1], out[2]


def built_image(name: str) -> tuple[str, str]:
    """Builds (cached) and imports hack/build/images' `name`; (repository, the tag naming this build: its recipe's
    hash)."""
    ref, _, key = _build(name)
    return ref.rsplit(":", 1)[0], key


# Registry images the user guide's examples name, and the local image of the same shape that stands in for each on the
# real node (it pulls nothing: no registry here). The pi images are shaped as Kubeflow's (hack/build/images/pi).
STAND_INS = {
    "docker.io/mpioperator/mpi-pi:openmpi": "pi-openmpi",
    "docker.io/mpioperator/mpi-pi:intel": "pi-intel",
    "docker.io/mpioperator/mpi-pi:mpich": "pi-mpich",
    "docker.io/divinerapier/openmpi-helloworld:0.0.1": "openmpi4",
    "docker.io/horovod/horovod:0.28.1": "horovod",
    # the mpi4py example's image, built from its own Containerfile (examples/v2beta1/mpi4py/) on the pi stand-in
    "registry.example.com/team/mpi4py-allreduce:1.0": "example-mpi4py",
}


def _ctr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ctr", "-n", "k8s.io", *args], check=True, stdout=subprocess.PIPE, text=True)


def stand_in(reference: str) -> str:
    """Builds (cached) the local image that stands in for registry image `reference` (STAND_INS) and names it so in
    the real node's containerd: a manifest naming `reference` then runs as written (its tag is not `latest`, so the
    kubelet's default pull policy, IfNotPresent, takes the image it has). Returns the local build's reference."""
    ref, tar, key = _build(STAND_INS[reference])
    listed = _ctr("images", "ls", f"name=={reference}").stdout
    if f"mpi.operator/recipe={key}" not in listed:
        # --index-name names the tar's image `reference` as well; an import updates a name in place (never a forced
        # re-tag, which the CRI can lose: hack/build/images/lib.sh)
        _ctr("images", "import", "--index-name", reference, tar)
        _ctr("images", "label", reference, f"mpi.operator/recipe={key}")
    return f"{ref.rsplit(':', 1)[0]}:{key}"
