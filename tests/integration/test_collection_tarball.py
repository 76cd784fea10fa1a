"""The collection as a user gets it: the tarball `ansible-galaxy collection build` makes, installed with its
dependency (kubernetes.core) into an empty collections path, outside this repository, then used against the
cluster with the connection options set once, in `module_defaults: group/mpi.operator.k8s` (no $KUBECONFIG, no
$K8S_AUTH_*, no ~/.kube/config): kubernetes.core's modules and each of ours, the action plugin's files/ and
templates/ lookups, install.yml and submit.yml by their collection names."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable

import pytest
import yaml

from tests.support.paths import CACHE, ROOT

pytestmark = pytest.mark.integration

BIN = pathlib.Path(sys.executable).parent


def kubernetes_core() -> pathlib.Path:
    """kubernetes.core as hack/build/venv.sh took it out of the ansible wheel (no Galaxy here)."""
    found = sorted(CACHE.glob("kubernetes.core-from-ansible-*/ansible_collections/kubernetes/core/MANIFEST.json"))
    assert found, "run make venv first (it caches kubernetes.core)"
    return found[-1].parent


class UserMachine:
    """A directory standing for a user's machine: its own HOME, ansible.cfg (empty) and collections path."""

    def __init__(self, base: pathlib.Path):
        self.base, self.home, self.collections = base, base / "home", base / "collections"
        for d in (self.home, self.collections):
            d.mkdir(parents=True)
        (base / "ansible.cfg").write_text("")

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("K8S_AUTH_", "ANSIBLE_")) and k not in ("KUBECONFIG", "PYTHONPATH")
        }
        env.update(
            HOME=str(self.home),
            ANSIBLE_CONFIG=str(self.base / "ansible.cfg"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_COLLECTIONS_PATH=str(self.collections),
            PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            ANSIBLE_LOCAL_TEMP=str(self.base / "tmp"),
        )
        return env

    def run(self, *args: str, cwd: pathlib.Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / args[0]), *args[1:]],
            cwd=cwd or self.base,
            env=self.env(),
            text=True,
            capture_output=True,
            check=False,
            timeout=timeout,
        )


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> UserMachine:
    base = tmp_path_factory.mktemp("user")
    machine = UserMachine(base)
    build = machine.run("ansible-galaxy", "collection", "build", "--output-path", str(base / "dist"), str(ROOT))
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = next((base / "dist").glob("mpi-operator-*.tar.gz"))
    # The dependency is declared: without kubernetes.core (and without Galaxy) the install refuses.
    refused = machine.run(
        "ansible-galaxy", "collection", "install", "--offline", "-p", str(machine.collections), str(tarball)
    )
    assert refused.returncode != 0 and "kubernetes.core:>=6.0.0,<7.0.0 (dependency of mpi.operator" in (
        refused.stdout + refused.stderr
    ), refused.stdout + refused.stderr
    # With it in the collections path (as a user's `ansible-galaxy collection install kubernetes.core` leaves it).
    shutil.copytree(kubernetes_core(), machine.collections / "ansible_collections/kubernetes/core")
    install = machine.run(
        "ansible-galaxy", "collection", "install", "--offline", "-p", str(machine.collections), str(tarball)
    )
    assert install.returncode == 0, install.stdout + install.stderr
    return machine


def test_the_tarball_holds_what_users_need_and_no_dev_tooling(user: UserMachine) -> None:
    installed = user.collections / "ansible_collections/mpi/operator"
    for needed in (
        "meta/runtime.yml",
        "plugins/modules/mpijob.py",
        "plugins/action/mpijob.py",
        "roles/crds",
        "playbooks/install.yml",
        "examples/v2beta1/pi.yaml",
        "docs/README.md",
        "docs/reference/mpijobs.kubeflow.org.md",
        "tests/sanity",
        "LICENSE",
        "meta/execution-environment.yml",
        "CHANGELOG.rst",
        "changelogs/changelog.yaml",
    ):
        assert (installed / needed).exists(), needed
    # Every test folder stays out but tests/sanity, which ansible-test reads.
    tiers = [
        f"tests/{d.name}"
        for d in (ROOT / "tests").iterdir()
        if d.is_dir() and d.name not in ("sanity", "__pycache__", "output")
    ]
    for dev in (
        "hack",
        "docs/dev",
        "Makefile",
        "molecule",
        ".ansible-lint",
        "ansible.cfg",
        "requirements-test.txt",
        "requirements-unit.txt",
        *tiers,
    ):
        assert not (installed / dev).exists(), dev
    manifest = json.loads((installed / "MANIFEST.json").read_text())["collection_info"]
    assert manifest["dependencies"] == {"kubernetes.core": ">=6.0.0,<7.0.0"}


