"""`make peer-e2e`: the Kubeflow MPI Operator's own e2e suite, unchanged, against our operator and, as the control,
against Kubeflow's, on the local cluster with every MPI rank on the real node.

The suite is test/e2e of the github.com/kubeflow/mpi-operator v0.8.2 module source as the Go module proxy serves it,
compiled by `go test -c` (hack/build/kubeflow.sh --e2e; cached). It is written to run against an existing cluster and
operator (USE_EXISTING_CLUSTER, USE_EXISTING_OPERATOR) with images from TEST_OPENMPI_IMAGE, TEST_INTELMPI_IMAGE and
TEST_MPICH_IMAGE (hack/build/images/pi-*: ours, shaped as it expects), and it edits the Deployment `mpi-operator` in the
namespace `mpi-operator` (container args such as --cluster-domain) and waits for it to be available again.

PEER_E2E_FOCUS=REGEX runs only the specs it matches (Ginkgo's focus), to look at one.
For each operator (PEER_E2E_OPERATORS, default "kubeflow ours"; the control first, so the cluster ends with our CRD):
  kubeflow: the v0.8.2 binary in an image (hack/build/images/kubeflow-operator), deployed by the module's own manifest
            (deploy/v2beta1/mpi-operator.yaml, its image name the one thing changed); removed afterwards except its
            CRD, which our install then takes over (mpi_operator_adopt_crd);
  ours:     installed by playbooks/install.yml (the Helm-like defaults: Deployment mpi-operator in mpi-operator),
            uninstalled by playbooks/uninstall.yml afterwards (the CRD stays, as always).
Then the suite, every spec. Its two gang-scheduling contexts install their schedulers from Helm charts and registry
images this machine cannot reach; here the same schedulers are built from the Go module proxy and run beside the
default one (hack/worlds/gang/up.sh: scheduler-plugins' Coscheduling; hack/worlds/volcano/up.sh: Volcano's
vc-scheduler), and the suite is told to use them (USE_EXISTING_SCHEDULER_PLUGINS, USE_EXISTING_VOLCANO_SCHEDULER).
Each context turns gang scheduling on by adding --gang-scheduling to the operator Deployment's args: Kubeflow's
manifest grants PodGroups always, our install only when installed with gang scheduling (least privilege), so for ours
the run grants what `mpi_operator_gang_scheduling` would have (GANG_RBAC), and removes it after. While it runs the cluster is in its exclusive real-node mode:
the real node's taint is off and the kwok nodes are cordoned, because the suite's pods carry no toleration and every
rank must really run; the taint and the cordons are restored however the run ends.

Writes build/peer-e2e/<operator>.log (the suite's verbose output) and results.json, prints the spec-by-spec table,
and exits 1 unless every spec that ran passed on ours. Needs root (the real node) and the venv (make venv).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from hack.lib.ansible import ansible_env
from hack.lib.kubeflow import KUBEFLOW_VERSION, apply_manifest, kubeflow_manifest
from hack.lib.paths import ROOT, cache, local_kubeconfig
from hack.lib.wait import wait_until

CACHE = cache()
KUBECONFIG = local_kubeconfig()
KUBECTL = CACHE / "bin/kubectl"
OUT = ROOT / "build/peer-e2e"
VERSION = KUBEFLOW_VERSION
NAMESPACE = "mpi-operator"  # the suite's mpiOperator constant: the Deployment's name and namespace
REAL_NODE = os.environ.get("MPI_REAL_NODE_NAME", "mpi-real-node")
REAL_NODE_TAINT = "mpi.operator/real-node"
# The context whose scheduler cannot be had here: Volcano's (its Helm chart, registry images; docs/dev/peer-e2e.md).
SKIP = ""  # a Ginkgo skip regex, when a context cannot run here (none now: both gang schedulers are built)
# What our install grants with mpi_operator_gang_scheduling set (roles/operator/templates/rbac.yaml.j2), for the run.
GANG_RBAC = "mpi-operator-peer-e2e-gang"
SUITE_TIMEOUT_S = 3600


def log(msg: str) -> None:
    print(f"[peer-e2e {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(argv: list[str], **kwargs) -> str:
    """Runs argv; its stdout, or a clear failure with the end of its output."""
    proc = subprocess.run(argv, cwd=kwargs.pop("cwd", ROOT), capture_output=True, text=True, check=False, **kwargs)
    if proc.returncode != 0:
        sys.exit(
            f"peer-e2e: {' '.join(map(str, argv[:3]))} ... failed ({proc.returncode}):\n"
            f"{(proc.stdout + proc.stderr)[-4000:]}"
        )
    return proc.stdout


def kubectl(*args: str, stdin: str | None = None) -> str:
    return run([str(KUBECTL), f"--kubeconfig={KUBECONFIG}", *args], input=stdin)


def image(name: str) -> str:
    """Builds (cached) and imports hack/build/images' `name`; its reference by the tag naming this build."""
    ref, _tar, key = run(["bash", "hack/build/images/build.sh", "--print", name]).split()[:3]
    return f"{ref.rsplit(':', 1)[0]}:{key}"


