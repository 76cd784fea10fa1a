"""mpi_operator_apis: which MPIJob APIs an install serves. The roles' RBAC template rendered by Ansible's own templar,
and the wiring every role needs for each API (its CRD file, its documented choice, its version, its original owner)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import REGISTRY
from tests.support.paths import ROOT

ROLES = ROOT / "roles"
APIS = ["kubeflow.org", "batch.tensorstack.dev", "batch.test.bdap.com"]
SERVED = {a.group: a for a in REGISTRY.values()}


def templar(role: str, **overrides: Any) -> Templar:
    """Ansible's templar with the role's defaults, vars and `overrides`, as the role's tasks see them."""
    variables: dict[str, Any] = {}
    variables.update(yaml.safe_load((ROLES / role / "defaults/main.yml").read_text()))
    variables.update(yaml.safe_load((ROLES / role / "vars/main.yml").read_text()))
    variables.update(overrides)
    variables = {k: trusted(v) if isinstance(v, str) else v for k, v in variables.items()}
    return Templar(loader=DataLoader(), variables=variables)


def trusted(source: str) -> Any:
    try:  # ansible-core 2.19+ renders only trusted templates: the role's files are, as when the role runs
        from ansible.template import trust_as_template
    except ImportError:
        return source
    return trust_as_template(source)


def render_rbac(**overrides: Any) -> list[dict]:
    source = trusted((ROLES / "operator/templates/rbac.yaml.j2").read_text())
    return [d for d in yaml.safe_load_all(templar("operator", **overrides).template(source)) if d]


def mpijob_groups(rules: list[dict]) -> set[str]:
    return {g for r in rules if any(res.startswith("mpijobs") for res in r["resources"]) for g in r["apiGroups"]}


def operator_rules(docs: list[dict]) -> list[dict]:
    (role,) = [
        d
        for d in docs
        if d["kind"] in ("ClusterRole", "Role")
        and d["metadata"]["name"].startswith("mpi-operator")
        and not d["metadata"]["name"].startswith(
            ("mpi-operator-mpijobs", "mpi-operator-priorityclasses", "mpi-operator-nodes")
        )
    ]
    return role["rules"]


def aggregated(docs: list[dict]) -> dict[str, list[dict]]:
    return {d["metadata"]["name"]: d["rules"] for d in docs if d["metadata"]["name"].startswith("mpi-operator-mpijobs")}


def test_default_serves_kubeflow_org_only_with_the_names_it_always_had() -> None:
    docs = render_rbac()
    assert mpijob_groups(operator_rules(docs)) == {"kubeflow.org"}
    roles = aggregated(docs)
    assert sorted(roles) == ["mpi-operator-mpijobs-admin", "mpi-operator-mpijobs-edit", "mpi-operator-mpijobs-view"]
    assert {
        "apiGroups": ["kubeflow.org"],
        "resources": ["mpijobs/scale"],
        "verbs": ["get", "update", "patch"],
    } in roles["mpi-operator-mpijobs-edit"]


@pytest.mark.parametrize("watch_namespace", ["", "team-a"])
def test_rbac_grows_by_the_chosen_apis_only(watch_namespace: str) -> None:
    docs = render_rbac(
        mpi_operator_apis=["kubeflow.org", "batch.test.bdap.com"], mpi_operator_watch_namespace=watch_namespace
    )
    rules = operator_rules(docs)
    assert mpijob_groups(rules) == {"kubeflow.org", "batch.test.bdap.com"}
    # the rules for the jobs' children are kubeflow.org's, plus what bdap's kubectl exec launchers need
    children = [r for r in rules if not any(res.startswith("mpijobs") for res in r["resources"])]
    default_children = [
        r
        for r in operator_rules(render_rbac(mpi_operator_watch_namespace=watch_namespace))
        if not any(res.startswith("mpijobs") for res in r["resources"])
    ]
    kubexec = [r for r in children if r not in default_children]
    assert [r for r in children if r in default_children] == default_children
    assert {(tuple(r["apiGroups"]), tuple(r["resources"])) for r in kubexec} == {
        (("",), ("serviceaccounts",)),
        (("rbac.authorization.k8s.io",), ("roles", "rolebindings")),
        (("",), ("pods/exec",)),
    }
    assert next(r for r in kubexec if r["resources"] == ["pods/exec"])["verbs"] == ["create"]
    t9k = operator_rules(render_rbac(mpi_operator_apis=["batch.tensorstack.dev"]))
    assert not any("pods/exec" in r["resources"] or "serviceaccounts" in r["resources"] for r in t9k)
    roles = aggregated(docs)
    assert sorted(roles) == sorted(
        [f"mpi-operator-mpijobs-{r}" for r in ("admin", "edit", "view")]
        + [f"mpi-operator-mpijobs.batch.test.bdap.com-{r}" for r in ("admin", "edit", "view")]
    )
    bdap_edit = roles["mpi-operator-mpijobs.batch.test.bdap.com-edit"]
    assert mpijob_groups(bdap_edit) == {"batch.test.bdap.com"}
    # its CRD has a scale subresource too: editors may `kubectl scale mpijobs.batch.test.bdap.com/NAME`
    assert {
        "apiGroups": ["batch.test.bdap.com"],
        "resources": ["mpijobs/scale"],
        "verbs": ["get", "update", "patch"],
    } in bdap_edit
    assert not any("mpijobs/scale" in r["resources"] for r in roles["mpi-operator-mpijobs.batch.test.bdap.com-view"])


