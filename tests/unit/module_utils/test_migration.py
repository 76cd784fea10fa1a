"""The switch between the Kubeflow MPI Operator and this collection's (plugins/module_utils/migration.py), fed the
objects as the API returns them: which Deployments are MPI operators, the settings carried over (the Kubeflow
Deployment's flags and placement, a Helm chart's values), the plan both ways and its refusals.

The Kubeflow objects are transcribed from its v0.8.2 manifest (deploy/v2beta1/mpi-operator.yaml), the community chart's
values from its releases' hack/helm/mpi-operator (up to v0.3.0), the cloud vendor chart's keys from its page."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.mpi.operator.plugins.module_utils import migration as M

KF_LABELS = {
    "app": "mpi-operator",
    "app.kubernetes.io/component": "mpijob",
    "app.kubernetes.io/name": "mpi-operator",
    "kustomize.component": "mpi-operator",
}
OUR_LABELS = {"app.kubernetes.io/name": "mpi-operator", "app.kubernetes.io/managed-by": "mpi.operator"}


def kubeflow_deployment(namespace="mpi-operator", args=None, replicas=1, running=1, **pod):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "mpi-operator",
            "namespace": namespace,
            "labels": dict(KF_LABELS),
            "uid": "u1",
            "resourceVersion": "7",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {"deployment.kubernetes.io/revision": "1"},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(KF_LABELS)},
            "template": {
                "metadata": {"labels": dict(KF_LABELS)},
                "spec": {
                    "serviceAccountName": "mpi-operator",
                    "containers": [
                        {
                            "name": "mpi-operator",
                            "image": "mpioperator/mpi-operator:0.8.2",
                            "args": args if args is not None else ["-alsologtostderr", "--lock-namespace=mpi-operator"],
                        }
                    ],
                    **pod,
                },
            },
        },
        "status": {"replicas": running},
    }


def our_deployment(namespace="mpi-operator", watch="", replicas=1, running=1):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "mpi-operator", "namespace": namespace, "labels": dict(OUR_LABELS)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "mpi-operator"}},
            "template": {
                "spec": {
                    "serviceAccountName": "mpi-operator",
                    "containers": [
                        {
                            "name": "mpi-operator",
                            "image": "localhost/mpi-operator:0.1.0",
                            "command": ["python3", "-m", "mpijob_operator"],
                            "args": [f"--namespace={watch}"] if watch else [],
                        }
                    ],
                }
            },
        },
        "status": {"replicas": running},
    }


def kubeflow_rbac(namespace="mpi-operator"):
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "mpi-operator", "namespace": namespace}}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "mpi-operator", "labels": dict(KF_LABELS)},
        "rules": [{"apiGroups": ["kubeflow.org"], "resources": ["mpijobs"], "verbs": ["*"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "mpi-operator", "labels": dict(KF_LABELS)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mpi-operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "mpi-operator", "namespace": namespace}],
    }
    users = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}}
        for name in M.KUBEFLOW_USER_ROLES
    ]
    admin = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "admin"}}
    return sa, [role, *users, admin], [binding]


def crd(labels=None, annotations=None, served=("v2beta1",), stored=("v2beta1",), **meta):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "mpijobs.kubeflow.org",
            "labels": dict(KF_LABELS) if labels is None else labels,
            "annotations": {"controller-gen.kubebuilder.io/version": "v0.20.1"} if annotations is None else annotations,
            **meta,
        },
        "spec": {"versions": [{"name": v, "served": True, "storage": v == stored[0]} for v in served]},
        "status": {"storedVersions": list(stored)},
    }


def job(name="pi", namespace="team", phase="Running", api_version="kubeflow.org/v2beta1", **spec):
    conditions = {
        "Running": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}],
        "Succeeded": [{"type": "Created", "status": "True"}, {"type": "Succeeded", "status": "True"}],
        None: [],
    }[phase]
    return {
        "apiVersion": api_version,
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [{"name": "l", "image": "i"}]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}},
            },
            **spec,
        },
        "status": {"conditions": conditions},
    }


def results(*groups: tuple[str, list[dict]]) -> list[dict]:
    """k8s_read's results shape."""
    return [{"kind": kind, "resources": resources} for kind, resources in groups]


