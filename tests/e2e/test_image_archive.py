"""`make image-archive` as users meet it (docs/install.md#image).
kind user: the archive is loaded into the real node's containerd with the very command `kind load image-archive` runs
on a kind node, read by skopeo, and the operator it holds is installed by playbooks/install.yml with pull policy
Never, becomes Ready (and elected) without a restart, and runs a job submitted with submit.yml.
Registry user: the archive is pushed with skopeo to a registry (the CNCF distribution registry of Debian's
`docker-registry` package, unpacked by hack/build/deb-unpack.sh, on 127.0.0.1, which containerd reaches over plain HTTP)
and the kubelet pulls it (pull policy Always)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.request
import uuid

import pytest
import yaml
from kubernetes import client

from hack.lib.wait import wait_until
from tests.debian import deb_program
from tests.e2e.conftest import (
    BUILT_IMAGES,
    MANIFESTS,
    REAL_NODE_SELECTOR,
    REAL_NODE_TOLERATION,
    ROOT,
    _playbook,
    pin_local_images,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.serial]

CONTAINERD_SOCK = os.environ.get("MPI_CONTAINERD_SOCK", "/run/containerd/containerd.sock")
OPERATOR_NAMESPACE = "mpi-operator-archive"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_image_archive(image: str, archive: str) -> str:
    env = {**os.environ, "IMAGE": image, "IMAGE_ARCHIVE": archive}
    proc = subprocess.run(
        ["make", "-s", "image-archive"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stderr


def kind_load(archive: str) -> subprocess.CompletedProcess[str]:
    """What `kind load image-archive` does on each node (sigs.k8s.io/kind pkg/cluster/nodeutils LoadImageArchive):
    the archive on stdin of `ctr --namespace=k8s.io images import --all-platforms --digests --snapshotter=...`."""
    with open(archive, "rb") as stdin:
        return subprocess.run(
            [
                "ctr",
                "--address",
                CONTAINERD_SOCK,
                "--namespace=k8s.io",
                "images",
                "import",
                "--all-platforms",
                "--digests",
                "--snapshotter=overlayfs",
                "-",
            ],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=600,
        )


@pytest.fixture(scope="module")
def operator_archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(image, archive): `make image-archive` once for both tests (the registry user pushes the same file, as the
    command's own output tells them to)."""
    tag = f"archive-{uuid.uuid4().hex[:8]}"  # a name containerd cannot already have
    image = f"localhost/mpi-operator:{tag}"
    archive = str(tmp_path_factory.mktemp("archive") / "mpi-operator.tar")
    started = time.monotonic()
    said = make_image_archive(image, archive)
    print(f"\nmake image-archive in {time.monotonic() - started:.1f} s")
    assert f"skopeo copy docker-archive:{archive} docker://REGISTRY/mpi-operator:{tag}" in said, said
    return image, archive


