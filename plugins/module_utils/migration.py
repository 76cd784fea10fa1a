# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Switching the MPIJobs of a cluster from the Kubeflow MPI Operator to this collection's, and back, under running
jobs: what is on the cluster, the settings to carry over, what the switch would do and whether it may. Pure: fed the
objects as the API returns them, no I/O (the role mpi.operator.migrate reads them with k8s_read and acts on the plan
through the filters of plugins/filter/migration.py)."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .mpijob import constants as C
from .mpijob.apis import REGISTRY, api_for
from .mpijob.errors import InvalidMPIJob

OURS = "ours"
KUBEFLOW = "kubeflow"
OTHER = "other"
DIRECTIONS = (OURS, KUBEFLOW)

# Our install's labels (roles/operator/vars/main.yml) and what the CRD of this collection carries.
MANAGED_BY = "app.kubernetes.io/managed-by"
OUR_MANAGER = "mpi.operator"
# The common labels of the Kubeflow MPI Operator's manifest (deploy/v2beta1, kustomize) and of its old Helm chart.
KUBEFLOW_LABELS = (("app", "mpi-operator"), ("kustomize.component", "mpi-operator"))
# The Kubeflow operator's users' aggregated roles (deploy/v2beta1): left behind unless asked, restored on the way back.
KUBEFLOW_USER_ROLES = ("kubeflow-mpijobs-admin", "kubeflow-mpijobs-edit", "kubeflow-mpijobs-view")
KUBEFLOW_SERVED = ("v2beta1",)  # the versions of mpijobs.kubeflow.org the Kubeflow MPI Operator v2 serves
LEASE = "mpi-operator"  # both operators' leader-election Lease (Kubeflow's in its --lock-namespace)
# The Kubeflow operator's flags (cmd/mpi-operator/app/options, v0.8.2, and the v1alpha2 ones of older releases) that
# take a value; the others (-alsologtostderr, -version, ...) are booleans, which Go's flag package never lets take
# the next argument.
KUBEFLOW_VALUE_FLAGS = frozenset(
    {
        "namespace",
        "lock-namespace",
        "threadiness",
        "monitoring-port",
        "gang-scheduling",
        "kube-api-qps",
        "kube-api-burst",
        "controller-queue-rate-limit",
        "controller-queue-burst",
        "cluster-domain",
        "master",
        "kubeConfig",
        "kubectl-delivery-image",
        "gpus-per-node",
        "processing-units-per-node",
        "processing-resource-type",
        "v",
        "vmodule",
        "log_dir",
        "log_file",
        "log_file_max_size",
        "stderrthreshold",
        "log_backtrace_at",
    }
)
# Fields the Kubeflow MPI Operator's v2beta1 type does not have: a job that uses one means something Kubeflow ignores.
V1_ONLY_FIELDS = ("cleanPodPolicy", "mainContainer")
# Annotations by which a GitOps controller tracks an object: it would put the Kubeflow CRD back over ours.
GITOPS_ANNOTATIONS = (
    "argocd.argoproj.io/tracking-id",
    "kustomize.toolkit.fluxcd.io/name",
    "helm.toolkit.fluxcd.io/name",
)
HELM_KEEP = "helm.sh/resource-policy"
BACKUP_NAME = "mpi-operator-migration"
BACKUP_LABELS = {"app.kubernetes.io/name": "mpi-operator", "app.kubernetes.io/component": "migration-backup"}
BACKUP_SELECTOR = ",".join(f"{k}={v}" for k, v in BACKUP_LABELS.items())


# --- the operators on the cluster ------------------------------------------------------------------------------------


def labels_of(obj: dict | None) -> dict:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def annotations_of(obj: dict | None) -> dict:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def ref(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))


def parse_flags(args: list[str], value_flags: frozenset[str] = KUBEFLOW_VALUE_FLAGS) -> dict[str, str]:
    """Go flag syntax (`-f`, `--f`, `-f=v`, `-f v` for a flag that takes a value; the last one wins) to a dict; a bare
    boolean flag reads "true". Our operator takes the same spelling (docs/install.md)."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = str(args[i])
        i += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if not eq:
            if name in value_flags and i < len(args):
                value = str(args[i])
                i += 1
            else:
                value = "true"
        flags[name] = value
    return flags


def containers(deployment: dict) -> list[dict]:
    return ((((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []


def image_name(image: str) -> str:
    """`registry:5000/team/mpi-operator:0.8.2@sha256:...` -> `mpi-operator`."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def operator_kind(deployment: dict) -> str | None:
    """OURS, KUBEFLOW (the Kubeflow MPI Operator: its manifest's or chart's labels, its image's name, or its flags),
    OTHER (another controller of MPIJobs: Kubeflow's training-operator), or None (not an MPI operator)."""
    labels = labels_of(deployment)
    cs = containers(deployment)
    words = [str(w) for c in cs for w in (c.get("command") or []) + (c.get("args") or [])]
    if labels.get(MANAGED_BY) == OUR_MANAGER or any("mpijob_operator" in w for w in words):
        return OURS
    names = {image_name(str(c.get("image") or "")) for c in cs}
    if names & {"training-operator", "tf-operator"} or labels.get("control-plane") == "kubeflow-training-operator":
        return OTHER
    flags = parse_flags(words)
    kubeflow_flags = {"lock-namespace", "kubectl-delivery-image", "gpus-per-node", "controller-queue-rate-limit"}
    if (
        "mpi-operator" in names
        or any(labels.get(k) == v for k, v in KUBEFLOW_LABELS)
        or (
            labels.get("app.kubernetes.io/name") == "mpi-operator"
            and labels.get("app.kubernetes.io/component") == "mpijob"
        )
        or kubeflow_flags & set(flags)
    ):
        return KUBEFLOW
    return None


def operator_flags(deployment: dict) -> dict[str, str]:
    cs = containers(deployment)
    return parse_flags([str(w) for c in cs[:1] for w in (c.get("command") or []) + (c.get("args") or [])])


def env_value(deployment: dict, name: str) -> str:
    for c in containers(deployment)[:1]:
        for env in c.get("env") or []:
            if env.get("name") == name and isinstance(env.get("value"), str):
                return env["value"]
    return ""


def watch_scope(deployment: dict) -> str:
    """The namespace whose MPIJobs the operator reconciles ("" = every namespace): --namespace, or, for Kubeflow's, its
    KUBEFLOW_NAMESPACE variable (the flag's default)."""
    flags = operator_flags(deployment)
    if "namespace" in flags:
        return flags["namespace"]
    return env_value(deployment, "KUBEFLOW_NAMESPACE") if operator_kind(deployment) == KUBEFLOW else ""