def cluster(deployments, jobs=(), the_crd=None, backups=(), namespace="mpi-operator", extra_namespaces=()):
    sa, roles, bindings = kubeflow_rbac(namespace)
    first = results(
        ("Deployment", list(deployments)),
        ("CustomResourceDefinition", [crd() if the_crd is None else the_crd] if the_crd is not False else []),
        ("ConfigMap", list(backups)),
        ("ClusterRole", roles),
        ("ClusterRoleBinding", bindings),
        ("MPIJob", list(jobs)),
    )
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": dict(KF_LABELS)}}
    second = results(("ServiceAccount", [sa]), ("Namespace", [ns, *extra_namespaces]))
    return first, second


# This collection's objects at the default settings, as roles/operator renders them (names only matter here).
OURS_DEFAULT = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "mpi-operator"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "mpi-operator"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "mpi-operator", "namespace": "mpi-operator"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mpi-operator", "namespace": "mpi-operator"}},
]
DEFAULTS = {"mpi_operator_namespace_name": "mpi-operator", "mpi_operator_watch_namespace": ""}
# What the switch saves of the Kubeflow install of kubeflow_deployment() and kubeflow_rbac().
KUBEFLOW_OBJECTS = [
    "Deployment mpi-operator/mpi-operator",
    "ServiceAccount mpi-operator/mpi-operator",
    "ClusterRole mpi-operator",
    "ClusterRole kubeflow-mpijobs-admin",
    "ClusterRole kubeflow-mpijobs-edit",
    "ClusterRole kubeflow-mpijobs-view",
    "ClusterRoleBinding mpi-operator",
]


def plan_to_ours(first, second, settings=DEFAULTS, **kwargs):
    carried = M.migration_settings(first, kwargs.pop("values", None), M.OURS)
    return M.plan(
        M.OURS,
        first,
        second,
        settings=settings,
        carried=carried,
        ours_objects=OURS_DEFAULT,
        now="2026-12-01T00:00:00Z",
        **kwargs,
    )


# --- which Deployments are MPI operators ------------------------------------------------------------------------------


