"""Facts the user guide states that the code decides, checked against the code so they stay true: every operator
flag in docs/operator.md's table with its default, every example file in docs/submit.md's table, every RBAC
resource the operator role grants in docs/install.md's table, every phase a job can show in docs/operations.md."""

from __future__ import annotations

import dataclasses
import re

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow
from mpijob_operator.config import Config, _flags
from tests.support.paths import ROOT

DOCS = ROOT / "docs"


def table_cells(page: str, header: str) -> list[str]:
    """The first cells of the rows of the markdown table whose header row starts with `header`."""
    lines = (DOCS / page).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip())
    return rows


def test_every_operator_flag_is_in_the_flag_table_and_no_other():
    documented = {f for cell in table_cells("operator.md", "| flag |") for f in re.findall(r"`(--[a-z-]+)`", cell)}
    documented -= {f"--no-{f[2:]}" for f in list(documented)}
    assert documented == {f"--{name}" for name, *_ in _flags()}


def test_the_flag_table_gives_each_numeric_default_as_the_code_does():
    defaults = {f.name.replace("_", "-"): f.default for f in dataclasses.fields(Config)}
    lines = (DOCS / "operator.md").read_text().splitlines()
    for line in lines:
        m = re.match(r"\| `--([a-z-]+)` \| ([0-9.]+) \|", line)
        if m:
            assert float(m.group(2)) == float(defaults[m.group(1)]), line


def test_every_example_file_is_in_the_example_table():
    cells = " ".join(table_cells("submit.md", "| File |"))
    named = set(re.findall(r"`(examples/[^`]+)`", cells))
    files = {str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*") if p.is_file()}
    assert files - named == set(), "examples without a row in docs/submit.md's Examples table"
    assert named - files == set(), "rows of docs/submit.md's Examples table naming no file"


def test_every_resource_the_operator_role_grants_is_in_the_rbac_table():
    template = (ROOT / "roles/operator/templates/rbac.yaml.j2").read_text()
    granted = set()
    for group in re.findall(r'"resources": \[([^\]]*)\]', template):
        granted |= set(re.findall(r'"([a-z/]+)"', group))
    table = " ".join(table_cells("install.md", "| Grant |"))
    missing = {r for r in granted if not re.search(rf"(?<![a-z/]){re.escape(r)}(?![a-z/])", table)}
    assert missing == set(), "granted by roles/operator/templates/rbac.yaml.j2 but not in docs/install.md's table"


@pytest.mark.parametrize("phase", (C.PENDING, *kubeflow.PHASES))
def test_every_phase_is_in_the_operations_guide(phase):
    text = (DOCS / "operations.md").read_text()
    assert f"`{phase}`" in text


def test_the_troubleshooting_page_quotes_what_its_runs_print():
    """Each text tests/e2e/test_troubleshooting.py requires of a run's output is on docs/troubleshooting.md."""
    from tests.e2e.test_troubleshooting import SEEN

    page = (DOCS / "troubleshooting.md").read_text().replace('\\"', '"')
    missing = [seen for texts in SEEN.values() for seen in texts if seen not in page]
    assert missing == []