JOB_TEMPLATE = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: {{ job_name }}
spec:
  runPolicy: {suspend: true}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [{name: launcher, image: localhost/none:1, command: [mpirun, hostname]}]
    Worker:
      replicas: {{ workers }}
      template:
        spec:
          containers: [{name: worker, image: localhost/none:1}]
"""


def test_one_module_defaults_group_configures_kubernetes_core_and_every_module(
    user: UserMachine, kubeconfig: str, namespace: str, operator_crd: None
) -> None:
    play_dir = user.base / "play"
    (play_dir / "files").mkdir(parents=True)
    (play_dir / "templates").mkdir()
    (play_dir / "files/suspended.yaml").write_text(
        JOB_TEMPLATE.replace("{{ job_name }}", "from-files").replace("{{ workers }}", "1")
    )
    (play_dir / "templates/job.yaml.j2").write_text(JOB_TEMPLATE)
    kubeconfig_doc = yaml.safe_load(pathlib.Path(kubeconfig).read_text())
    play = [
        {
            "name": "Everything Kubernetes through one module_defaults block",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {
                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                "job_name": "from-template",
                "workers": 3,
            },
            "module_defaults": {"group/mpi.operator.k8s": {"kubeconfig": kubeconfig}},
            "tasks": [
                {
                    "name": "kubernetes.core reads the namespace",
                    "kubernetes.core.k8s_info": {"kind": "Namespace", "name": namespace},
                    "register": "ns",
                },
                {
                    "name": "mpijob from the play's files/",
                    "mpi.operator.mpijob": {"src": "suspended.yaml", "namespace": namespace},
                    "register": "from_files",
                },
                {
                    "name": "mpijob from the play's templates/",
                    "mpi.operator.mpijob": {"template": "job.yaml.j2", "namespace": namespace},
                    "register": "from_template",
                },
                {"name": "mpijob_info", "mpi.operator.mpijob_info": {"namespace": namespace}, "register": "info"},
                {
                    "name": "mpijob_info with the kubeconfig given as a dict",
                    "mpi.operator.mpijob_info": {"namespace": namespace, "kubeconfig": kubeconfig_doc},
                    "register": "dict",
                },
                {
                    "name": "mpijob_reconcile plans the jobs (check mode)",
                    "mpi.operator.mpijob_reconcile": {"jobs": [{"namespace": namespace, "name": "from-files"}]},
                    "check_mode": True,
                    "register": "plan",
                },
                {
                    "name": "kubernetes.core sees our jobs",
                    "kubernetes.core.k8s_info": {
                        "api_version": "kubeflow.org/v2beta1",
                        "kind": "MPIJob",
                        "namespace": namespace,
                    },
                    "register": "seen",
                },
                {
                    "name": "Report",
                    "ansible.builtin.copy": {
                        "dest": str(user.base / "report.json"),
                        "content": "{{ {'ns': ns.resources | length, 'files': from_files.result.metadata.name,"
                        " 'template': from_template.result.spec.mpiReplicaSpecs.Worker.replicas,"
                        " 'info': info.jobs | map(attribute='summary.name') | sort,"
                        " 'dict': dict.jobs | length, 'plan': plan.jobs[0].name,"
                        " 'seen': seen.resources | map(attribute='metadata.name') | sort} | to_json }}",
                    },
                },
            ],
        }
    ]
    (play_dir / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    proc = user.run("ansible-playbook", str(play_dir / "play.yml"), cwd=user.base)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    report = json.loads((user.base / "report.json").read_text())
    assert report == {
        "ns": 1,
        "files": "from-files",
        "template": 3,
        "info": ["from-files", "from-template"],
        "dict": 2,
        "plan": "from-files",
        "seen": ["from-files", "from-template"],
    }


def test_submit_playbook_from_the_tarball(
    user: UserMachine,
    kubeconfig: str,
    namespace: str,
    operator_crd: None,
    kubectl: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    job = user.base / "submit-job.yaml"
    job.write_text(JOB_TEMPLATE.replace("{{ job_name }}", "submitted").replace("{{ workers }}", "1"))
    proc = user.run(
        "ansible-playbook",
        "mpi.operator.submit",
        "-e",
        f"mpijob_src={job}",
        "-e",
        f"mpijob_namespace={namespace}",
        "-e",
        "mpijob_wait=false",
        "-e",
        f"mpijob_kubeconfig={kubeconfig}",
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "[DEPRECATION WARNING]" not in proc.stdout + proc.stderr
    found = kubectl("get", "mpijobs.kubeflow.org", "-n", namespace, "submitted", "-o", "name")
    assert found.returncode == 0, found.stderr
    # The collection's own example, named as the README names it, from a directory that does not hold it: found in
    # the installed collection (previewed: --check applies nothing).
    assert not (user.base / "examples").exists()
    proc = user.run(
        "ansible-playbook",
        "mpi.operator.submit",
        "-e",
        "mpijob_src=examples/v2beta1/pi.yaml",
        "-e",
        f"mpijob_namespace={namespace}",
        "-e",
        "mpijob_wait=false",
        "-e",
        f"mpijob_kubeconfig={kubeconfig}",
        "--check",
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "changed=1" in proc.stdout, proc.stdout[-3000:]
    assert kubectl("get", "mpijobs.kubeflow.org", "-n", namespace, "pi", "-o", "name").returncode != 0


@pytest.mark.xdist_group("installs")
def test_install_and_uninstall_playbooks_from_the_tarball(
    user: UserMachine, kubeconfig: str, uninstalled: None, tmp_path: pathlib.Path
) -> None:
    from tests.integration._fixtures.install import local_cluster_vars

    vars_file = tmp_path / "vars.json"
    # A user runs ansible-playbook from the virtualenv that has the kubernetes library: its Python runs the modules.
    vars_file.write_text(
        json.dumps(
            {
                **local_cluster_vars(kubeconfig),
                "mpi_operator_kubeconfig": kubeconfig,
                "ansible_python_interpreter": sys.executable,
            }
        )
    )
    for playbook in ("mpi.operator.install", "mpi.operator.uninstall"):
        proc = user.run("ansible-playbook", playbook, "-e", f"@{vars_file}", timeout=900)
        assert proc.returncode == 0, f"{playbook}:\n{proc.stdout[-6000:]}{proc.stderr[-3000:]}"


@pytest.mark.slow
def test_image_playbook_builds_a_working_operator_image_from_the_installed_collection(
    user: UserMachine, tmp_path: pathlib.Path
) -> None:
    """mpi.operator.image with podman, as a user with the tarball runs it: the Containerfile and kubernetes.core come
    from the installed collections, pip goes to PyPI (through this machine's TLS-intercepting proxy: the CA option),
    the archive is written, and the image runs the operator. The base image is the project's own Python image (no
    registry here), loaded into podman as a user's engine would pull it."""
    if os.geteuid() != 0:
        pytest.skip("installs podman and its configuration (hack/worlds/kind/lib.sh): needs root")
    setup = subprocess.run(
        [
            "bash",
            "-c",
            "source hack/worlds/kind/lib.sh && ensure_podman && hack/build/images/build.sh --no-import --print python",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=1200,
    )
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    base_ref, base_tar, _key = setup.stdout.split()[-3:]
    loaded = subprocess.run(["podman", "load", "-q", "-i", base_tar], capture_output=True, text=True, check=False)
    assert loaded.returncode == 0, loaded.stderr
    image = "localhost/mpi-operator-tarball-test:0.1.0"
    archive = tmp_path / "image.tar"
    proc = user.run(
        "ansible-playbook",
        "mpi.operator.image",
        "-e",
        "mpi_operator_image_engine=podman",
        "-e",
        "mpi_operator_image_repository=localhost/mpi-operator-tarball-test",
        "-e",
        f"mpi_operator_image_base={base_ref}",
        "-e",
        "mpi_operator_image_ca_bundle=/etc/ssl/certs/ca-certificates.crt",
        "-e",
        f"mpi_operator_image_archive={archive}",
        timeout=1500,
    )
    try:
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
        assert f"Built {image} with podman." in proc.stdout
        assert (
            "-e mpi_operator_image_repository=localhost/mpi-operator-tarball-test -e mpi_operator_image_tag=0.1.0"
            in (" ".join(proc.stdout.split()))
        )
        # kubernetes.core came from the user's collections path (Galaxy is not reachable here: the build would fail).
        ran = subprocess.run(
            ["podman", "run", "--rm", "--entrypoint", "ansible-galaxy", image, "collection", "list"],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr
        assert re.search(r"kubernetes\.core\s+6\.", ran.stdout) and re.search(r"mpi\.operator\s+0\.1\.0", ran.stdout), (
            ran.stdout
        )
        helped = subprocess.run(
            ["podman", "run", "--rm", image, "--help"], capture_output=True, text=True, check=False, timeout=120
        )
        assert helped.returncode == 0 and "--namespace" in helped.stdout, helped.stdout + helped.stderr
        with tarfile.open(archive) as tar:
            manifest = json.load(tar.extractfile("manifest.json"))
        assert manifest[0]["RepoTags"] == [image], manifest
        # The CA file was for the build only.
        probe = subprocess.run(
            ["podman", "run", "--rm", "--entrypoint", "ls", image, "/tmp"],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert "ca-bundle" not in probe.stdout
    finally:
        subprocess.run(["podman", "rmi", "-f", image], capture_output=True, check=False)
