"""`ansible-test sanity` passes on the collection as users get it (hack/make/sanity.sh: the built tarball, offline)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.ansible import ansible_env
from tests.support.paths import ROOT


@pytest.mark.slow
def test_ansible_test_sanity_passes() -> None:
    proc = subprocess.run(
        ["bash", str(ROOT / "hack/make/sanity.sh")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
        env=ansible_env(),
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-8000:]
    ran = re.findall(r'^Running sanity test "([\w-]+)"', output, re.MULTILINE)
    # The tests that matter for Galaxy and certification ran (none skipped for a missing requirement).
    assert {
        "validate-modules",
        "pylint",
        "pep8",
        "yamllint",
        "import",
        "compile",
        "no-assert",
        "shebang",
        "runtime-metadata",
        "ansible-doc",
    } <= set(ran), ran


def test_every_ignore_line_says_why() -> None:
    for path in (ROOT / "tests/sanity").glob("ignore-*.txt"):
        for line in path.read_text().splitlines():
            if line.strip():
                assert re.match(r"^\S+ [\w-]+(:[\w-]+)? # \S", line), f"{path.name}: {line!r} needs a '# reason'"