def test_operators_are_told_apart_by_labels_image_and_flags() -> None:
    chart = kubeflow_deployment()
    chart["metadata"]["labels"] = {"app": "mpi-operator", "chart": "mpi-operator-0.0.1", "release": "r"}
    by_image = kubeflow_deployment()
    by_image["metadata"]["labels"] = {}
    by_flags = kubeflow_deployment(args=["--lock-namespace", "x"])
    by_flags["metadata"]["labels"] = {}
    by_flags["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/ml/operator:1"
    training = kubeflow_deployment()
    training["metadata"]["labels"] = {"control-plane": "kubeflow-training-operator"}
    other = kubeflow_deployment()
    other["metadata"]["labels"] = {}
    other["spec"]["template"]["spec"]["containers"][0].update(image="nginx:1", args=[])
    assert M.operator_kind(kubeflow_deployment()) == M.KUBEFLOW
    assert M.operator_kind(chart) == M.KUBEFLOW
    assert M.operator_kind(by_image) == M.KUBEFLOW
    assert M.operator_kind(by_flags) == M.KUBEFLOW
    assert M.operator_kind(our_deployment()) == M.OURS
    assert M.operator_kind(training) == M.OTHER
    assert M.operator_kind(other) is None


def test_go_flags_and_the_watched_namespace() -> None:
    assert M.parse_flags(["-alsologtostderr", "--lock-namespace=a", "-namespace", "team", "--threadiness", "4"]) == {
        "alsologtostderr": "true",
        "lock-namespace": "a",
        "namespace": "team",
        "threadiness": "4",
    }
    assert M.watch_scope(kubeflow_deployment()) == ""
    assert M.watch_scope(kubeflow_deployment(args=["-namespace=team"])) == "team"
    chart = kubeflow_deployment(args=[])
    chart["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "KUBEFLOW_NAMESPACE", "value": "ml"}]
    assert M.watch_scope(chart) == "ml"  # the flag's default in the Kubeflow operator
    assert M.watch_scope(our_deployment(watch="team")) == "team"


# --- the settings carried over ----------------------------------------------------------------------------------------


def test_settings_from_the_kubeflow_deployment() -> None:
    d = kubeflow_deployment(
        namespace="ml-system",
        args=[
            "-alsologtostderr",
            "--lock-namespace=ml-system",
            "--namespace=team",
            "--gang-scheduling=volcano",
            "--kube-api-qps",
            "50",
            "--threadiness=4",
            "--controller-queue-burst=200",
            "--monitoring-port=0",
        ],
        replicas=2,
        nodeSelector={"role": "system"},
        tolerations=[{"key": "system", "operator": "Exists"}],
        imagePullSecrets=[{"name": "regcred"}],
    )
    s = M.settings_from_kubeflow(d)
    assert s.variables == {
        "mpi_operator_namespace_name": "ml-system",
        "mpi_operator_watch_namespace": "team",
        "mpi_operator_gang_scheduling": "volcano",
        "mpi_operator_kube_api_qps": 50,
        "mpi_operator_threadiness": 4,
        "mpi_operator_replicas": 2,
        "mpi_operator_node_selector": {"role": "system"},
        "mpi_operator_tolerations": [{"key": "system", "operator": "Exists"}],
        "mpi_operator_image_pull_secrets": ["regcred"],
    }
    assert s.sources["mpi_operator_watch_namespace"] == "Deployment ml-system/mpi-operator: --namespace"
    notes = "\n".join(s.not_carried)
    assert "--controller-queue-burst=200" in notes and "--alsologtostderr=true" in notes
    assert "--monitoring-port=0" in notes


def test_vendor_chart_values_keys() -> None:
    """The cloud vendor chart's documented keys: the namespace goes to this install, the image is the one left."""
    values = {
        "image": {"repository": "ccr.ccs.tencentyun.com/tke-market/mpi-operator", "tag": "latest"},
        "namespace": {"create": True, "name": "mpi-operator"},
    }
    s = M.settings_from_values(values)
    assert s.variables == {"mpi_operator_namespace_create": True, "mpi_operator_namespace_name": "mpi-operator"}
    assert s.previous_image == "ccr.ccs.tencentyun.com/tke-market/mpi-operator:latest"
    assert s.unknown == []
    assert any(n.startswith("image.repository/tag (ccr.ccs") for n in s.not_carried)


def test_kubeflow_community_chart_values() -> None:
    """The values.yaml of the Kubeflow MPI Operator's chart (hack/helm/mpi-operator, releases up to v0.3.0)."""
    values = {
        "crd": {"create": False},
        "rbac": {"clusterResources": {"create": False}, "namespaced": {"create": True}},
        "deployment": {"create": True, "gpusPerNode": 1},
        "image": {
            "deployment": {
                "replicas": 1,
                "repository": "mpioperator/mpi-operator",
                "tag": "0.2.0",
                "pullPolicy": "IfNotPresent",
            },
            "kubectlDelivery": {"repository": "mpioperator/kubectl-delivery", "tag": "0.2.0"},
        },
        "resources": {},
        "nodeSelector": {"pool": "system"},
        "tolerations": [],
    }
    s = M.settings_from_values(values)
    assert s.variables == {
        "mpi_operator_rbac_create": True,
        "mpi_operator_crd_create": False,
        "mpi_operator_replicas": 1,
        "mpi_operator_image_pull_policy": "IfNotPresent",
        "mpi_operator_resources": {},
        "mpi_operator_node_selector": {"pool": "system"},
        "mpi_operator_tolerations": [],
    }
    assert s.previous_image == "mpioperator/mpi-operator:0.2.0"
    assert s.unknown == []
    notes = "\n".join(s.not_carried)
    for key in ("deployment.gpusPerNode", "deployment.create", "image.kubectlDelivery.repository"):
        assert key in notes


def test_unknown_values_keys_are_listed() -> None:
    s = M.settings_from_values({"namespace": {"name": "x"}, "podMonitor": {"enabled": True}, "foo": 1})
    assert s.variables == {"mpi_operator_namespace_name": "x"}
    assert s.unknown == ["podMonitor.enabled", "foo"]
    assert M.settings_from_values(["not", "a", "mapping"]).unknown == ["<values>: a mapping was expected, got list"]


def test_the_plan_names_each_setting_and_an_override() -> None:
    first, second = cluster([kubeflow_deployment(args=["--threadiness=4"])], [job()])
    p = plan_to_ours(first, second, settings={**DEFAULTS, "mpi_operator_threadiness": 8})
    assert (
        "setting mpi_operator_threadiness=8 (yours, over 4 from Deployment mpi-operator/mpi-operator: --threadiness)"
        in p["lines"]
    )
    assert (
        'setting mpi_operator_namespace_name="mpi-operator" (from Deployment mpi-operator/mpi-operator: its namespace)'
        in p["lines"]
    )


def test_values_win_over_the_deployment() -> None:
    first, _ = cluster([kubeflow_deployment(args=["--namespace=team", "--threadiness=4"])])
    carried = M.migration_settings(first, {"namespace": {"name": "mpi-system"}}, M.OURS)
    assert carried["variables"]["mpi_operator_namespace_name"] == "mpi-system"
    assert carried["sources"]["mpi_operator_namespace_name"] == "values: namespace.name"
    assert carried["variables"]["mpi_operator_threadiness"] == 4
    back = M.migration_settings(cluster([our_deployment(namespace="mpi-system")])[0], None, M.KUBEFLOW)
    assert back["variables"] == {"mpi_operator_namespace_name": "mpi-system"}


# --- the plan to this operator ----------------------------------------------------------------------------------------


def test_plan_to_ours_in_place() -> None:
    """The default installs name their objects alike: the Kubeflow ones are saved, then deleted after the stop."""
    jobs = [job("a"), job("b", phase="Succeeded"), job("c", phase=None)]
    first, second = cluster([kubeflow_deployment()], jobs)
    p = plan_to_ours(first, second)
    assert p["refusals"] == []
    assert p["stop"] == {
        "namespace": "mpi-operator",
        "name": "mpi-operator",
        "selector": "app=mpi-operator,app.kubernetes.io/component=mpijob,app.kubernetes.io/name=mpi-operator,"
        "kustomize.component=mpi-operator",
    }
    assert [M.label(o) for o in p["delete_first"]] == [
        "Deployment mpi-operator/mpi-operator",
        "ServiceAccount mpi-operator/mpi-operator",
        "ClusterRole mpi-operator",
        "ClusterRoleBinding mpi-operator",
    ]
    assert p["stale_lease"]["metadata"] == {"name": "mpi-operator", "namespace": "mpi-operator"}
    saved = json.loads(p["backup"]["data"]["objects.json"])
    assert [M.label(o) for o in saved] == ["Namespace mpi-operator", *KUBEFLOW_OBJECTS]
    deployment = saved[1]
    assert "status" not in deployment and "uid" not in deployment["metadata"]
    assert "managedFields" not in deployment["metadata"] and "annotations" not in deployment["metadata"]
    assert p["takeover"] == ["team/a", "team/b", "team/c"]
    assert p["jobs_query"] == {"api_version": "kubeflow.org/v2beta1", "kind": "MPIJob"}
    assert p["leftovers"] == []
    text = "\n".join(p["lines"])
    assert "found   3 MPIJob(s) in 1 namespace(s) (Running 1, Succeeded 1, Pending 1)" in text
    assert "keep    ClusterRole kubeflow-mpijobs-admin" in text
    assert "1 MPIJob(s) without a status" in text
    steps = [line.split(".")[1].split()[0] for line in p["lines"] if line[:1].isdigit()]
    assert steps == ["adopt", "save", "stop", "delete", "delete", "install", "wait"]


def test_plan_to_ours_removes_leftovers_when_asked() -> None:
    first, second = cluster([kubeflow_deployment()], [job()])
    p = plan_to_ours(first, second, options={"remove_kubeflow": True})
    assert [M.label(o) for o in p["leftovers"]] == [
        "ClusterRole kubeflow-mpijobs-admin",
        "ClusterRole kubeflow-mpijobs-edit",
        "ClusterRole kubeflow-mpijobs-view",
    ]


def test_plan_to_ours_in_another_namespace_keeps_kubeflow_objects() -> None:
    """Installed elsewhere, this operator takes no Kubeflow name: nothing is deleted; the leftovers are the whole
    Kubeflow install, its namespace included when nothing else is there."""
    first, second = cluster([kubeflow_deployment()], [job()])
    ours = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "mpi-operator", "namespace": "mpi-system"}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "mpi-operator:mpi-system"},
        },
    ]
    settings = {"mpi_operator_namespace_name": "mpi-system", "mpi_operator_watch_namespace": ""}
    p = M.plan(M.OURS, first, second, settings=settings, ours_objects=ours, options={"remove_kubeflow": True})
    assert p["refusals"] == [] and p["delete_first"] == [] and p["stale_lease"] is None
    assert p["create_namespace"] is True and p["backup"]["metadata"]["namespace"] == "mpi-system"
    assert [M.label(o) for o in p["leftovers"]] == [
        *KUBEFLOW_OBJECTS,
        "Namespace mpi-operator",
        "Lease mpi-operator/mpi-operator",
    ]


