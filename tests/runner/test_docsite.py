"""The collection's docsite as Ansible users read it (hack/make/docsite.sh: antsibull-docs and Sphinx), opened in
headless Chromium (Debian's, hack/build/chromium.sh): each module's page shows every option of its argument spec.
MPI_DOCSITE_SCREENSHOT=PATH also saves a screenshot of mpijob's page."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest
import yaml

from tests.support.paths import ROOT

MODULES = sorted(p.stem for p in (ROOT / "plugins/modules").glob("*.py") if not p.name.startswith("_"))
HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# One worker builds the site once (the build removes its directory first: two at once broke each other in CI).
pytestmark = pytest.mark.xdist_group("docsite")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    env = dict(os.environ, MPI_DOCSITE_DIR=str(tmp_path_factory.mktemp("docsite")))
    proc = subprocess.run(
        ["bash", str(ROOT / "hack/make/docsite.sh")], capture_output=True, text=True, timeout=900, env=env
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return pathlib.Path(proc.stdout.strip().splitlines()[-1]).parent


@pytest.fixture(scope="module")
def chromium() -> str:
    proc = subprocess.run(["bash", str(ROOT / "hack/build/chromium.sh")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def rendered(chromium: str, page: pathlib.Path, profile: pathlib.Path, *extra: str) -> str:
    """The page's DOM after Chromium rendered it (its scripts run), or what `extra` asks Chromium for."""
    proc = subprocess.run(
        [chromium, *HEADLESS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def documented_options(module: str) -> set[str]:
    """The top-level options ansible-doc shows for `module` (its DOCUMENTATION and doc fragments)."""
    out = subprocess.run(
        ["ansible-doc", "--json", f"mpi.operator.{module}"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    return set(yaml.safe_load(out)[f"mpi.operator.{module}"]["doc"].get("options") or {})


@pytest.mark.parametrize("module", MODULES)
def test_each_module_page_shows_every_option(site: pathlib.Path, chromium: str, module: str, tmp_path: pathlib.Path):
    dom = rendered(chromium, site / f"{module}_module.html", tmp_path, "--dump-dom")
    assert f"mpi.operator.{module} module" in dom
    missing = sorted(o for o in documented_options(module) if f'id="parameter-{o}"' not in dom)
    assert missing == [], f"{module}'s page lacks options {missing}"


def test_the_index_links_every_module_and_role(site: pathlib.Path, chromium: str, tmp_path: pathlib.Path) -> None:
    dom = rendered(chromium, site / "index.html", tmp_path, "--dump-dom")
    for module in MODULES:
        assert f'href="{module}_module.html' in dom, module
    for role in sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta/argument_specs.yml").exists()):
        assert f'href="{role}_role.html' in dom, role
    shot = os.environ.get("MPI_DOCSITE_SCREENSHOT")
    if shot:
        rendered(chromium, site / "mpijob_module.html", tmp_path, f"--screenshot={shot}", "--window-size=1280,1400")
        assert pathlib.Path(shot).stat().st_size > 10_000