def replicas(deployment: dict) -> int:
    value = (deployment.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def overlap(a: str, b: str) -> bool:
    """Two watch scopes share jobs: either watches every namespace, or both the same one."""
    return a == "" or b == "" or a == b


@dataclass
class Operator:
    kind: str
    namespace: str
    name: str
    image: str
    replicas: int
    running: int  # pods the Deployment has (status.replicas): 0 once it is stopped and its pods are gone
    scope: str
    lock_namespace: str
    service_account: str
    selector: dict = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def describe(self) -> str:
        what = {OURS: "mpi.operator", KUBEFLOW: "Kubeflow MPI Operator", OTHER: "another MPIJob controller"}[self.kind]
        scope = f"namespace {self.scope}" if self.scope else "all namespaces"
        return (
            f"Deployment {self.ref} ({what}, image {self.image}, {self.replicas} replica(s), {self.running} pod(s), "
            f"watching {scope})"
        )


def find_operators(deployments: list[dict]) -> list[Operator]:
    found = []
    for d in deployments:
        kind = operator_kind(d)
        if kind is None:
            continue
        meta = d.get("metadata") or {}
        spec = d.get("spec") or {}
        flags = operator_flags(d)
        found.append(
            Operator(
                kind=kind,
                namespace=meta.get("namespace") or "",
                name=meta.get("name") or "",
                image=str((containers(d)[:1] or [{}])[0].get("image") or ""),
                replicas=replicas(d),
                running=int((d.get("status") or {}).get("replicas") or 0),
                scope=watch_scope(d),
                # Kubeflow's Lease is in --lock-namespace (default mpi-operator); ours in its own namespace.
                lock_namespace=flags.get("lock-namespace", "mpi-operator")
                if kind == KUBEFLOW
                else meta.get("namespace") or "",
                service_account=((spec.get("template") or {}).get("spec") or {}).get("serviceAccountName") or "default",
                selector=dict((spec.get("selector") or {}).get("matchLabels") or {}),
            )
        )
    return found


# --- the settings carried over ---------------------------------------------------------------------------------------


@dataclass
class Settings:
    """The install variables of this collection that say what the operator being left said, where each came from,
    and what could not be carried (listed, never dropped silently)."""

    variables: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    not_carried: list = field(default_factory=list)  # "what: why"
    unknown: list = field(default_factory=list)  # Helm values keys this migration does not know
    previous_image: str = ""  # the image of the operator being left (a chart's image.*), for the way back

    def set(self, variable: str, value: Any, source: str) -> None:
        self.variables[variable] = value
        self.sources[variable] = source

    def merge(self, other: Settings) -> Settings:
        """`other` over this one."""
        merged = copy.deepcopy(self)
        merged.variables.update(other.variables)
        merged.sources.update(other.sources)
        merged.not_carried += other.not_carried
        merged.unknown += other.unknown
        merged.previous_image = other.previous_image or self.previous_image
        return merged


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def settings_from_kubeflow(deployment: dict) -> Settings:
    """What the Kubeflow operator's Deployment says (its flags, its pod's placement), as this collection's variables."""
    s = Settings()
    meta = deployment.get("metadata") or {}
    where = f"Deployment {ref(deployment)}"
    pod = (((deployment.get("spec") or {}).get("template") or {}).get("spec")) or {}
    s.set("mpi_operator_namespace_name", meta.get("namespace"), f"{where}: its namespace")
    scope = watch_scope(deployment)
    if scope:
        s.set("mpi_operator_watch_namespace", scope, f"{where}: --namespace")
    flags = operator_flags(deployment)
    numeric = {
        "threadiness": "mpi_operator_threadiness",
        "kube-api-qps": "mpi_operator_kube_api_qps",
        "kube-api-burst": "mpi_operator_kube_api_burst",
    }
    for flag, value in flags.items():
        if flag == "namespace":
            continue
        if flag in numeric and _int(value) is not None:
            s.set(numeric[flag], _int(value), f"{where}: --{flag}")
        elif flag == "gang-scheduling":
            s.set("mpi_operator_gang_scheduling", value, f"{where}: --{flag}")
        elif flag == "cluster-domain":
            s.set("mpi_operator_cluster_domain", value, f"{where}: --{flag}")
        elif flag == "monitoring-port" and (_int(value) or 0) > 0:
            s.set("mpi_operator_monitoring_port", _int(value), f"{where}: --{flag}")
        elif flag == "monitoring-port":
            s.not_carried.append(
                f"--monitoring-port={value}: Kubeflow's /metrics was off; this operator serves /metrics on port 8080 "
                f"(mpi_operator_monitoring_port=0 turns it off)"
            )
        elif flag == "lock-namespace":
            if value != meta.get("namespace"):
                s.not_carried.append(
                    f"--lock-namespace={value}: this operator holds its Lease in its own namespace "
                    f"({meta.get('namespace')})"
                )
        elif flag in ("controller-queue-rate-limit", "controller-queue-burst"):
            s.not_carried.append(f"--{flag}={value}: this operator's queue has no such limit")
        elif flag in ("alsologtostderr", "logtostderr", "v", "vmodule", "stderrthreshold", "log_dir", "log_file"):
            s.not_carried.append(f"--{flag}={value}: klog's; this operator logs with mpi_operator_log_level")
        else:
            s.not_carried.append(f"--{flag}={value}: no such setting in this operator")
    if replicas(deployment) > 1:
        s.set("mpi_operator_replicas", replicas(deployment), f"{where}: replicas")
    placement = {
        "nodeSelector": "mpi_operator_node_selector",
        "tolerations": "mpi_operator_tolerations",
        "affinity": "mpi_operator_affinity",
        "priorityClassName": "mpi_operator_priority_class_name",
        "topologySpreadConstraints": "mpi_operator_topology_spread_constraints",
    }
    for key, variable in placement.items():
        if pod.get(key):
            s.set(variable, copy.deepcopy(pod[key]), f"{where}: spec.template.spec.{key}")
    if pod.get("imagePullSecrets"):
        names = [p.get("name") for p in pod["imagePullSecrets"] if p.get("name")]
        s.set("mpi_operator_image_pull_secrets", names, f"{where}: spec.template.spec.imagePullSecrets")
    for c in containers(deployment)[:1]:
        if c.get("resources"):
            s.not_carried.append(
                "the container's resources: sized for a Go binary; this operator (Python, ansible-runner) has its "
                "own defaults (mpi_operator_resources)"
            )
    return s


# Helm values keys -> this collection's variables: the keys of docs/install.md's table (the charts users know, the
# cloud vendor's image/namespace keys among them) and those of the Kubeflow MPI Operator's own chart (hack/helm in
# its releases up to v0.3.0).
HELM_VALUES = {
    "image.pullPolicy": "mpi_operator_image_pull_policy",
    "image.deployment.pullPolicy": "mpi_operator_image_pull_policy",
    "imagePullSecrets": "mpi_operator_image_pull_secrets",
    "namespace.create": "mpi_operator_namespace_create",
    "namespace.name": "mpi_operator_namespace_name",
    "replicas": "mpi_operator_replicas",
    "replicaCount": "mpi_operator_replicas",
    "deployment.replicas": "mpi_operator_replicas",
    "image.deployment.replicas": "mpi_operator_replicas",
    "resources": "mpi_operator_resources",
    "nodeSelector": "mpi_operator_node_selector",
    "tolerations": "mpi_operator_tolerations",
    "affinity": "mpi_operator_affinity",
    "priorityClassName": "mpi_operator_priority_class_name",
    "podLabels": "mpi_operator_pod_labels",
    "podAnnotations": "mpi_operator_pod_annotations",
    "podSecurityContext": "mpi_operator_pod_security_context",
    "securityContext": "mpi_operator_container_security_context",
    "commonLabels": "mpi_operator_common_labels",
    "commonAnnotations": "mpi_operator_common_annotations",
    "crd.create": "mpi_operator_crd_create",
    "rbac.create": "mpi_operator_rbac_create",
    "serviceAccount.create": "mpi_operator_service_account_create",
    "serviceAccount.name": "mpi_operator_service_account_name",
    "rbac.serviceAccountName": "mpi_operator_service_account_name",
    "serviceAccount.annotations": "mpi_operator_service_account_annotations",
    "podDisruptionBudget": "mpi_operator_pod_disruption_budget",
    "topologySpreadConstraints": "mpi_operator_topology_spread_constraints",
    "extraEnv": "mpi_operator_extra_env",
    "extraArgs": "mpi_operator_extra_args",
    "metrics.service.enabled": "mpi_operator_metrics_service",
    "serviceMonitor.enabled": "mpi_operator_service_monitor",
    "prometheusRule.enabled": "mpi_operator_prometheus_rule",
}
# Keys that say what the operator being left ran, not what this one should.
HELM_PREVIOUS_IMAGE = (
    ("image.repository", "image.tag", "image.digest"),
    ("image.deployment.repository", "image.deployment.tag", None),
)
HELM_NOT_CARRIED = {
    "rbac.clusterRoleName": "this operator names its ClusterRole mpi-operator (mpi-operator:<namespace> elsewhere)",
    "rbac.clusterResources.create": "see rbac.create",
    "rbac.namespaced.create": "see rbac.create",
    "deployment.create": "this operator always runs as a Deployment",
    "deployment.gpusPerNode": "a v1alpha1 setting; slots come from each job's slotsPerWorker",
    "image.kubectlDelivery.repository": "kubeflow.org jobs need no kubectl delivery in this operator",
    "image.kubectlDelivery.tag": "kubeflow.org jobs need no kubectl delivery in this operator",
    "nameOverride": "this operator's object names are fixed (mpi-operator)",
    "fullnameOverride": "this operator's object names are fixed (mpi-operator)",
}


def flatten(values: Any, prefix: str = "") -> dict[str, Any]:
    """{"image": {"tag": "x"}} -> {"image.tag": "x"}; a key whose value is a list, or a mapping that is itself a
    setting (resources, nodeSelector, ...), stays whole."""
    flat: dict[str, Any] = {}
    for key, value in (values or {}).items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in HELM_VALUES:
            flat.update(flatten(value, f"{path}."))
        else:
            flat[path] = value
    return flat


def settings_from_values(values: Any) -> Settings:
    """A chart's values.yaml as this collection's variables; keys it does not know are listed."""
    s = Settings()
    if not values:
        return s
    if not isinstance(values, dict):
        s.unknown.append(f"<values>: a mapping was expected, got {type(values).__name__}")
        return s
    flat = flatten(values)
    for repo_key, tag_key, digest_key in HELM_PREVIOUS_IMAGE:
        if repo_key in flat:
            repo = str(flat.pop(repo_key))
            tag = str(flat.pop(tag_key, "") or "")
            digest = str(flat.pop(digest_key, "") or "") if digest_key else ""
            s.previous_image = f"{repo}@{digest}" if digest else f"{repo}:{tag}" if tag else repo
            s.not_carried.append(
                f"{repo_key}/{tag_key.rsplit('.', 1)[-1]} ({s.previous_image}): the image of the operator being "
                f"left; this one runs mpi_operator_image_repository/_tag (the way back restores that image)"
            )
        elif tag_key in flat:
            s.unknown.append(f"{tag_key} (without {repo_key})")
            flat.pop(tag_key)
    rbac = [flat.get(k) for k in ("rbac.clusterResources.create", "rbac.namespaced.create") if k in flat]
    if rbac and "rbac.create" not in flat:
        s.set("mpi_operator_rbac_create", any(bool(v) for v in rbac), "values: rbac.*.create")
    for key, value in flat.items():
        if key in HELM_VALUES:
            variable = HELM_VALUES[key]
            if variable == "mpi_operator_image_pull_secrets":
                value = [v.get("name") if isinstance(v, dict) else v for v in value or []]
            s.set(variable, value, f"values: {key}")
        elif key in HELM_NOT_CARRIED:
            s.not_carried.append(f"{key}: {HELM_NOT_CARRIED[key]}")
        else:
            s.unknown.append(key)
    return s


def migration_settings(first: list[dict], values: Any, direction: str) -> dict:
    """The variables the install of this collection gets on the way to it (the Kubeflow Deployment's, the chart's
    values over them), or, on the way back, those that name our install (its namespace); from k8s_read's results of
    queries_first()."""
    deployments = collect(first)["deployments"]
    operators = find_operators(deployments)
    if direction == KUBEFLOW:
        ours = [o for o in operators if o.kind == OURS]
        s = Settings()
        if len(ours) == 1:
            s.set("mpi_operator_namespace_name", ours[0].namespace, f"Deployment {ours[0].ref}: its namespace")
        return asdict(s)
    kubeflow = [o for o in operators if o.kind == KUBEFLOW]
    s = Settings()
    if len(kubeflow) == 1:
        deployment = next(d for d in deployments if ref(d) == kubeflow[0].ref)
        s = settings_from_kubeflow(deployment)
    return asdict(s.merge(settings_from_values(values)))


# --- the CRD and the jobs ---------------------------------------------------------------------------------------------


def crd_owner(crd: dict) -> tuple[str, str]:
    """(OURS | KUBEFLOW | OTHER, who, in words)."""
    labels, annotations = labels_of(crd), annotations_of(crd)
    meta = crd.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    if owners:
        names = ", ".join(f"{o.get('kind')} {o.get('name')}" for o in owners)
        return OTHER, f"owner references: {names}"
    gitops = [a for a in GITOPS_ANNOTATIONS if a in annotations]
    if gitops:
        return OTHER, f"a GitOps controller ({', '.join(gitops)}), which would put its copy back"
    manager = labels.get(MANAGED_BY, "")
    if manager == OUR_MANAGER:
        return OURS, "mpi.operator"
    if "meta.helm.sh/release-name" in annotations or manager == "Helm":
        release = annotations.get("meta.helm.sh/release-name", "?")
        return KUBEFLOW, f"Helm release {annotations.get('meta.helm.sh/release-namespace', '?')}/{release}"
    if manager and manager not in ("kustomize",):
        return OTHER, f"{MANAGED_BY}={manager}"
    if labels.get("app.kubernetes.io/name") in ("training-operator",) or "training-operator" in labels.values():
        return OTHER, "Kubeflow's training-operator"
    if any(labels.get(k) == v for k, v in KUBEFLOW_LABELS) or "controller-gen.kubebuilder.io/version" in annotations:
        return KUBEFLOW, "the Kubeflow MPI Operator's manifest"
    return KUBEFLOW, "unlabelled (taken for the Kubeflow MPI Operator's)"


def crd_versions(crd: dict) -> tuple[list[str], list[str]]:
    """(served, stored)."""
    served = [v.get("name") for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")]
    stored = list((crd.get("status") or {}).get("storedVersions") or [])
    return served, stored


def job_key(job: dict) -> str:
    meta = job.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def managed_externally(job: dict) -> bool:
    managed_by = ((job.get("spec") or {}).get("runPolicy") or {}).get("managedBy")
    return bool(managed_by) and managed_by != C.MANAGED_BY_VALUES[0]


def job_phase(job: dict) -> str:
    return api_for(job).phase(job.get("status") or {})


def finished(job: dict) -> bool:
    return api_for(job).finished(job.get("status") or {})


def written_through_v1(job: dict) -> bool:
    """Created or changed by a user through kubeflow.org/v1 (the API server records each writer's apiVersion)."""
    return any(
        m.get("apiVersion") == f"{C.GROUP}/v1"
        and m.get("operation") in ("Update", "Apply")
        and not m.get("subresource")
        for m in (job.get("metadata") or {}).get("managedFields") or []
    )


def in_scope(job: dict, scope: str) -> bool:
    return not scope or (job.get("metadata") or {}).get("namespace") == scope


def unreadable_by_us(jobs: list[dict]) -> list[str]:
    """Jobs this operator would refuse (it would mark them Failed, ValidationError) that the Kubeflow operator is
    running: each with the first field at fault."""
    bad = []
    for job in jobs:
        if managed_externally(job) or not (job.get("status") or {}).get("conditions"):
            continue  # never started by Kubeflow either (it rejected it too, or it is someone else's)
        try:
            api_for(job).parse(job)
        except InvalidMPIJob as exc:
            bad.append(f"{job_key(job)} ({exc})")
    return bad


def ttl_expired(job: dict, now: str) -> bool:
    """A finished job past its ttlSecondsAfterFinished, which the Kubeflow operator left alone and this one deletes."""
    ttl = ((job.get("spec") or {}).get("runPolicy") or {}).get("ttlSecondsAfterFinished")
    done = (job.get("status") or {}).get("completionTime")
    if ttl is None or not done or not finished(job):
        return False
    return _seconds(now) - _seconds(done) >= int(ttl)


def _seconds(stamp: str) -> float:
    import datetime

    return datetime.datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()


def phases(jobs: list[dict]) -> str:
    counts: dict[str, int] = {}
    for job in jobs:
        counts[job_phase(job)] = counts.get(job_phase(job), 0) + 1
    return ", ".join(f"{p} {n}" for p, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"


# --- the Kubeflow operator's objects ----------------------------------------------------------------------------------

SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


def cleaned(obj: dict) -> dict:
    """The object as it would be applied again: no status, no server bookkeeping, no last-applied copy."""
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}
    meta = out.get("metadata") or {}
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k not in ("kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision")
    }
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return out


def kubeflow_objects(
    operator: Operator,
    deployment: dict,
    service_accounts: list[dict],
    cluster_roles: list[dict],
    cluster_role_bindings: list[dict],
    roles: list[dict],
    role_bindings: list[dict],
    namespaces: list[dict] | None = None,
) -> list[dict]:
    """The Kubeflow operator's own objects: its namespace when its manifest made it (first: the way back may have to
    create it again), its Deployment, its ServiceAccount, the bindings that grant that ServiceAccount and the roles
    they bind, and its users' aggregated roles (kubeflow-mpijobs-*)."""

    def binds_sa(binding: dict) -> bool:
        return any(
            s.get("kind") == "ServiceAccount"
            and s.get("name") == operator.service_account
            and (s.get("namespace") or (binding.get("metadata") or {}).get("namespace")) == operator.namespace
            for s in binding.get("subjects") or []
        )

    found = [
        n
        for n in namespaces or []
        if (n.get("metadata") or {}).get("name") == operator.namespace
        and any(labels_of(n).get(k) == v for k, v in KUBEFLOW_LABELS)
    ]
    found += [deployment]
    found += [
        sa
        for sa in service_accounts
        if (sa.get("metadata") or {}).get("name") == operator.service_account
        and (sa.get("metadata") or {}).get("namespace") == operator.namespace
    ]
    crbs = [b for b in cluster_role_bindings if binds_sa(b)]
    rbs = [b for b in role_bindings if binds_sa(b)]
    bound_cluster = {b["roleRef"]["name"] for b in crbs + rbs if b.get("roleRef", {}).get("kind") == "ClusterRole"}
    bound_roles = {
        ((b.get("metadata") or {}).get("namespace"), b["roleRef"]["name"])
        for b in rbs
        if b.get("roleRef", {}).get("kind") == "Role"
    }
    found += [r for r in cluster_roles if (r.get("metadata") or {}).get("name") in bound_cluster]
    found += [
        r for r in cluster_roles if (r.get("metadata") or {}).get("name") in KUBEFLOW_USER_ROLES and r not in found
    ]
    found += crbs + rbs
    found += [r for r in roles if ((r.get("metadata") or {}).get("namespace"), r["metadata"]["name"]) in bound_roles]
    return [cleaned(o) for o in found]


def identity(obj: dict) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return obj.get("kind") or "", meta.get("namespace") or "", meta.get("name") or ""


def label(obj: dict) -> str:
    kind, namespace, name = identity(obj)
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def stub(obj: dict) -> dict:
    """Enough of an object to delete it."""
    kind, namespace, name = identity(obj)
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": obj.get("apiVersion"), "kind": kind, "metadata": meta}


def backup(namespace: str, objects: list[dict], operator: Operator, previous: dict | None) -> dict:
    """The ConfigMap that keeps the Kubeflow operator's objects as they were, for the way back. Its replica count is
    the one before the stop (a re-run after the stop keeps the first record's)."""
    count = operator.replicas or (previous or {}).get("replicas") or 1
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    deployment["spec"]["replicas"] = count
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": BACKUP_NAME, "namespace": namespace, "labels": dict(BACKUP_LABELS)},
        "data": {
            "deployment": operator.ref,
            "replicas": str(count),
            "objects.json": json.dumps(objects, sort_keys=True),
        },
    }