def test_plan_to_ours_after_a_stop_keeps_the_first_record() -> None:
    """A re-run after the Kubeflow Deployment was scaled to 0: the saved replica count stays the one before."""
    first, second = cluster([kubeflow_deployment(replicas=2)], [job()])
    saved = plan_to_ours(first, second)["backup"]
    first, second = cluster([kubeflow_deployment(replicas=0, running=0)], [job()], backups=[saved])
    again = plan_to_ours(first, second)["backup"]
    assert again["data"]["replicas"] == "2"
    assert json.loads(again["data"]["objects.json"])[1]["spec"]["replicas"] == 2


def test_plan_to_ours_when_already_switched() -> None:
    """A re-run: ours runs under the names the saved Kubeflow objects had; nothing of ours is deleted."""
    first, second = cluster([kubeflow_deployment()], [job()])
    saved = plan_to_ours(first, second)["backup"]
    first, second = cluster(
        [our_deployment()], [job()], the_crd=crd(labels=OUR_LABELS, annotations={}), backups=[saved]
    )
    for entry in first + second:  # every object of that name is ours now
        for obj in entry["resources"]:
            if obj["kind"] in ("ServiceAccount", "ClusterRoleBinding") or M.label(obj) == "ClusterRole mpi-operator":
                obj["metadata"]["labels"] = dict(OUR_LABELS)
    p = plan_to_ours(first, second)
    assert p["refusals"] == [] and p["stop"] is None and p["backup"] is None and p["delete_first"] == []
    assert "already switched: mpi.operator runs in namespace mpi-operator" in p["lines"]
    assert p["nothing_to_do"] is True
    p = plan_to_ours(first, second, options={"remove_kubeflow": True})  # its users' roles are left: removed
    assert [M.label(o) for o in p["leftovers"]] == KUBEFLOW_OBJECTS[3:6] and p["nothing_to_do"] is False


