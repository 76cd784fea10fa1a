"""module_utils/objects.py: what an apply, prune or delete of a set of objects changes (the k8s_objects module's
decisions), on objects as the API server returns them."""

from __future__ import annotations

from ansible_collections.mpi.operator.plugins.module_utils import objects as O


def role(name: str, namespace: str = "team", **meta: object) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "rules": [],
    }


def test_server_bookkeeping_and_status_are_no_change() -> None:
    before = role(
        "a",
        resourceVersion="1",
        generation=1,
        uid="u",
        managedFields=[{"manager": "x"}],
        creationTimestamp="2026-11-27T00:00:00Z",
    )
    after = {
        **role("a", resourceVersion="2", generation=2, uid="u", managedFields=[{"manager": "y"}]),
        "status": {"anything": True},
    }
    assert not O.changed(before, after)
    assert O.changed(None, after)  # created
    assert O.changed(before, {**after, "rules": [{"verbs": ["get"]}]})


def test_the_diff_names_the_object_and_leaves_the_bookkeeping_out() -> None:
    after = role("a", resourceVersion="2")
    entry = O.diff(None, after, after)
    assert entry["before"] == {} and entry["before_header"] == entry["after_header"] == "Role team/a"
    assert "resourceVersion" not in entry["after"]["metadata"]
    assert O.label({"kind": "ClusterRole", "metadata": {"name": "x"}}) == "ClusterRole x"


def test_every_bad_definition_is_named_by_its_index() -> None:
    errors = O.invalid([role("ok"), {"kind": "Role", "metadata": {}}, "text"])
    assert errors == [
        "definitions[1]: apiVersion, metadata.name missing",
        "definitions[2]: an object (a dict) is needed, got str",
    ]


def test_discovery_gives_each_kind_its_plural_and_scope_without_subresources() -> None:
    doc = {
        "resources": [
            {"name": "pods", "kind": "Pod", "namespaced": True},
            {"name": "pods/log", "kind": "Pod", "namespaced": True},
            {"name": "namespaces", "kind": "Namespace", "namespaced": False},
        ]
    }
    kinds = O.resources(doc)
    assert kinds == {"Pod": ("pods", True), "Namespace": ("namespaces", False)}
    assert O.path("v1", "pods", True, "a b", "p") == "/api/v1/namespaces/a%20b/pods/p"
    assert O.path("v1", "pods", True) == "/api/v1/pods"  # every namespace's
    assert O.path("rbac.authorization.k8s.io/v1", "clusterroles", False, "ignored", "x") == (
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/x"
    )


def test_prune_keeps_what_is_applied_and_reports_each_stale_object_once() -> None:
    found = [role("keep"), role("old"), role("old"), role("keep", namespace="other")]
    assert [O.ref(o)[2:] for o in O.stale(found, [role("keep")])] == [("team", "old"), ("other", "keep")]
    assert O.stale(found, found) == []


def test_found_objects_carry_their_kind_and_a_missing_one_is_left_out() -> None:
    listed = [{"metadata": {"name": "a", "labels": {"app": "x"}}}, None, {"metadata": {"name": "b"}}]
    out = O.found(listed, "v1", "ConfigMap")
    assert [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in out] == [
        ("v1", "ConfigMap", "a"),
        ("v1", "ConfigMap", "b"),
    ]


def test_a_crd_is_established_only_with_its_condition_true() -> None:
    def crd(*conditions: tuple[str, str]) -> dict:
        return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}

    assert O.established(crd(("NamesAccepted", "True"), ("Established", "True")))
    assert not O.established(crd(("NamesAccepted", "True"), ("Established", "False")))
    assert not O.established(crd()) and not O.established(None) and not O.established({"status": None})


def test_common_labels_and_annotations_reach_every_object_and_pod_template_but_never_win() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "op", "labels": {"app": "op", "team": "own"}},
        "spec": {
            "selector": {"matchLabels": {"app": "op"}},
            "template": {"metadata": {"labels": {"app": "op"}, "annotations": {"a": "1"}}},
        },
    }
    out = O.with_common_metadata(deployment, {"team": "ml", "env": "prod"}, {"owner": "platform"})
    assert out["metadata"]["labels"] == {"team": "own", "env": "prod", "app": "op"}  # the object's own win
    assert out["metadata"]["annotations"] == {"owner": "platform"}
    assert out["spec"]["template"]["metadata"] == {
        "labels": {"team": "ml", "env": "prod", "app": "op"},
        "annotations": {"a": "1"},
    }  # labels only, on pods
    assert out["spec"]["selector"] == {"matchLabels": {"app": "op"}}
    assert deployment["metadata"]["labels"] == {"app": "op", "team": "own"}  # the input is left as it was
    assert O.with_common_metadata(role("a"), {}, {}) == role("a")
    assert O.with_common_metadata(role("a"), {"x": "y"}, {})["metadata"]["labels"] == {"x": "y"}


def test_common_metadata_keys_and_label_values_are_checked_naming_each() -> None:
    assert O.invalid_metadata("common_labels", {"example.com/team": "ml", "a": "", "b_c.d": "x-1"}, True) == []
    errors = O.invalid_metadata(
        "common_labels",
        {"bad key": "x", "team": "has space", "n": 3, "-x": "y", "a/b/c": "z", ("p" * 254) + "/n": "v"},
        True,
    )
    assert [e.split(":")[0] for e in errors] == [
        "common_labels['bad key']",
        "common_labels['team']",
        "common_labels['n']",
        "common_labels['-x']",
        "common_labels['a/b/c']",
        f"common_labels['{'p' * 254}/n']",
    ]
    assert "quote it" in errors[2] and "not a valid label value" in errors[1]
    # Annotation values are free text; their keys are checked alike.
    assert O.invalid_metadata("common_annotations", {"note": "any text at all, over 63 chars " * 3}, False) == []
    assert O.invalid_metadata("common_annotations", {"no/te/s": "x"}, False)[0].startswith(
        "common_annotations['no/te/s']"
    )