def read_backup(configmap: dict | None) -> dict | None:
    if not configmap:
        return None
    data = configmap.get("data") or {}
    try:
        objects = json.loads(data.get("objects.json") or "[]")
    except ValueError:
        return None
    return {
        "namespace": (configmap.get("metadata") or {}).get("namespace"),
        "deployment": data.get("deployment", ""),
        "replicas": int(data.get("replicas") or 1),
        "objects": objects,
    }


def manifest_objects(docs: list[dict], image: str) -> list[dict]:
    """The Kubeflow operator's manifest (deploy/v2beta1/mpi-operator.yaml), its Deployment's image `image`, without
    its CRD (the CRD stays: it holds the jobs)."""
    out = []
    for doc in docs or []:
        if not doc or doc.get("kind") == "CustomResourceDefinition":
            continue
        doc = copy.deepcopy(doc)
        if doc.get("kind") == "Deployment" and image:
            for c in containers(doc):
                c["image"] = image
        out.append(doc)
    return out


# --- the plan --------------------------------------------------------------------------------------------------------


@dataclass
class Plan:
    direction: str
    refusals: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    scope: str = ""
    kubeflow: dict | None = None  # the Kubeflow operator's Deployment (Operator as a dict)
    ours: dict | None = None  # ours, when installed
    stop: dict | None = None  # the Deployment to scale to 0 and the selector of its pods
    backup: dict | None = None  # the ConfigMap to write (to ours) / the one read (back)
    stale_lease: dict | None = None  # the stopped operator's Lease, where the next one would wait for it
    delete_first: list = field(default_factory=list)  # Kubeflow's objects whose names ours takes
    protect_crd: dict | None = None  # an apply that keeps a Helm release from deleting the CRD
    leftovers: list = field(default_factory=list)  # Kubeflow's objects removed when asked
    restore: list = field(default_factory=list)  # the Kubeflow operator's objects to apply (back)
    takeover: list = field(default_factory=list)  # the jobs whose status the new operator must write (to ours)
    jobs_query: dict = field(default_factory=dict)  # the k8s_read query that lists them
    lease: dict | None = None  # where the Kubeflow operator's Lease is (back)
    create_namespace: bool = False  # this install's namespace is missing: the saved objects go there first
    nothing_to_do: bool = False