class Cluster:
    def __init__(self) -> None:
        self.api = config.new_client_from_config(str(KUBECONFIG))
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.cordoned: list[str] = []
        self.untainted = False

    def exclusive_real_node(self) -> None:
        """The suite's pods carry no toleration: the real node's taint off, the kwok nodes cordoned (each one that
        was schedulable, so restore() uncordons only those)."""
        node = self.core.read_node(REAL_NODE)
        if any(t.key == REAL_NODE_TAINT for t in node.spec.taints or []):
            kubectl("taint", "node", REAL_NODE, f"{REAL_NODE_TAINT}:NoSchedule-")
            self.untainted = True
        for other in self.core.list_node().items:
            if other.metadata.name != REAL_NODE and not other.spec.unschedulable:
                kubectl("cordon", other.metadata.name)
                self.cordoned.append(other.metadata.name)
        log(f"exclusive real-node mode: {REAL_NODE} untainted, cordoned {', '.join(self.cordoned) or 'nothing'}")

    def restore(self) -> None:
        if self.untainted:
            kubectl("taint", "node", REAL_NODE, f"{REAL_NODE_TAINT}=true:NoSchedule", "--overwrite")
        for name in self.cordoned:
            kubectl("uncordon", name)
        log(f"restored: {REAL_NODE} tainted again, uncordoned {', '.join(self.cordoned) or 'nothing'}")

    def deployment_available(self) -> bool:
        try:
            return bool(self.apps.read_namespaced_deployment(NAMESPACE, NAMESPACE).status.available_replicas)
        except ApiException as err:
            if err.status == 404:
                return False
            raise

    def suite_namespaces_gone(self) -> bool:
        return not [n for n in self.core.list_namespace().items if n.metadata.name.startswith("e2e-")]


def install(kind: str, cluster: Cluster, tmp: pathlib.Path) -> None:
    if kind == "kubeflow":
        apply_manifest(kubeflow_manifest(image("kubeflow-operator")), str(KUBECONFIG), str(KUBECTL))
    else:
        ref = image("operator")
        repository, tag = ref.rsplit(":", 1)
        variables = {
            "mpi_operator_image_repository": repository,
            "mpi_operator_image_tag": tag,
            "mpi_operator_image_pull_policy": "Never",
            "mpi_operator_adopt_crd": True,
            "mpi_operator_wait_timeout": 180,
        }
        playbook("install.yml", variables, tmp)
        grant_gang_scheduling()
    wait_until(cluster.deployment_available, 300, f"{kind}'s Deployment {NAMESPACE}/{NAMESPACE} available", interval=1)


