"""The roles' defaults: what users read in meta/argument_specs.yml and galaxy.yml is what the roles use."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.support.paths import ROOT


def test_default_image_tag_is_the_collection_version() -> None:
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    defaults = yaml.safe_load((ROOT / "roles/operator/defaults/main.yml").read_text())
    assert defaults["mpi_operator_image_tag"] == galaxy["version"]


@pytest.mark.parametrize("role", ["preflight", "crds", "operator"])
def test_every_role_default_is_documented_in_its_argument_spec(role: str) -> None:
    defaults = yaml.safe_load((ROOT / f"roles/{role}/defaults/main.yml").read_text())
    specs = yaml.safe_load((ROOT / f"roles/{role}/meta/argument_specs.yml").read_text())["argument_specs"]
    documented: dict[str, Any] = {}
    for entry_point in specs.values():
        for name, option in entry_point["options"].items():
            assert option.get("description"), f"{role}: {name} has no description"
            documented.setdefault(name, option.get("default"))
            assert documented[name] == option.get("default"), f"{role}: {name} defaults differ between entry points"
    # The connection options have no default on purpose: unset, the modules take theirs ($KUBECONFIG, ...).
    unset = {"mpi_operator_kubeconfig", "mpi_operator_context"}
    assert unset <= documented.keys() and not unset & defaults.keys()
    assert all(documented[name] is None for name in unset)
    assert {k: v for k, v in documented.items() if k not in unset} == defaults