def selector(match_labels: dict) -> str:
    """matchLabels as a label selector string (what k8s_read takes)."""
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


def _names(objs: list[dict]) -> str:
    return ", ".join(label(o) for o in objs) or "none"


def _running(op: Operator) -> bool:
    return op.replicas > 0 or op.running > 0


def _jobs_line(jobs: list[dict], scope: str) -> str:
    namespaces = {(j.get("metadata") or {}).get("namespace") for j in jobs}
    where = f"namespace {scope}" if scope else f"{len(namespaces)} namespace(s)"
    return f"found   {len(jobs)} MPIJob(s) in {where} ({phases(jobs)})"


def _few(keys: list[str], most: int = 10) -> str:
    return ", ".join(keys[:most]) + (f" and {len(keys) - most} more" if len(keys) > most else "")


def _choose(operators: list[Operator], kind: str, wanted: str, refusals: list[str], what: str) -> Operator | None:
    """The one operator of `kind` (the one named `wanted`, "namespace/name", when given); a refusal when it is
    ambiguous or the named one is not there."""
    candidates = [o for o in operators if o.kind == kind]
    if wanted:
        chosen = [o for o in candidates if o.ref == wanted or o.namespace == wanted]
        if len(chosen) != 1:
            refusals.append(f"{what} {wanted!r} not found among: {', '.join(o.ref for o in candidates) or 'none'}")
            return None
        return chosen[0]
    if len(candidates) > 1:
        refusals.append(
            f"{len(candidates)} {what} Deployments found: "
            + "; ".join(o.describe() for o in candidates)
            + ". Say which one with mpi_operator_migrate_kubeflow_deployment=NAMESPACE/NAME"
            + " (a second one watching the same jobs must be stopped first)."
        )
        return None
    return candidates[0] if candidates else None