def uninstall(kind: str, tmp: pathlib.Path) -> None:
    if kind == "kubeflow":
        # Everything of its manifest but the CRD (jobs are never deleted as a side effect).
        docs = kubeflow_manifest("unused", crd=False)
        kubectl("delete", "--ignore-not-found", "--wait=true", "-f", "-", stdin=yaml.safe_dump_all(docs))
    else:
        playbook("uninstall.yml", {}, tmp)
        kubectl("delete", "--ignore-not-found", "clusterrolebinding,clusterrole", GANG_RBAC)


def grant_gang_scheduling() -> None:
    crud = ["get", "list", "watch", "create", "update", "patch", "delete"]
    rules = [
        {"apiGroups": ["scheduling.volcano.sh", "scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": crud},
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
    ]
    docs = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": GANG_RBAC},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": GANG_RBAC},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": GANG_RBAC},
            "subjects": [{"kind": "ServiceAccount", "name": NAMESPACE, "namespace": NAMESPACE}],
        },
    ]
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def playbook(name: str, variables: dict, tmp: pathlib.Path) -> None:
    vars_file = tmp / f"{name}.json"
    vars_file.write_text(json.dumps(variables))
    env = ansible_env(str(KUBECONFIG))
    run([str(ROOT / ".venv/bin/ansible-playbook"), f"playbooks/{name}", "-e", f"@{vars_file}"], env=env)


# Ginkgo v1's verbose reporter prints each spec as it starts: its containers' texts on one line, its It on the next,
# its file:line on the third; then the spec's steps and output, then its outcome: "•" (passed; "• [SLOW TEST:12.3
# seconds]" past 5 s), "• Failure [12.3 seconds]" (also "• Failure in Spec Setup (BeforeEach) [...]"),
# "• [PANICKED] ...", or "S [SKIPPING] ..." for a spec that skipped itself.
# The source line is absolute, or module-relative when the suite was built with -trimpath (hack/build/kubeflow.sh).
SPEC = re.compile(r"^(?!\S+\.go:\d+$)(\S[^\n]*?) ?\n  (?!\S+\.go:\d+$)(\S[^\n]*)\n  \S+\.go:\d+$", re.M)
OUTCOME = re.compile(r"^(•|S \[SKIPPING\])(.*)$", re.M)


def parse(output: str) -> dict[str, dict]:
    """Spec text -> {"outcome": passed|failed|skipped, "seconds": float|None} from the suite's -ginkgo.v output."""
    results: dict[str, dict] = {}
    starts = list(SPEC.finditer(output))
    for i, spec in enumerate(starts):
        body = output[spec.end() : starts[i + 1].start() if i + 1 < len(starts) else len(output)]
        outcome = OUTCOME.search(body)
        if outcome is None:  # the run ended inside this spec (a timeout of the whole suite)
            results[f"{spec[1]} {spec[2]}"] = {"outcome": "failed", "seconds": None}
            continue
        mark, rest = outcome[1], outcome[2]
        seconds = re.search(r"([\d.]+) seconds\]", rest)
        state = (
            "skipped"
            if mark.startswith("S")
            else "failed"
            if ("Failure" in rest or "PANICKED" in rest or "INTERRUPTED" in rest)
            else "passed"
        )
        results[f"{spec[1]} {spec[2]}"] = {"outcome": state, "seconds": float(seconds[1]) if seconds else None}
    return results