def test_plan_protects_a_helm_crd() -> None:
    helm = crd(
        labels={"app.kubernetes.io/managed-by": "Helm"},
        annotations={"meta.helm.sh/release-name": "mpi", "meta.helm.sh/release-namespace": "kube-system"},
    )
    first, second = cluster([kubeflow_deployment()], [job()], the_crd=helm)
    p = plan_to_ours(first, second)
    assert p["refusals"] == []
    assert p["protect_crd"]["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}


def test_ttl_expired_jobs_are_announced() -> None:
    done = job("old", phase="Succeeded", runPolicy={"ttlSecondsAfterFinished": 60})
    done["status"]["completionTime"] = "2026-11-30T00:00:00Z"
    first, second = cluster([kubeflow_deployment()], [done])
    text = "\n".join(plan_to_ours(first, second)["lines"])
    assert "1 finished MPIJob(s) are past their ttlSecondsAfterFinished" in text and "team/old" in text


# --- refusals: nothing is changed ------------------------------------------------------------------------------------


def refusal(p: dict) -> str:
    assert p["refusals"], p["lines"]
    assert p["stop"] is None and p["backup"] is None and p["delete_first"] == [] and p["restore"] == []
    return " ".join(p["refusals"])


def test_refuses_two_mpi_operators() -> None:
    training = kubeflow_deployment(namespace="kubeflow")
    training["metadata"]["labels"] = {"control-plane": "kubeflow-training-operator"}
    first, second = cluster([kubeflow_deployment(), training], [job()])
    assert "more than one MPI operator would reconcile these MPIJobs" in refusal(plan_to_ours(first, second))
    first, second = cluster([kubeflow_deployment(), our_deployment(namespace="other", watch="team")], [job()])
    assert "Deployment other/mpi-operator (mpi.operator" in refusal(plan_to_ours(first, second))
    # one watching another namespace does not share these jobs
    first, second = cluster([kubeflow_deployment(args=["--namespace=team"]), our_deployment("o", watch="x")], [job()])
    assert plan_to_ours(first, second)["refusals"] == []
    first, second = cluster([kubeflow_deployment(), kubeflow_deployment(namespace="b")], [job()])
    assert "mpi_operator_migrate_kubeflow_deployment" in refusal(plan_to_ours(first, second))


@pytest.mark.parametrize(
    ("the_crd", "words"),
    [
        (crd(ownerReferences=[{"kind": "ClusterServiceVersion", "name": "x"}]), "owner references"),
        (crd(annotations={"argocd.argoproj.io/tracking-id": "a"}), "GitOps"),
        (crd(labels={"app.kubernetes.io/managed-by": "olm"}), "managed-by=olm"),
        (crd(labels={"app.kubernetes.io/name": "training-operator"}), "training-operator"),
        (crd(served=("v1alpha2", "v2beta1"), stored=("v2beta1", "v1alpha2")), "serves or stores v1alpha2"),
        (False, "not installed"),
    ],
)
def test_refuses_a_crd_of_something_else(the_crd, words) -> None:
    first, second = cluster([kubeflow_deployment()], [job()], the_crd=the_crd)
    assert words in refusal(plan_to_ours(first, second))


def test_refuses_a_running_job_this_operator_would_refuse() -> None:
    bad = job("bad", mpiImplementation="OpenMPI5")
    first, second = cluster([kubeflow_deployment()], [bad, job()])
    assert "team/bad (spec.mpiImplementation" in refusal(plan_to_ours(first, second))


def test_refuses_without_a_kubeflow_operator() -> None:
    first, second = cluster([], [job()])
    assert "found no Kubeflow MPI Operator Deployment" in refusal(plan_to_ours(first, second))


# --- the way back -----------------------------------------------------------------------------------------------------


def switched(jobs, **kwargs):
    """The cluster after the switch: ours running, the ConfigMap saved, the Kubeflow Deployment gone."""
    first, second = cluster([kubeflow_deployment()], jobs)
    saved = plan_to_ours(first, second)["backup"]
    return cluster([our_deployment()], jobs, the_crd=crd(labels=OUR_LABELS, annotations={}), backups=[saved], **kwargs)


def plan_back(first, second, **kwargs):
    return M.plan(M.KUBEFLOW, first, second, settings=DEFAULTS, **kwargs)


def test_plan_back_from_the_saved_objects() -> None:
    first, second = switched([job()])
    p = plan_back(first, second)
    assert p["refusals"] == []
    assert p["stop"]["selector"] == "app.kubernetes.io/name=mpi-operator"
    assert [M.label(o) for o in p["restore"]] == ["Namespace mpi-operator", *KUBEFLOW_OBJECTS]
    assert p["restore"][1]["spec"]["replicas"] == 1
    assert p["lease"] == {
        "namespace": "mpi-operator",
        "name": "mpi-operator",
        "deployment": "mpi-operator/mpi-operator",
        "selector": "app=mpi-operator,app.kubernetes.io/component=mpijob,app.kubernetes.io/name=mpi-operator,"
        "kustomize.component=mpi-operator",
    }
    steps = [line.split(".")[1].split()[0] for line in p["lines"] if line[:1].isdigit()]
    assert steps == ["stop", "uninstall", "restore", "wait"]


def test_plan_back_refuses_jobs_kubeflow_never_served() -> None:
    v1 = job("v1job")
    v1["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "apiVersion": "kubeflow.org/v1"}]
    legacy = job("legacy", cleanPodPolicy="Running")
    t9k = job("t9k", api_version="batch.tensorstack.dev/v1beta1")
    t9k["status"] = {"phase": "Running"}
    finished_v1 = job("old", phase="Succeeded")
    finished_v1["metadata"]["managedFields"] = v1["metadata"]["managedFields"]
    first, second = switched([v1, legacy, t9k, finished_v1, job()])
    words = refusal(plan_back(first, second))
    assert "3 unfinished MPIJob(s) of an API the Kubeflow MPI Operator never served" in words
    assert "team/v1job (written through kubeflow.org/v1)" in words
    assert "team/legacy (spec.cleanPodPolicy" in words
    assert "team/t9k (batch.tensorstack.dev/v1beta1: another API)" in words
    assert "team/old" not in words


def test_plan_back_from_the_manifest() -> None:
    first, second = cluster([our_deployment()], [job()], the_crd=crd(labels=OUR_LABELS, annotations={}))
    assert "nothing to restore the Kubeflow operator from" in refusal(plan_back(first, second))
    manifest = [crd(), kubeflow_deployment(), *kubeflow_rbac()[1][:1]]
    p = plan_back(first, second, options={"manifest": manifest, "kubeflow_image": "registry/mpi-operator:0.8.2"})
    assert p["refusals"] == []
    assert [M.label(o) for o in p["restore"]] == ["Deployment mpi-operator/mpi-operator", "ClusterRole mpi-operator"]
    assert p["restore"][0]["spec"]["template"]["spec"]["containers"][0]["image"] == "registry/mpi-operator:0.8.2"
    assert "needs" not in " ".join(p["lines"])
    no_image = plan_back(first, second, options={"manifest": manifest})
    assert "mpi_operator_migrate_kubeflow_image" in refusal(no_image)


def test_plan_back_refuses_two_operators_and_does_nothing_when_back() -> None:
    first, second = switched([job()])
    both = copy.deepcopy(first)
    both[0]["resources"].append(kubeflow_deployment())
    assert "more than one MPI operator" in refusal(plan_back(both, second))
    first, second = cluster([kubeflow_deployment()], [job()])
    assert plan_back(first, second)["nothing_to_do"] is True


# --- waiting -----------------------------------------------------------------------------------------------------------


def test_pending_and_leader() -> None:
    a, b, gone = job("a"), job("b"), "team/gone"
    a["status"]["phase"] = "Running"
    assert M.pending([a, b], ["team/a", "team/b", gone]) == ["team/b"]
    pods = [{"metadata": {"name": "mpi-operator-5d4f-x"}}]
    assert M.leader({"spec": {"holderIdentity": "mpi-operator-5d4f-x_0b1c"}}, pods) == "mpi-operator-5d4f-x"
    assert M.leader({"spec": {"holderIdentity": "old-pod_1"}}, pods) == ""
    assert M.leader(None, pods) == ""