def _header(p: Plan, operators: list[Operator], way: str) -> None:
    target = f"namespace {p.scope}" if p.scope else "all namespaces"
    p.lines.append(f"Switch the MPIJobs of {target} {way}")
    p.lines += [f"found   {op.describe()}" for op in operators]


def _survey(
    p: Plan, state: dict, operators: list[Operator], leaving: Operator | None, arriving: Operator | None
) -> tuple[dict | None, str]:
    """The checks both ways share: no MPI operator but the one `leaving` reconciles the jobs of the scope (the one
    `arriving` may be installed already, stopped, or running once the other is stopped: a re-run), and the CRD is
    one both can serve. Returns the CRD and its owner."""
    kept = [o for o in (leaving, arriving if leaving is None or not _running(leaving) else None) if o is not None]
    others = [
        o.describe() for o in operators if all(o is not k for k in kept) and _running(o) and overlap(o.scope, p.scope)
    ]
    if others:
        p.refusals.append(
            "more than one MPI operator would reconcile these MPIJobs: "
            + "; ".join(others)
            + (f" besides {leaving.ref}" if leaving else "")
            + ". Stop the others first: two controllers of one job fight over its children"
        )
    crd = next(iter(state.get("crds") or []), None)
    owner, crd_text = _crd_check(crd, p.refusals)
    if crd is not None:
        p.lines.append(f"found   CRD mpijobs.kubeflow.org: {crd_text}")
    return crd, owner


def _crd_check(crd: dict | None, refusals: list[str]) -> tuple[str, str]:
    if crd is None:
        refusals.append("the CRD mpijobs.kubeflow.org is not installed: there are no MPIJobs to migrate")
        return OTHER, ""
    owner, who = crd_owner(crd)
    if owner == OTHER:
        refusals.append(
            f"the CRD mpijobs.kubeflow.org belongs to something else: {who}. Taking it over would fight that owner; "
            f"release it from there first"
        )
    served, stored = crd_versions(crd)
    ours = list(REGISTRY[(C.GROUP, C.KIND)].versions)
    foreign = sorted({v for v in served + stored if v not in ours})
    if foreign:
        refusals.append(
            f"the CRD mpijobs.kubeflow.org serves or stores {', '.join(foreign)} (served {', '.join(served)}; stored "
            f"{', '.join(stored)}), which neither operator serves: migrate those objects to v2beta1 and drop the "
            f"version from the CRD (and from status.storedVersions) first"
        )
    return owner, f"{who}; served {', '.join(served) or 'none'}, stored {', '.join(stored) or 'none'}"