def test_one_api_without_kubeflow_org_names_no_kubeflow_org_rule() -> None:
    docs = render_rbac(mpi_operator_apis=["batch.tensorstack.dev"])
    assert mpijob_groups(operator_rules(docs)) == {"batch.tensorstack.dev"}
    assert all(mpijob_groups(rules) == {"batch.tensorstack.dev"} for rules in aggregated(docs).values())


def test_the_registry_serves_the_three_apis_kubeflow_org_first() -> None:
    assert list(SERVED) == APIS


@pytest.mark.parametrize("role", ["crds", "preflight", "operator"])
def test_every_role_offers_the_registry_apis_with_kubeflow_org_by_default(role: str) -> None:
    defaults = yaml.safe_load((ROLES / role / "defaults/main.yml").read_text())
    assert defaults["mpi_operator_apis"] == ["kubeflow.org"]
    specs = yaml.safe_load((ROLES / role / "meta/argument_specs.yml").read_text())["argument_specs"]
    for entry in specs.values():
        option = entry["options"].get("mpi_operator_apis")
        if option is not None:  # the registry decides what is served, not a list here
            assert (option["type"], option["elements"], option.get("choices")) == ("list", "str", None)
    # ... and every entry point checks the choice against it first
    for tasks in ("main.yml", "remove.yml"):
        path = ROLES / role / "tasks" / tasks
        if path.exists() and "mpi_operator_apis" in path.read_text():
            first = yaml.safe_load(path.read_text())[0]
            assert (
                first["ansible.builtin.assert"]["that"]
                == "_mpi_operator_chosen_apis | length == mpi_operator_apis | length"
            )
    chosen = templar(role, mpi_operator_apis=["batch.test.bdap.com", "kubeflow.org"])
    assert [a["group"] for a in chosen.template(trusted("{{ _mpi_operator_chosen_apis }}"))] == [
        "batch.test.bdap.com",
        "kubeflow.org",
    ]


@pytest.mark.parametrize("role", ["crds", "preflight", "operator"])
def test_an_api_not_served_fails_naming_the_option_and_what_is_served(role: str) -> None:
    with pytest.raises(
        Exception,
        match=r"mpi_operator_apis: 'mpijobs\.example\.com' is not an MPIJob API served by "
        r"mpi\.operator \(served: kubeflow\.org, batch\.tensorstack\.dev, batch\.test\.bdap\.com\)",
    ):
        templar(role, mpi_operator_apis=["kubeflow.org", "mpijobs.example.com"]).template(
            trusted("{{ _mpi_operator_chosen_apis }}")
        )


@pytest.mark.parametrize("group", APIS)
def test_each_api_has_its_crd_file_version_and_original_owner(group: str) -> None:
    crd = yaml.safe_load((ROLES / "crds/files" / f"mpijobs.{group}.yaml").read_text())
    assert crd["metadata"]["name"] == f"mpijobs.{group}" == SERVED[group].crd_name
    storage = next(v["name"] for v in crd["spec"]["versions"] if v["storage"])
    assert [v["name"] for v in crd["spec"]["versions"]] == list(SERVED[group].versions)
    for role in ("crds", "operator"):
        versions = templar(role).template(trusted("{{ _mpi_operator_api_versions }}"))
        assert versions[group] == storage, role
    owners = templar("preflight").template(trusted("{{ _mpi_operator_original }}"))
    assert owners[group] == SERVED[group].original and owners[group].startswith("the ")


def test_crds_role_applies_only_the_chosen_apis() -> None:
    (task,) = [
        t for t in yaml.safe_load((ROLES / "crds/tasks/main.yml").read_text()) if "mpi.operator.k8s_objects" in t
    ]
    definitions = task["mpi.operator.k8s_objects"]["definitions"]
    # One task for every chosen API's file, mpijobs.<group>.yaml (tests/integration/test_api_crds.py applies them).
    assert "mpi_operator_apis" in definitions and "'mpijobs.\\1.yaml'" in definitions
    assert task["mpi.operator.k8s_objects"]["wait"] == "{{ mpi_operator_wait }}"


@pytest.mark.parametrize("namespace", ["", "team-a"])
def test_the_operator_may_get_nodes_in_both_modes_and_nothing_more(namespace: str) -> None:
    """A failure policy reads the nodes of a job's pods (a lost node is a disruption): get, cluster-wide."""
    docs = render_rbac(mpi_operator_watch_namespace=namespace)
    node_rules = [r for d in docs if d["kind"] == "ClusterRole" for r in d["rules"] if "nodes" in r["resources"]]
    assert node_rules == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    if namespace:
        bound = [d for d in docs if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == "mpi-operator-nodes"]
        assert bound and bound[0]["roleRef"]["name"] == "mpi-operator-nodes"
