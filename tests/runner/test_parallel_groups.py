"""hack/make/test.sh's parallel phase rests on pytest-xdist's `--dist loadgroup`: the tests of one `xdist_group` (fixed
names, one port, one installed operator) run on one worker, one after the other. pytest 9.2 broke that silently with
pytest-xdist 3.8 (groups ran on any worker): this runs a small suite the same way and looks at where each test ran."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

SUITE = """
import time
import pytest

pytestmark = pytest.mark.xdist_group("one")

@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    time.sleep(0.3)  # long enough for an idle worker to take one, were the group not kept together
"""
OTHERS = """
import time
import pytest

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    time.sleep(0.1)
"""


def test_a_group_runs_on_one_worker_and_the_rest_spreads(tmp_path: pathlib.Path) -> None:
    (tmp_path / "test_grouped.py").write_text(SUITE)
    (tmp_path / "test_free.py").write_text(OTHERS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "3",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    ran = re.findall(r"^\[(gw\d+)\] .*PASSED (\S+)", proc.stdout, re.MULTILINE)
    # xdist names a grouped test after its group: the scheduler keeps a group together by that name
    assert all(test.endswith("@one") for _, test in ran if "test_grouped" in test), proc.stdout
    grouped = {worker for worker, test in ran if "test_grouped" in test}
    assert len([t for _, t in ran if "test_grouped" in t]) == 6 and len(grouped) == 1, proc.stdout
    assert len({worker for worker, _ in ran}) > 1, proc.stdout  # and the others went elsewhere too