def plan_to_ours(state: dict) -> Plan:
    """From the Kubeflow MPI Operator to this collection's."""
    p = Plan(direction=OURS)
    refusals, lines = p.refusals, p.lines
    operators = find_operators(state.get("deployments") or [])
    options = state.get("options") or {}
    settings = state.get("settings") or {}
    kubeflow = _choose(operators, KUBEFLOW, options.get("kubeflow_deployment") or "", refusals, "Kubeflow MPI Operator")
    namespace = settings.get("mpi_operator_namespace_name") or "mpi-operator"
    ours = next((o for o in operators if o.kind == OURS and o.namespace == namespace), None)
    previous = read_backup(next(iter(state.get("backups") or []), None))
    scope = kubeflow.scope if kubeflow else settings.get("mpi_operator_watch_namespace") or ""
    p.scope = scope
    p.kubeflow = asdict(kubeflow) if kubeflow else None
    p.ours = asdict(ours) if ours else None
    _header(p, operators, "from the Kubeflow MPI Operator to mpi.operator")
    if kubeflow is None and not refusals:
        if ours is None and previous is None:
            refusals.append(
                "found no Kubeflow MPI Operator Deployment (looked for its manifest's labels app=mpi-operator or "
                "kustomize.component=mpi-operator, an image named mpi-operator, or its flags such as "
                "--lock-namespace) and no earlier migration: nothing to migrate; install with mpi.operator.install"
            )
        elif ours is not None:
            lines.append(f"already switched: mpi.operator runs in namespace {namespace}")
        else:
            lines.append("the Kubeflow MPI Operator's Deployment is gone (an earlier run stopped it): carrying on")
    crd, owner = _survey(p, state, operators, kubeflow, ours)
    jobs = [
        j
        for j in state.get("jobs") or []
        if in_scope(j, scope) and (j.get("apiVersion") or "").startswith(f"{C.GROUP}/")
    ]
    lines.append(_jobs_line(jobs, scope))
    unreadable = unreadable_by_us(jobs)
    if unreadable:
        refusals.append(
            f"{len(unreadable)} MPIJob(s) the Kubeflow operator runs would be refused by mpi.operator (it would mark "
            f"them Failed): {_few(unreadable, 5)}; fix or finish them first"
        )
    carried = state.get("carried_variables") or {}
    for key, value in sorted(settings.items()):
        source = (state.get("settings_sources") or {}).get(key)
        if source and key in carried and carried[key] != value:
            lines.append(f"setting {key}={json.dumps(value)} (yours, over {json.dumps(carried[key])} from {source})")
        elif source:
            lines.append(f"setting {key}={json.dumps(value)} (from {source})")
    for note in state.get("not_carried") or []:
        lines.append(f"not carried  {note}")
    if state.get("unknown"):
        lines.append(f"unknown values keys (not carried): {', '.join(state['unknown'])}")
    if refusals:
        return p

    step = iter(range(1, 100))
    if crd is not None and owner == KUBEFLOW and "meta.helm.sh/release-name" in annotations_of(crd):
        p.protect_crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "mpijobs.kubeflow.org", "annotations": {HELM_KEEP: "keep"}},
        }
        lines.append(
            f"{next(step)}. annotate CRD mpijobs.kubeflow.org {HELM_KEEP}=keep: `helm uninstall` of the release would "
            f"otherwise delete it and every MPIJob"
        )
    adopt = "keep (already mpi.operator's)" if owner == OURS else "adopt"
    lines.append(
        f"{next(step)}. {adopt} CRD mpijobs.kubeflow.org: mpi.operator's schema (v2beta1 stored as before, v1 served "
        f"too, defaults and validation rules, printer column State from status.phase, the scale subresource; stored "
        f"MPIJobs are not rewritten), while the Kubeflow operator still runs: it reads the jobs through it"
    )
    kf_objects: list[dict] = []
    if kubeflow is not None:
        deployment = next(d for d in state["deployments"] if ref(d) == kubeflow.ref)
        kf_objects = kubeflow_objects(
            kubeflow,
            deployment,
            state.get("service_accounts") or [],
            state.get("cluster_roles") or [],
            state.get("cluster_role_bindings") or [],
            state.get("roles") or [],
            state.get("role_bindings") or [],
            state.get("namespaces") or [],
        )
        p.backup = backup(namespace, kf_objects, kubeflow, previous)
        p.create_namespace = not any(n["metadata"]["name"] == namespace for n in state.get("namespaces") or [])
        lines.append(
            f"{next(step)}. save   ConfigMap {namespace}/{BACKUP_NAME}: the Kubeflow operator's objects as they are "
            f"({_names(kf_objects)}), for the way back"
        )
        p.stop = {"namespace": kubeflow.namespace, "name": kubeflow.name, "selector": selector(kubeflow.selector)}
        lines.append(
            f"{next(step)}. stop   Deployment {kubeflow.ref}: replicas {kubeflow.replicas} -> 0, then wait until its "
            f"pods are gone (from then on no operator acts on the jobs until mpi.operator leads)"
        )
        if kubeflow.lock_namespace == namespace:
            p.stale_lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEASE, "namespace": namespace},
            }
            lines.append(
                f"{next(step)}. delete Lease {namespace}/{LEASE}: the stopped operator's (both use it; mpi.operator "
                f"would otherwise wait out its 15 s)"
            )
    elif previous is not None:
        kf_objects = previous["objects"]
    ours_ids = {identity(o) for o in state.get("ours_objects") or []}
    current = {identity(o) for o in kf_objects} & _existing(state)
    p.delete_first = [stub(o) for o in kf_objects if identity(o) in ours_ids and identity(o) in current]
    if p.delete_first:
        lines.append(
            f"{next(step)}. delete {_names(p.delete_first)}: mpi.operator's objects have these names (the ConfigMap "
            f"keeps them)"
        )
    where = f"watching namespace {scope}" if scope else "watching all namespaces"
    lines.append(
        f"{next(step)}. install mpi.operator in namespace {namespace}, {where}: "
        f"{_names(state.get('ours_objects') or [])}"
    )
    live = [j for j in jobs if not managed_externally(j) and not (j.get("metadata") or {}).get("deletionTimestamp")]
    p.takeover = [job_key(j) for j in live]
    p.jobs_query = {"api_version": C.API_VERSION, "kind": C.KIND, **({"namespace": scope} if scope else {})}
    lines.append(
        f"{next(step)}. wait   until mpi.operator has reconciled each of the {len(live)} MPIJob(s) (its status.phase "
        f"written); the children are kept as they are, matched by name, labels and owner reference"
    )
    lines.append(
        f"keep    the {len(jobs)} MPIJob(s) and their pods, Services, ConfigMaps, Secrets and launcher Jobs (owned by "
        f"the jobs, not by an operator)"
    )
    left = [o for o in kf_objects if identity(o) not in ours_ids and identity(o) in _existing(state)]
    ns_obj = next(
        (n for n in state.get("namespaces") or [] if kubeflow and n["metadata"]["name"] == kubeflow.namespace),
        None,
    )
    if kubeflow is not None and ns_obj is not None and kubeflow.namespace != namespace:
        others_there = [o.ref for o in operators if o.namespace == kubeflow.namespace and o.ref != kubeflow.ref] + [
            job_key(j)
            for j in state.get("jobs") or []
            if (j.get("metadata") or {}).get("namespace") == kubeflow.namespace
        ]
        if any(labels_of(ns_obj).get(k) == v for k, v in KUBEFLOW_LABELS) and not others_there:
            left.append(cleaned(ns_obj))
    if kubeflow is not None and kubeflow.lock_namespace != namespace:
        left.append(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEASE, "namespace": kubeflow.lock_namespace},
            }
        )
    if options.get("remove_kubeflow"):
        p.leftovers = [stub(o) for o in left]
        if left:
            lines.append(f"{next(step)}. remove the Kubeflow operator's leftovers: {_names(left)}")
    elif left:
        lines.append(f"keep    {_names(left)} (mpi_operator_migrate_remove_kubeflow=true removes them)")
    rejected = [job_key(j) for j in live if not (j.get("status") or {}).get("conditions")]
    if rejected:
        lines.append(
            f"note    {len(rejected)} MPIJob(s) without a status (the Kubeflow operator has not started them, or "
            f"refused them): mpi.operator starts them, or marks a malformed one Failed (ValidationError): "
            f"{_few(rejected)}"
        )
    now = state.get("now") or ""
    expired = [job_key(j) for j in live if now and ttl_expired(j, now)]
    if expired:
        lines.append(
            f"note    {len(expired)} finished MPIJob(s) are past their ttlSecondsAfterFinished, which the Kubeflow "
            f"operator ignores: mpi.operator deletes them at once: {_few(expired)}"
        )
    if ours is not None and kubeflow is None:
        p.nothing_to_do = not p.delete_first and not p.leftovers
    return p