def run_suite(kind: str, suite: str, images: dict[str, str]) -> dict[str, dict]:
    OUT.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        KUBECONFIG=str(KUBECONFIG),
        USE_EXISTING_CLUSTER="true",
        USE_EXISTING_OPERATOR="true",
        USE_EXISTING_SCHEDULER_PLUGINS="true",
        USE_EXISTING_VOLCANO_SCHEDULER="true",
        TEST_OPENMPI_IMAGE=images["pi-openmpi"],
        TEST_INTELMPI_IMAGE=images["pi-intel"],
        TEST_MPICH_IMAGE=images["pi-mpich"],
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as work:  # its rootPath ../.. (kind, helm, manifests) is never used here
        focus = [f"-ginkgo.focus={os.environ['PEER_E2E_FOCUS']}"] if os.environ.get("PEER_E2E_FOCUS") else []
        proc = subprocess.run(
            [
                suite,
                "-test.v",
                f"-test.timeout={SUITE_TIMEOUT_S}s",
                "-ginkgo.v",
                "-ginkgo.noColor",
                *([f"-ginkgo.skip={SKIP}"] if SKIP else []),
                *focus,
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=SUITE_TIMEOUT_S + 60,
        )
    output = proc.stdout + proc.stderr
    (OUT / f"{kind}.log").write_text(output)
    results = parse(output)
    summary = re.search(r"^Ran \d+ of \d+ Specs.*$", output, re.M)
    log(
        f"{kind}: exit {proc.returncode} in {time.monotonic() - started:.0f} s; "
        f"{summary[0] if summary else 'no summary line'} (log: {OUT / f'{kind}.log'})"
    )
    return results


def table(results: dict[str, dict[str, dict]], kinds: list[str]) -> str:
    specs = sorted({spec for by_spec in results.values() for spec in by_spec})
    header = "| spec | " + " | ".join(kinds) + " |\n|---|" + "---|" * len(kinds)
    rows = []
    for spec in specs:
        cells = []
        for kind in kinds:
            r = results.get(kind, {}).get(spec)
            cells.append("-" if r is None else r["outcome"] + (f" ({r['seconds']:.0f} s)" if r["seconds"] else ""))
        rows.append(f"| {spec} | " + " | ".join(cells) + " |")
    return "\n".join([header, *rows])


def main() -> int:
    kinds = os.environ.get("PEER_E2E_OPERATORS", "kubeflow ours").split()
    if bad := [k for k in kinds if k not in ("kubeflow", "ours")]:
        sys.exit(f"PEER_E2E_OPERATORS: {bad} (each one of: kubeflow, ours)")
    started = time.monotonic()
    log("cluster with its real node (hack/worlds/cluster/up.sh)")
    run(["bash", "hack/worlds/cluster/up.sh"], env=dict(os.environ, MPI_CLUSTER_REAL_NODE="1"))
    suite = run(["bash", "hack/build/kubeflow.sh", "--e2e"]).strip().splitlines()[-1]
    log("the gang schedulers: scheduler-plugins (hack/worlds/gang/up.sh), Volcano (hack/worlds/volcano/up.sh)")
    run(["bash", "hack/worlds/gang/up.sh"])
    run(["bash", "hack/worlds/volcano/up.sh"])
    images = {name: image(name) for name in ("pi-openmpi", "pi-mpich", "pi-intel")}
    log(f"suite {suite}; images {images}")
    cluster = Cluster()
    results: dict[str, dict[str, dict]] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            cluster.exclusive_real_node()
            for kind in kinds:
                t0 = time.monotonic()
                log(f"{kind}: installing")
                install(kind, cluster, pathlib.Path(tmp))
                try:
                    results[kind] = run_suite(kind, suite, images)
                finally:
                    wait_until(cluster.suite_namespaces_gone, 300, "the suite's namespaces deleted", interval=1)
                    uninstall(kind, pathlib.Path(tmp))
                seconds[kind] = round(time.monotonic() - t0, 1)
        finally:
            cluster.restore()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(
        json.dumps({"version": VERSION, "skip": SKIP, "seconds": seconds, "results": results}, indent=2)
    )
    print(table(results, kinds))
    print(
        f"\nskipped by name (-ginkgo.skip): {SKIP or 'none'}; seconds per operator: {seconds}; "
        f"total {time.monotonic() - started:.0f} s"
    )
    ours = results.get("ours", {})
    failed = [spec for spec, r in ours.items() if r["outcome"] == "failed"]
    if "ours" in kinds and (failed or not [r for r in ours.values() if r["outcome"] == "passed"]):
        print(f"FAILED on ours: {failed or 'no spec passed'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TimeoutError as exc:  # a wait that ran out ends the run with its message, as the other failures do
        sys.exit(f"peer-e2e: {exc}")
