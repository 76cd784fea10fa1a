"""playbooks/install.yml and uninstall.yml against the test cluster, run with ansible-playbook as a user runs them;
and the collection tarball built and installed offline."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration._fixtures.install import CLUSTER_ROLE, INSTALL_NAMESPACE, MANIFESTS, PRIORITYCLASSES_ROLE
from tests.integration._fixtures.reconcile import NOWHERE, _on_kwok, load, run_reconcile
from tests.support.ansible import PlaybookRun
from tests.support.mpijob import condition, create_mpijob, get_mpijob

Playbook = Callable[..., PlaybookRun]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def kubectl_items(kubectl: Kubectl, *args: str) -> list[dict[str, Any]]:
    proc = kubectl("get", *args, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["items"]


def get_json(kubectl: Kubectl, *args: str) -> dict[str, Any] | None:
    proc = kubectl("get", *args, "-o", "json")
    if proc.returncode != 0:
        assert "NotFound" in proc.stderr, proc.stderr
        return None
    return json.loads(proc.stdout)


def user_owned_copies(kubectl: Kubectl, roles: list[tuple[str, str, str]]) -> list[list[str]]:
    """Copies each Role or ClusterRole and its binding as "yours-<name>", as a user who manages the RBAC would make
    them (none of the role's labels); returns, for each, the arguments that delete both."""
    refs = []
    for kind, name, namespace in roles:
        where = ["-n", namespace] if namespace else []
        role, binding = get_json(kubectl, kind, name, *where), get_json(kubectl, kind + "binding", name, *where)
        assert role is not None and binding is not None, (kind, name)
        meta = {"name": "yours-" + name, **({"namespace": namespace} if namespace else {})}
        copies = [
            {"apiVersion": role["apiVersion"], "kind": role["kind"], "metadata": meta, "rules": role["rules"]},
            {
                "apiVersion": binding["apiVersion"],
                "kind": binding["kind"],
                "metadata": meta,
                "roleRef": {**binding["roleRef"], "name": meta["name"]},
                "subjects": binding["subjects"],
            },
        ]
        applied = kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": copies}))
        assert applied.returncode == 0, applied.stderr
        refs.append([*where, f"{kind}/yours-{name}", f"{kind}binding/yours-{name}"])
    return refs


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.serial  # asserts the CRD's resourceVersion: no other test may write it meanwhile
def test_check_diff_on_a_clean_cluster_changes_nothing(
    playbook: Playbook, kubectl: Kubectl, uninstalled: None, operator_crd: None
) -> None:
    crd_before = get_json(kubectl, "crd", "mpijobs.kubeflow.org")
    # The users' aggregated roles are shared by every install: another one (make demo's) may have made them already.
    shared_before = get_json(kubectl, "clusterrole", "mpi-operator-mpijobs-view")
    run = playbook("install.yml", "--check", "--diff").expect_ok()
    assert run.recap["changed"] > 0
    # The diff shows the objects that would be applied, the new namespace's ones in full.
    assert "ClusterRole" in run.output and (shared_before is not None or "mpi-operator-mpijobs-view" in run.output)
    assert f"Would create in namespace {INSTALL_NAMESPACE}" in run.output and "Deployment" in run.output
    assert get_json(kubectl, "namespace", INSTALL_NAMESPACE) is None
    assert get_json(kubectl, "clusterrole", CLUSTER_ROLE) is None
    crd_after = get_json(kubectl, "crd", "mpijobs.kubeflow.org")
    assert crd_before is not None and crd_after is not None
    assert crd_after["metadata"]["resourceVersion"] == crd_before["metadata"]["resourceVersion"]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("installs")
def test_install_rerun_single_namespace_then_uninstall_keeps_the_crd_and_users_mpijobs(
    playbook: Playbook,
    kubectl: Kubectl,
    uninstalled: None,
    operator_crd: None,
    namespace: str,
    kubeconfig: str,
    api_client: Any,
) -> None:
    """One installed operator through its life, as a user meets it: installed, installed again and previewed with no
    change; switched to one watched namespace; then uninstalled, which keeps the CRD and the users' MPIJobs."""
    # 1. All-namespace install; the second run and a preview change nothing.
    first = playbook("install.yml").expect_ok()
    assert first.recap["changed"] > 0
    playbook("install.yml").expect_unchanged()
    playbook("install.yml", "--check", "--diff").expect_unchanged()

    deployment = get_json(kubectl, "deployment", "mpi-operator", "-n", INSTALL_NAMESPACE)
    assert deployment is not None and deployment["status"]["availableReplicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "localhost/mpi-operator:0.1.0"
    assert container["command"] == ["python3", "-m", "mpijob_operator"]
    assert f"--lock-namespace={INSTALL_NAMESPACE}" in container["args"] and "--namespace=" in container["args"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert deployment["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
    # All-namespace mode: a ClusterRole, bound to the operator's ServiceAccount.
    binding = get_json(kubectl, "clusterrolebinding", CLUSTER_ROLE)
    assert binding is not None
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "mpi-operator", "namespace": INSTALL_NAMESPACE}]
    sa = f"--as=system:serviceaccount:{INSTALL_NAMESPACE}:mpi-operator"
    assert kubectl("auth", "can-i", "create", "pods", "-n", "default", sa).stdout.strip() == "yes"
    assert kubectl("auth", "can-i", "delete", "nodes", sa).stdout.strip() == "no"
    # Users' admin/edit/view roles are extended to MPIJobs.
    view = get_json(kubectl, "clusterrole", "view")
    assert view is not None and any("mpijobs" in r.get("resources", []) for r in view.get("rules", []))

    # 2. One watched namespace (with gang scheduling): a Role there, and the ClusterRole is removed. With the chart's
    # service account and disruption budget values: the ServiceAccount renamed (the old one pruned), a PDB.
    scoped = {
        "mpi_operator_watch_namespace": namespace,
        "mpi_operator_gang_scheduling": "volcano",
        "mpi_operator_service_account_name": "mpi-operator-scoped",
        "mpi_operator_service_account_annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"},
        "mpi_operator_pod_disruption_budget": {"maxUnavailable": 1},
        "mpi_operator_common_labels": {"example.com/team": "ml"},
        "mpi_operator_common_annotations": {"example.com/owner": "platform"},
    }
    playbook("install.yml", extra_vars=scoped).expect_ok()
    playbook("install.yml", extra_vars=scoped).expect_unchanged()
    # commonLabels / commonAnnotations on every object made (the namespace existed already: it is left as it is),
    # the labels on the operator's pods too; the selectors stay the role's.
    made = [
        ("crd", "mpijobs.kubeflow.org"),
        ("clusterrole", PRIORITYCLASSES_ROLE),
        ("role", "mpi-operator", "-n", namespace),
        ("rolebinding", "mpi-operator", "-n", namespace),
        *[
            (kind, name, "-n", INSTALL_NAMESPACE)
            for kind, name in (
                ("role", "mpi-operator-leader-election"),
                ("serviceaccount", "mpi-operator-scoped"),
                ("poddisruptionbudget", "mpi-operator"),
                ("deployment", "mpi-operator"),
            )
        ],
    ]
    for ref in made:
        meta = (get_json(kubectl, *ref) or {}).get("metadata", {})
        assert meta.get("labels", {}).get("example.com/team") == "ml", ref
        assert meta.get("annotations", {}).get("example.com/owner") == "platform", ref
    operator = get_json(kubectl, "deployment", "mpi-operator", "-n", INSTALL_NAMESPACE)["spec"]
    assert operator["template"]["metadata"]["labels"]["example.com/team"] == "ml"
    assert "example.com/team" not in operator["selector"]["matchLabels"]
    role = get_json(kubectl, "role", "mpi-operator", "-n", namespace)
    assert role is not None and any("podgroups" in r["resources"] for r in role["rules"])
    assert get_json(kubectl, "clusterrole", CLUSTER_ROLE) is None
    assert get_json(kubectl, "clusterrole", PRIORITYCLASSES_ROLE) is not None
    assert get_json(kubectl, "serviceaccount", "mpi-operator", "-n", INSTALL_NAMESPACE) is None
    account = get_json(kubectl, "serviceaccount", "mpi-operator-scoped", "-n", INSTALL_NAMESPACE)
    assert (
        account is not None
        and account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == "arn:aws:iam::1:role/x"
    )
    pdb = get_json(kubectl, "poddisruptionbudget", "mpi-operator", "-n", INSTALL_NAMESPACE)
    assert pdb is not None and pdb["spec"]["maxUnavailable"] == 1
    sa = f"--as=system:serviceaccount:{INSTALL_NAMESPACE}:mpi-operator-scoped"
    assert kubectl("auth", "can-i", "create", "pods", "-n", namespace, sa).stdout.strip() == "yes"
    assert kubectl("auth", "can-i", "create", "pods", "-n", "default", sa).stdout.strip() == "no"
    assert kubectl("auth", "can-i", "update", "leases", "-n", INSTALL_NAMESPACE, sa).stdout.strip() == "yes"
    args = get_json(kubectl, "deployment", "mpi-operator", "-n", INSTALL_NAMESPACE)["spec"]["template"]["spec"][
        "containers"
    ][0]["args"]
    assert f"--namespace={namespace}" in args and "--gang-scheduling=volcano" in args
    # The installed Role is all a reconcile needs, as the operator's ServiceAccount: a job created, its status write
    # lost, then its Created transition made again, which meets its Event and reads it (make chaos found that GET
    # forbidden in-cluster: the job never left Created).
    reconcile_as_operator(
        kubeconfig, api_client, namespace, f"system:serviceaccount:{INSTALL_NAMESPACE}:mpi-operator-scoped"
    )

    # rbac.create / crd.create false: the user brings the RBAC (here: copies of the role's, under their own names and
    # without its labels) and the CRD. The role's RBAC is removed, the user's kept; the CRD is not written; the
    # operator, bound by the user's grants, still rolls out.
    owned = [
        ("role", "mpi-operator", namespace),
        ("role", "mpi-operator-leader-election", INSTALL_NAMESPACE),
        ("clusterrole", PRIORITYCLASSES_ROLE, ""),
    ]
    yours = user_owned_copies(kubectl, owned)
    crd_version = get_json(kubectl, "crd", "mpijobs.kubeflow.org")["metadata"]["resourceVersion"]
    bare = {**scoped, "mpi_operator_rbac_create": False, "mpi_operator_crd_create": False}
    playbook("install.yml", extra_vars=bare).expect_ok()
    playbook("install.yml", extra_vars=bare).expect_unchanged()
    for kind, name, where in [(k + suffix, n, w) for k, n, w in owned for suffix in ("", "binding")]:
        scope = ["-n", where] if where else []
        assert get_json(kubectl, kind, name, *scope) is None, (kind, name)
        assert get_json(kubectl, kind, "yours-" + name, *scope) is not None, (kind, name)
    assert get_json(kubectl, "crd", "mpijobs.kubeflow.org")["metadata"]["resourceVersion"] == crd_version
    assert kubectl("auth", "can-i", "create", "pods", "-n", namespace, sa).stdout.strip() == "yes"
    playbook("install.yml", extra_vars=scoped).expect_ok()
    for ref in yours:
        deleted = kubectl("delete", *ref)
        assert deleted.returncode == 0, deleted.stderr

    # 3. Uninstall. Asked to remove the CRD while it holds a job: refused, naming the job, and nothing is removed
    # (the flag given as `-e mpi_operator_remove_crds=true` gives it: a string).
    applied = kubectl("apply", "-n", namespace, "-f", str(MANIFESTS / "openmpi-helloworld.v2beta1.yaml"))
    assert applied.returncode == 0, applied.stderr
    refused = playbook("uninstall.yml", extra_vars={**scoped, "mpi_operator_remove_crds": "true"})
    assert refused.returncode != 0
    assert f"{namespace}/openmpi-helloworld" in refused.output and "mpi_operator_remove_crds_force" in refused.output
    assert get_json(kubectl, "deployment", "mpi-operator", "-n", INSTALL_NAMESPACE) is not None

    # An MPIJob in the operator's own namespace keeps the namespace (the operator and its grants go).
    parked = kubectl("apply", "-n", INSTALL_NAMESPACE, "-f", str(MANIFESTS / "openmpi-helloworld.v2beta1.yaml"))
    assert parked.returncode == 0, parked.stderr
    removed = playbook("uninstall.yml", extra_vars=scoped).expect_ok()
    assert removed.recap["changed"] > 0
    assert f"The namespace {INSTALL_NAMESPACE} is kept: it holds 1 MPIJob(s)." in removed.output
    assert get_json(kubectl, "namespace", INSTALL_NAMESPACE) is not None
    assert get_json(kubectl, "deployment", "mpi-operator", "-n", INSTALL_NAMESPACE) is None
    assert get_json(kubectl, "poddisruptionbudget", "mpi-operator", "-n", INSTALL_NAMESPACE) is None
    assert get_json(kubectl, "serviceaccount", "mpi-operator-scoped", "-n", INSTALL_NAMESPACE) is None
    # Without it, the next uninstall removes the namespace this collection created.
    gone = kubectl("delete", "-n", INSTALL_NAMESPACE, "mpijobs.kubeflow.org", "openmpi-helloworld", "--wait=true")
    assert gone.returncode == 0, gone.stderr
    playbook("uninstall.yml", extra_vars=scoped).expect_ok()
    assert get_json(kubectl, "clusterrole", PRIORITYCLASSES_ROLE) is None
    assert get_json(kubectl, "role", "mpi-operator", "-n", namespace) is None
    others = [
        d
        for d in kubectl_items(kubectl, "deployments", "-A", "-l", "app.kubernetes.io/managed-by=mpi.operator")
        if d["metadata"]["namespace"] != INSTALL_NAMESPACE
    ]
    # The MPIJob rules in the users' roles are shared: removed with the last install only.
    assert (get_json(kubectl, "clusterrole", "mpi-operator-mpijobs-edit") is None) == (not others)
    assert get_json(kubectl, "namespace", INSTALL_NAMESPACE) is None
    assert get_json(kubectl, "crd", "mpijobs.kubeflow.org") is not None
    assert get_json(kubectl, "mpijobs.kubeflow.org", "openmpi-helloworld", "-n", namespace) is not None
    # Uninstalling again is a no-op.
    playbook("uninstall.yml", extra_vars=scoped).expect_unchanged()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("installs")
def test_uninstalling_one_install_leaves_another_installs_grants(
    playbook: Playbook, kubectl: Kubectl, uninstalled: None, operator_crd: None, namespace: str
) -> None:
    """Two single-namespace installs (each with gang scheduling, so each has cluster-scoped grants): removing one
    keeps every grant of the other, and the shared MPIJob rules of the users' roles until the last one goes."""
    other_ns = f"{INSTALL_NAMESPACE}-2"
    watched2 = f"{namespace[:60]}-2"
    assert kubectl("create", "namespace", watched2).returncode == 0
    other = {
        "mpi_operator_namespace_name": other_ns,
        "mpi_operator_watch_namespace": watched2,
        "mpi_operator_gang_scheduling": "volcano",
    }
    try:
        playbook(
            "install.yml",
            extra_vars={"mpi_operator_watch_namespace": namespace, "mpi_operator_gang_scheduling": "volcano"},
        ).expect_ok()
        playbook("install.yml", extra_vars=other).expect_ok()
        assert get_json(kubectl, "clusterrolebinding", PRIORITYCLASSES_ROLE) is not None
        assert get_json(kubectl, "clusterrolebinding", f"mpi-operator-priorityclasses:{other_ns}") is not None

        playbook("uninstall.yml").expect_ok()
        assert get_json(kubectl, "clusterrolebinding", PRIORITYCLASSES_ROLE) is None
        assert get_json(kubectl, "rolebinding", "mpi-operator", "-n", namespace) is None
        # The other install keeps its grants ...
        sa2 = f"--as=system:serviceaccount:{other_ns}:mpi-operator"
        assert kubectl("auth", "can-i", "list", "priorityclasses", sa2).stdout.strip() == "yes"
        assert kubectl("auth", "can-i", "create", "pods", "-n", watched2, sa2).stdout.strip() == "yes"
        # ... and the users' roles keep the MPIJob rules it needs.
        assert get_json(kubectl, "clusterrole", "mpi-operator-mpijobs-edit") is not None

        playbook("uninstall.yml", extra_vars=other).expect_ok()
        assert get_json(kubectl, "clusterrolebinding", f"mpi-operator-priorityclasses:{other_ns}") is None
        assert kubectl("auth", "can-i", "list", "priorityclasses", sa2).stdout.strip() == "no"
    finally:
        playbook("uninstall.yml", extra_vars=other)
        kubectl("delete", "namespace", watched2, "--wait=false")


@pytest.mark.integration
def test_preflight_fails_on_an_old_cluster_naming_its_version(playbook: Playbook, operator_crd: None) -> None:
    run = playbook("install.yml", extra_vars={"mpi_operator_min_kubernetes_version": "1.99"})
    assert run.returncode != 0
    assert "The Kubernetes server is v1.35" in run.output and "needs 1.99 or newer" in run.output
    assert run.recap["changed"] == 0


@pytest.mark.integration
@pytest.mark.serial  # relabels the kubeflow.org CRD: every concurrent install or CRD write would see it
def test_preflight_fails_when_another_operator_owns_the_crd(
    playbook: Playbook, kubectl: Kubectl, operator_crd: None, install_lock: None
) -> None:
    foreign = kubectl(
        "label", "--overwrite", "crd", "mpijobs.kubeflow.org", "app.kubernetes.io/managed-by=kubeflow-mpi-operator"
    )
    assert foreign.returncode == 0, foreign.stderr
    try:
        run = playbook("install.yml")
        assert run.returncode != 0
        assert "appears to be owned by kubeflow-mpi-operator" in run.output
        assert "mpi_operator_adopt_crd=true" in run.output
        assert run.recap["changed"] == 0
    finally:
        restored = kubectl(
            "label", "--overwrite", "crd", "mpijobs.kubeflow.org", "app.kubernetes.io/managed-by=mpi.operator"
        )
        assert restored.returncode == 0, restored.stderr


@pytest.mark.integration
def test_preflight_fails_when_the_watched_namespace_is_missing(playbook: Playbook, operator_crd: None) -> None:
    run = playbook("install.yml", extra_vars={"mpi_operator_watch_namespace": "no-such-namespace"})
    assert run.returncode != 0
    assert "the namespace no-such-namespace does not exist" in run.output


def reconcile_as_operator(kubeconfig: str, api_client: Any, namespace: str, account: str) -> None:
    """mpijob_reconcile run as `account` through a job's first pass, a lost status write and the pass that redoes its
    transition: no error, one MPIJobCreated Event."""
    from kubernetes import client

    body = _on_kwok(load("openmpi-helloworld.v2beta1.yaml"), NOWHERE)
    body["metadata"]["name"] = "as-operator"
    create_mpijob(api_client, namespace, body)
    jobs = [{"namespace": namespace, "name": "as-operator"}]
    who = {"impersonate_user": account, "impersonate_groups": ["system:serviceaccounts"]}
    first = run_reconcile(kubeconfig, jobs, **who)
    assert first.job("as-operator")["error"] is None, first.result
    job = get_mpijob(api_client, namespace, "as-operator")
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object_status(
        "kubeflow.org", "v2beta1", namespace, "mpijobs", "as-operator", {**job, "status": {}}
    )
    again = run_reconcile(kubeconfig, jobs, **who)
    assert again.job("as-operator")["error"] is None, again.result
    assert condition(get_mpijob(api_client, namespace, "as-operator"), "Created")["status"] == "True"
    created = [
        e.count or 1
        for e in client.CoreV1Api(api_client).list_namespaced_event(namespace).items
        if e.reason == "MPIJobCreated" and e.involved_object.name == "as-operator"
    ]
    assert created == [1]