def _existing(state: dict) -> set[tuple[str, str, str]]:
    """Every object the read found that is not this collection's (a re-run finds ours under the same names), by
    identity."""
    found: set[tuple[str, str, str]] = set()
    for key in ("deployments", "service_accounts", "cluster_roles", "cluster_role_bindings", "roles", "role_bindings"):
        found |= {identity(o) for o in state.get(key) or [] if labels_of(o).get(MANAGED_BY) != OUR_MANAGER}
    return found


def unservable_by_kubeflow(jobs: list[dict], scope: str) -> list[str]:
    """Unfinished jobs in `scope` the Kubeflow MPI Operator never served: of another API, written through
    kubeflow.org/v1, or using a field its v2beta1 lacks."""
    found = []
    for job in jobs:
        if not in_scope(job, scope) or finished(job) or managed_externally(job):
            continue
        api_version = job.get("apiVersion") or ""
        spec = job.get("spec") or {}
        if not api_version.startswith(f"{C.GROUP}/"):
            found.append(f"{job_key(job)} ({api_version}: another API)")
        elif written_through_v1(job):
            found.append(f"{job_key(job)} (written through {C.GROUP}/v1)")
        elif any(k in spec for k in V1_ONLY_FIELDS):
            fields = ", ".join(f"spec.{k}" for k in V1_ONLY_FIELDS if k in spec)
            found.append(f"{job_key(job)} ({fields}: not in Kubeflow's v2beta1)")
    return found


