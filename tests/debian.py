"""Programs of Debian packages the tests run as their own processes, unpacked into the cache by hack/build/deb-unpack.sh
(nothing installed or started on the system)."""

from __future__ import annotations

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]


def deb_program(package: str, program: str, *others: str) -> str:
    """The path of `program` from Debian's `package` (with `others` of the same package unpacked beside it)."""
    proc = subprocess.run(
        ["bash", str(ROOT / "hack/build/deb-unpack.sh"), package, program, *others],
        capture_output=True,
        check=False,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"hack/build/deb-unpack.sh {package}: {proc.stderr}"
    return f"{proc.stdout.strip()}/{program}"
