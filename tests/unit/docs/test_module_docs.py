"""Every module's documentation, as ansible-doc shows it (doc fragments merged by ansible-core's own add_fragments),
agrees with the argument spec the code validates, option by option; the EXAMPLES use only real options; RETURN
parses. One test for every module (mpijob_wait's spec lives in its action plugin)."""

from __future__ import annotations

import importlib

import pytest
import yaml
from ansible.utils.plugin_docs import add_fragments

from tests.support.paths import ROOT

COLLECTION = "ansible_collections.mpi.operator"
MODULES = sorted(p.stem for p in (ROOT / "plugins/modules").glob("*.py") if not p.name.startswith("_"))


class _Fragments:
    """The one method of ansible-core's doc_fragment loader that add_fragments calls, over the importable
    collection (the real loader needs ansible-core's collection finder installed in this process)."""

    def get(self, name: str) -> type | None:
        namespace, collection, stem = name.split(".")
        try:
            mod = importlib.import_module(f"ansible_collections.{namespace}.{collection}.plugins.doc_fragments.{stem}")
        except ImportError:
            return None
        fragment = mod.ModuleDocFragment
        fragment.ansible_name = name
        return fragment


def documented(module) -> dict:
    doc = yaml.safe_load(module.DOCUMENTATION)
    add_fragments(doc, module.__file__, _Fragments(), is_module=True)
    return doc


def argument_spec(name: str, module) -> dict:
    if hasattr(module, "argspec"):
        return module.argspec()
    return importlib.import_module(f"{COLLECTION}.plugins.action.{name}").ARGUMENT_SPEC


def test_every_module_is_here() -> None:
    assert MODULES == [
        "k8s_objects",
        "k8s_read",
        "mpijob",
        "mpijob_info",
        "mpijob_reconcile",
        "mpijob_sync",
        "mpijob_wait",
        "operator_rollout",
    ]


@pytest.mark.parametrize("name", MODULES)
def test_documentation_matches_the_argument_spec(name: str) -> None:
    module = importlib.import_module(f"{COLLECTION}.plugins.modules.{name}")
    doc, spec = documented(module), argument_spec(name, module)
    assert set(doc["options"]) == set(spec)
    for option, arg in spec.items():
        shown = doc["options"][option]
        assert shown.get("description"), option
        assert shown.get("type") == arg.get("type", "str"), option
        assert shown.get("default") == arg.get("default"), option
        assert shown.get("choices") == arg.get("choices"), option
        assert shown.get("elements") == arg.get("elements"), option
        assert sorted(shown.get("aliases") or []) == sorted(arg.get("aliases") or []), option
        assert bool(shown.get("required")) == bool(arg.get("required")), option
    assert {"check_mode", "diff_mode", "idempotent"} <= set(doc["attributes"])
    known = set(spec) | {a for o in spec.values() for a in o.get("aliases", [])}
    used = [t[f"mpi.operator.{name}"] for t in yaml.safe_load(module.EXAMPLES) if f"mpi.operator.{name}" in t]
    assert used and all(set(params) <= known for params in used)
    yaml.safe_load(module.RETURN)