def plan_to_kubeflow(state: dict) -> Plan:
    """Back from this collection's operator to the Kubeflow MPI Operator."""
    p = Plan(direction=KUBEFLOW)
    refusals, lines = p.refusals, p.lines
    operators = find_operators(state.get("deployments") or [])
    options = state.get("options") or {}
    settings = state.get("settings") or {}
    ours_all = [o for o in operators if o.kind == OURS]
    wanted = settings.get("mpi_operator_namespace_name") or ""
    ours = _choose(ours_all, OURS, wanted if len(ours_all) > 1 else "", refusals, "mpi.operator")
    kubeflow = _choose(operators, KUBEFLOW, options.get("kubeflow_deployment") or "", refusals, "Kubeflow MPI Operator")
    backups = [read_backup(b) for b in state.get("backups") or []]
    previous = next((b for b in backups if b and ours and b["namespace"] == ours.namespace), None)
    previous = previous or next((b for b in backups if b), None)
    scope = ours.scope if ours else kubeflow.scope if kubeflow else ""
    p.scope = scope
    p.ours = asdict(ours) if ours else None
    p.kubeflow = asdict(kubeflow) if kubeflow else None
    _header(p, operators, "back from mpi.operator to the Kubeflow MPI Operator")
    if ours is None and not refusals:
        if kubeflow is not None and _running(kubeflow):
            p.nothing_to_do = True
            lines.append("nothing to do: the Kubeflow MPI Operator runs and mpi.operator is not installed")
            return p
        refusals.append("found no Deployment of mpi.operator to switch back from")
    _survey(p, state, operators, ours, kubeflow)
    all_jobs = state.get("jobs") or []
    jobs = [j for j in all_jobs if in_scope(j, scope)]
    lines.append(_jobs_line(jobs, scope))
    unservable = unservable_by_kubeflow(all_jobs, scope)
    if unservable:
        refusals.append(
            f"{len(unservable)} unfinished MPIJob(s) of an API the Kubeflow MPI Operator never served "
            f"(it serves {C.GROUP}/{', '.join(KUBEFLOW_SERVED)} only): {_few(unservable, 5)}. Let them finish, or "
            f"delete them, before switching back"
        )
    manifest = options.get("manifest") or []
    saved: dict | None = None
    restore: list[dict] = []
    image = options.get("kubeflow_image") or ""
    if previous is not None:
        saved = {"namespace": previous["namespace"], "deployment": previous["deployment"]}
        restore = previous["objects"]
        source = f"ConfigMap {previous['namespace']}/{BACKUP_NAME} (saved by the switch to mpi.operator)"
    elif kubeflow is not None:
        deployment = next(d for d in state["deployments"] if ref(d) == kubeflow.ref)
        restored = cleaned(deployment)
        restored["spec"]["replicas"] = max(1, kubeflow.replicas)
        restore = [restored]
        source = f"its Deployment {kubeflow.ref}, scaled up again"
    elif manifest:
        if not image:
            refusals.append(
                "mpi_operator_migrate_kubeflow_manifest is given but no image: set mpi_operator_migrate_kubeflow_image "
                "(the Kubeflow operator's image your nodes can pull)"
            )
        restore = manifest_objects(manifest, image)
        source = f"the manifest given, image {image}"
    else:
        refusals.append(
            f"nothing to restore the Kubeflow operator from: no ConfigMap {BACKUP_NAME} (written by the switch to "
            f"mpi.operator), no Kubeflow Deployment; give mpi_operator_migrate_kubeflow_manifest (its "
            f"deploy/v2beta1/mpi-operator.yaml) and mpi_operator_migrate_kubeflow_image"
        )
        source = ""
    if refusals or ours is None:
        return p
    p.backup, p.restore = saved, restore
    step = iter(range(1, 100))
    p.stop = {"namespace": ours.namespace, "name": ours.name, "selector": selector(ours.selector)}
    lines.append(
        f"{next(step)}. stop   Deployment {ours.ref}: replicas {ours.replicas} -> 0, then wait until its pods are gone "
        f"(it hands its Lease back as it stops)"
    )
    lines.append(
        f"{next(step)}. uninstall mpi.operator from namespace {ours.namespace} (mpi.operator.uninstall: its "
        f"Deployment, ServiceAccount and RBAC; the CRD, the MPIJobs and the namespace stay)"
    )
    deployment = next((o for o in p.restore if o.get("kind") == "Deployment"), None)
    if deployment is None:
        refusals.append(f"the objects to restore (from {source}) hold no Deployment")
        return p
    p.lease = {
        "namespace": parse_flags(
            [str(w) for c in containers(deployment)[:1] for w in (c.get("command") or []) + (c.get("args") or [])]
        ).get("lock-namespace", "mpi-operator"),
        "name": LEASE,
        "deployment": ref(deployment),
        "selector": selector(((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}),
    }
    lines.append(f"{next(step)}. restore the Kubeflow operator from {source}: {_names(p.restore)}")
    lines.append(
        f"{next(step)}. wait   until its Deployment {ref(deployment)} is available and its pod holds the Lease "
        f"{p.lease['namespace']}/{LEASE} (it then lists and syncs every MPIJob)"
    )
    lines.append(
        f"keep    CRD mpijobs.kubeflow.org as mpi.operator's (a superset of Kubeflow's: it reads every job through "
        f"it; {C.GROUP}/v1 stays served) and the {len(jobs)} MPIJob(s) with their children"
    )
    return p


KINDS = {
    "Deployment": "deployments",
    "CustomResourceDefinition": "crds",
    "ConfigMap": "backups",
    "ClusterRole": "cluster_roles",
    "ClusterRoleBinding": "cluster_role_bindings",
    "ServiceAccount": "service_accounts",
    "Role": "roles",
    "RoleBinding": "role_bindings",
    "Namespace": "namespaces",
    "MPIJob": "jobs",
}


def queries_first() -> list[dict]:
    """What the switch reads first (mpi.operator.k8s_read queries): every Deployment (the operators), the CRD, an
    earlier switch's ConfigMap, the cluster's RBAC and every MPIJob of every API."""
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"api_version": "apps/v1", "kind": "Deployment"},
        {"api_version": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": f"{C.PLURAL}.{C.GROUP}"},
        {"api_version": "v1", "kind": "ConfigMap", "selector": BACKUP_SELECTOR},
        {"api_version": rbac, "kind": "ClusterRole"},
        {"api_version": rbac, "kind": "ClusterRoleBinding"},
    ] + [{"api_version": a.api_version, "kind": a.kind} for a in REGISTRY.values()]


def queries_second(first: list[dict], namespace: str = "") -> list[dict]:
    """Then, in the namespace of each MPI operator found and in this install's (`namespace`): the ServiceAccounts,
    Roles, RoleBindings and the namespace itself."""
    state = collect(first)
    namespaces = sorted({o.namespace for o in find_operators(state["deployments"])} | ({namespace} - {""}))
    rbac = "rbac.authorization.k8s.io/v1"
    queries = []
    for ns in namespaces:
        queries += [
            {"api_version": "v1", "kind": "ServiceAccount", "namespace": ns},
            {"api_version": rbac, "kind": "Role", "namespace": ns},
            {"api_version": rbac, "kind": "RoleBinding", "namespace": ns},
            {"api_version": "v1", "kind": "Namespace", "name": ns},
        ]
    return queries


def collect(*results: list[dict]) -> dict[str, list[dict]]:
    """k8s_read's results, by what they are (KINDS)."""
    state: dict[str, list[dict]] = {key: [] for key in KINDS.values()}
    for result in results:
        for entry in result or []:
            key = KINDS.get(entry.get("kind") or "")
            if key:
                state[key] += [r for r in entry.get("resources") or [] if r]
    return state


def plan(
    direction: str,
    first: list[dict],
    second: list[dict],
    *,
    settings: dict | None = None,
    carried: dict | None = None,
    ours_objects: list[dict] | None = None,
    options: dict | None = None,
    now: str = "",
) -> dict:
    """The switch in `direction` (OURS or KUBEFLOW), from k8s_read's results of queries_first() and queries_second():
    `settings` the effective install variables, `carried` what migration_settings() carried over (for the plan's
    words), `ours_objects` this collection's rendered RBAC and Deployment."""
    if direction not in DIRECTIONS:
        return asdict(Plan(direction=direction, refusals=[f"mpi_operator_migrate_to must be one of {DIRECTIONS}"]))
    state: dict[str, Any] = dict(collect(first, second))
    carried = carried or {}
    state.update(
        direction=direction,
        settings=settings or {},
        settings_sources=carried.get("sources") or {},
        carried_variables=carried.get("variables") or {},
        not_carried=carried.get("not_carried") or [],
        unknown=carried.get("unknown") or [],
        ours_objects=ours_objects or [],
        options=options or {},
        now=now,
    )
    return asdict(plan_to_ours(state) if direction == OURS else plan_to_kubeflow(state))


def pending(jobs: list[dict], keys: list[str]) -> list[str]:
    """The jobs of `keys` that still exist and whose status.phase this collection's operator has not written yet."""
    by_key = {job_key(j): j for j in jobs}
    return [k for k in keys if k in by_key and not (by_key[k].get("status") or {}).get("phase")]


def leader(lease: dict | None, pods: list[dict]) -> str:
    """The pod of `pods` that holds `lease` (client-go's identity is "<hostname>_<uuid>", the hostname the pod's
    name); "" when none does."""
    holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
    for pod in pods:
        name = (pod.get("metadata") or {}).get("name") or ""
        if name and (holder == name or holder.startswith(f"{name}_")):
            return name
    return ""