def test_image_archive_loads_into_containerd_and_install_runs_it(
    api: client.ApiClient, tmp_path, operator_archive: tuple[str, str]
) -> None:
    image, archive = operator_archive
    tag = image.rsplit(":", 1)[1]

    # The docker-save layout: one image named as asked, content named by its digests.
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        assert len(manifest) == 1 and manifest[0]["RepoTags"] == [image]
        config_bytes = tar.extractfile(manifest[0]["Config"]).read()
        assert manifest[0]["Config"] == sha256(config_bytes) + ".json"
        config = json.loads(config_bytes)
        assert config["os"] == "linux" and config["config"]["Entrypoint"] == ["python3", "-m", "mpijob_operator"]
        assert config["config"]["User"] == "1000"
        for layer, diff_id in zip(manifest[0]["Layers"], config["rootfs"]["diff_ids"], strict=True):
            assert diff_id == "sha256:" + hashlib.file_digest(tar.extractfile(layer), "sha256").hexdigest()

    if shutil.which("skopeo"):
        inspected = subprocess.run(["skopeo", "inspect", f"docker-archive:{archive}"], capture_output=True, text=True)
        assert inspected.returncode == 0, inspected.stderr
        seen = json.loads(inspected.stdout)
        assert (seen["Os"], seen["Architecture"]) == ("linux", "amd64"), seen
        copied = subprocess.run(
            ["skopeo", "copy", f"docker-archive:{archive}", f"oci:{tmp_path / 'oci'}:{tag}"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert copied.returncode == 0, copied.stderr

    started = time.monotonic()
    loaded = kind_load(archive)
    assert loaded.returncode == 0, loaded.stderr
    print(f"\nimported {image} into containerd in {time.monotonic() - started:.1f} s")
    listed = subprocess.run(
        ["ctr", "--address", CONTAINERD_SOCK, "-n", "k8s.io", "images", "ls", "-q", f"name=={image}"],
        capture_output=True,
        text=True,
    )
    assert listed.stdout.split() == [image], listed.stdout + listed.stderr

    pod = install_and_check(api, tmp_path, image, "Never")
    assert pod.spec.containers[0].image_pull_policy == "Never"


def install_vars(image: str, pull_policy: str, watch: str) -> dict:
    repository, tag = image.rsplit(":", 1)
    return {
        "mpi_operator_namespace_name": OPERATOR_NAMESPACE,
        "mpi_operator_watch_namespace": watch,
        "mpi_operator_image_repository": repository,
        "mpi_operator_image_tag": tag,
        "mpi_operator_image_pull_policy": pull_policy,
        "mpi_operator_node_selector": REAL_NODE_SELECTOR,
        "mpi_operator_tolerations": [REAL_NODE_TOLERATION],
        "mpi_operator_wait_timeout": 240,
        # Integration test sessions on the same cluster write the CRD with other field managers.
        "mpi_operator_adopt_crd": True,
    }


def install_and_check(api: client.ApiClient, tmp_path, image: str, pull_policy: str, submit: bool = True):
    """install.yml with `image` on the real node; the pod Ready, leading, and (with submit) running a job; then
    uninstall. Returns the operator pod as it was."""
    tag = image.rsplit(":", 1)[1]
    watch = f"mpi-archive-{pull_policy.lower()}"  # its own, so the operators other tests install are left alone
    install = install_vars(image, pull_policy, watch)
    core = client.CoreV1Api(api)
    try:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=watch)))
    except client.ApiException as err:
        if err.status != 409:
            raise
    try:
        started = time.monotonic()
        _playbook("install.yml", install, tmp_path)  # waits until the Deployment is available
        print(f"installed and available in {time.monotonic() - started:.1f} s")
        pods = core.list_namespaced_pod(OPERATOR_NAMESPACE, label_selector="app.kubernetes.io/name=mpi-operator").items
        assert len(pods) == 1
        pod = pods[0]
        status = pod.status.container_statuses[0]
        # The spec names the image; the status may report any other name containerd has for the same content (this
        # checkout's own build of the operator image is the same image under its recipe-hash tag).
        assert pod.spec.containers[0].image.endswith(f"mpi-operator:{tag}"), pod.spec.containers[0].image
        assert status.ready and status.restart_count == 0, status
        # Ready does not wait for the lease (a standby replica is Ready too): leading follows within seconds.
        coordination = client.CoordinationV1Api(api)
        wait_until(
            lambda: (
                coordination.read_namespaced_lease("mpi-operator", OPERATOR_NAMESPACE).spec.holder_identity or ""
            ).startswith(pod.metadata.name),
            60,
            what="the operator pod to hold the Lease",
        )
        if not submit:
            return pod
        # And it runs jobs: submit.yml waits until the job Succeeded (it fails the play otherwise).
        started = time.monotonic()
        job = yaml.safe_load((MANIFESTS / "pi-openmpi4.yaml").read_text())
        pin_local_images(job, BUILT_IMAGES)  # this checkout's MPI image build, as the other e2e tests run
        manifest = tmp_path / "pi-openmpi4.yaml"
        manifest.write_text(yaml.safe_dump(job))
        _playbook(
            "submit.yml", {"mpijob_src": str(manifest), "mpijob_namespace": watch, "mpijob_wait_timeout": 300}, tmp_path
        )
        print(f"pi-openmpi4 submitted and Succeeded in {time.monotonic() - started:.1f} s")
        return pod
    finally:
        _playbook("uninstall.yml", install, tmp_path)
        # The image stays in containerd (a name; its content is shared with this checkout's operator build): in one
        # full run, removing it was followed by ErrImageNeverPull for the build's own tag in the next e2e install.
        core.delete_namespace(watch)


def test_image_pushed_to_a_registry_is_pulled_by_the_kubelet(
    api: client.ApiClient, tmp_path, operator_archive: tuple[str, str]
) -> None:
    # Debian's docker-registry (distribution 2.8): nothing to compile (building distribution v3 from the Go module
    # proxy cost a cold run about 190 CPU-seconds).
    binary = deb_program("docker-registry", "docker-registry")
    assert shutil.which("skopeo"), "skopeo (Debian's, installed by hack/worlds/node/packages.sh) is needed to push"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "registry.yml"
    config.write_text(
        f"version: 0.1\nstorage: {{filesystem: {{rootdirectory: {tmp_path / 'data'}}}}}\n"
        f"http: {{addr: '127.0.0.1:{port}'}}\nlog: {{level: error}}\n"
    )
    registry = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    image = f"127.0.0.1:{port}/team/mpi-operator:push-{uuid.uuid4().hex[:8]}"

    def listening() -> bool:
        """The registry answers its API's base endpoint (it starts listening some time after its process starts)."""
        assert registry.poll() is None, f"the registry exited with {registry.returncode}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    try:
        wait_until(listening, 60, what="the registry to listen")
        archive = operator_archive[1]
        pushed = subprocess.run(
            ["skopeo", "copy", "--dest-tls-verify=false", f"docker-archive:{archive}", f"docker://{image}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert pushed.returncode == 0, pushed.stderr
        # Always: the kubelet asks the registry, whatever containerd holds.
        pod = install_and_check(api, tmp_path, image, "Always", submit=False)
        digest = json.loads(
            subprocess.run(
                ["skopeo", "inspect", "--tls-verify=false", f"docker://{image}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )["Digest"]
        assert pod.status.container_statuses[0].image_id.endswith(digest), (pod.status.container_statuses[0], digest)
    finally:
        registry.terminate()
        registry.wait(10)
