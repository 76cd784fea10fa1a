"""Golden files of the children of representative MPIJobs (readable YAML under golden/)."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import podgroup as PG
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import kubeflow

from ._helpers import KEYS, assert_golden, manifest


def all_children(obj: dict, opts: K.Options, running: tuple[str, ...] = ()) -> list[dict]:
    job = kubeflow.parse(obj)
    docs = [K.service(job), K.config_map(job, running, opts), K.ssh_secret(job, *KEYS)]
    if (pg := PG.pod_group(job, opts, {"high": 1000})) is not None:
        docs.append(pg)
    docs += [K.worker_pod(job, i, opts) for i in range(job.worker_replicas)]
    docs.append(K.launcher_job(job, opts))
    return docs


def _v1() -> dict:
    obj = manifest("legacy", 2, cleanPodPolicy="Running", mainContainer="mpi")
    obj["apiVersion"] = "kubeflow.org/v1"
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"] = [
        {"name": "sidecar", "image": "busybox"},
        {"name": "mpi", "image": "mpi-pi", "command": ["mpirun", "/home/pi"]},
    ]
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [
        {"name": "sidecar", "image": "busybox"},
        {"name": "mpi", "image": "mpi-pi"},
    ]
    del obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]  # v1 defaults Worker replicas to 1
    return obj


def _gang() -> dict:
    obj = manifest("gang", 3, runPolicy={"schedulingPolicy": {"queue": "research", "scheduleTimeoutSeconds": 60}})
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "500m", "memory": "1Gi"}
    }
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}
    }
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "high"
    return obj


def _non_root() -> dict:
    obj = manifest("nonroot", 2, sshAuthMountPath="/home/mpiuser/.ssh")
    for role in ("Launcher", "Worker"):
        tmpl = obj["spec"]["mpiReplicaSpecs"][role]["template"]
        tmpl["spec"]["securityContext"] = {"runAsUser": 1000}
        tmpl["metadata"] = {"labels": {"team": "hpc"}, "annotations": {"sidecar.istio.io/inject": "false"}}
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"] = [
        "/usr/sbin/sshd",
        "-De",
        "-f",
        "/home/mpiuser/.sshd_config",
    ]
    return obj


CASES = {
    "openmpi": (manifest("pi", 2, slotsPerWorker=2), K.Options(), ("pi-worker-1",)),
    "intel": (manifest("intel", 2, mpiImplementation="Intel", slotsPerWorker=4), K.Options(), ()),
    "mpich": (manifest("mpich", 2, mpiImplementation="MPICH"), K.Options(cluster_domain="cluster.local"), ()),
    "launcher_as_worker": (manifest("law", 1, runLauncherAsWorker=True), K.Options(), ("law-worker-0",)),
    "launcher_as_worker_no_workers": (manifest("solo", None, runLauncherAsWorker=True), K.Options(), ()),
    "suspended": (
        manifest(
            "sus",
            2,
            runPolicy={"suspend": True, "backoffLimit": 3, "activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 60},
        ),
        K.Options(),
        (),
    ),
    "gang_volcano": (_gang(), K.Options(gang_scheduling="volcano"), ()),
    "gang_scheduler_plugins": (_gang(), K.Options(gang_scheduling="scheduler-plugins-scheduler"), ()),
    "gang_wait_for_workers": (
        manifest("wfw", 4, launcherCreationPolicy="WaitForWorkersReady"),
        K.Options(gang_scheduling="scheduler-plugins-scheduler"),
        (),
    ),
    "v1_input": (_v1(), K.Options(), ()),
    "non_root": (_non_root(), K.Options(), ()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_children_match_golden(case: str) -> None:
    obj, opts, running = CASES[case]
    assert_golden(case, all_children(obj, opts, running))


def test_hostfile_formats_per_implementation() -> None:
    openmpi = kubeflow.parse(manifest("pi", 2, slotsPerWorker=3))
    intel = kubeflow.parse(manifest("pi", 2, mpiImplementation="Intel", slotsPerWorker=3))
    assert K.hostfile(openmpi, K.Options()).splitlines() == [
        "pi-worker-0.pi.ns.svc slots=3",
        "pi-worker-1.pi.ns.svc slots=3",
    ]
    assert K.hostfile(intel, K.Options(cluster_domain="example.org")).splitlines() == [
        "pi-worker-0.pi.ns.svc.example.org:3",
        "pi-worker-1.pi.ns.svc.example.org:3",
    ]


def test_discover_hosts_lists_running_workers_with_slots_sorted_by_name() -> None:
    job = kubeflow.parse(manifest("pi", 12, slotsPerWorker=2, runLauncherAsWorker=True))
    script = K.discover_hosts(job, ["pi-worker-2", "pi-worker-10"], K.Options())
    assert script == (
        "#!/bin/sh\necho pi-launcher.pi.ns.svc:2\necho pi-worker-10.pi.ns.svc:2\necho pi-worker-2.pi.ns.svc:2\n"
    )


def test_openmpi_launcher_gets_prrte_equivalents_of_orte_variables_but_keep_fqdn() -> None:
    env = {e["name"]: e.get("value") for e in K.launcher_env(kubeflow.parse(manifest(slotsPerWorker=4)))}
    for orte, prrte in (
        ("OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile"),
        ("OMPI_MCA_orte_set_default_slots", "PRTE_MCA_prte_set_default_slots"),
        ("OMPI_MCA_plm_rsh_args", "PRTE_MCA_plm_ssh_args"),
    ):
        assert env[prrte] == env[orte]
    assert env["PRTE_MCA_prte_set_default_slots"] == "4"
    # PRRTE with keep_fqdn_hostnames does not know a launcher-as-worker's hostfile name for its own (Kubeflow's e2e
    # suite, custom cluster-domain spec, on the real node): its default is what works.
    assert "PRTE_MCA_prte_keep_fqdn_hostnames" not in env


def test_ssh_mode_is_0600_only_for_root_path() -> None:
    root = K.worker_pod(kubeflow.parse(manifest()), 0, K.Options())
    other = K.worker_pod(kubeflow.parse(manifest(sshAuthMountPath="/home/u/.ssh")), 0, K.Options())
    assert root["spec"]["volumes"][-1]["secret"]["defaultMode"] == 0o600
    assert "defaultMode" not in other["spec"]["volumes"][-1]["secret"]


def test_secret_holds_the_given_keys() -> None:
    secret = K.ssh_secret(kubeflow.parse(manifest()), *KEYS)
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret["data"]["ssh-privatekey"]) == KEYS[0]
    assert base64.b64decode(secret["data"]["ssh-publickey"]) == KEYS[1]


def test_host_network_uses_cluster_first_with_host_net() -> None:
    obj = manifest()
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["hostNetwork"] = True
    pod = K.worker_pod(kubeflow.parse(obj), 0, K.Options())
    assert pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_user_dns_searches_are_kept() -> None:
    obj = manifest()
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["dnsConfig"] = {"searches": ["corp.example"]}
    pod = K.worker_pod(kubeflow.parse(obj), 0, K.Options())
    assert pod["spec"]["dnsConfig"]["searches"] == ["corp.example", "pi.ns.svc.cluster.local"]


def test_the_launchers_log_tail_goes_into_its_termination_message_unless_the_template_says_otherwise() -> None:
    def policy(obj: dict) -> str | None:
        spec = K.launcher_job(kubeflow.parse(obj), K.Options())["spec"]["template"]["spec"]
        return spec["containers"][0].get("terminationMessagePolicy")

    assert policy(manifest()) == "FallbackToLogsOnError"  # the record's log when the pod is gone before it is read
    obj = manifest()
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"] = "File"
    assert policy(obj) == "File"
    worker = K.worker_pod(kubeflow.parse(manifest()), 0, K.Options())
    assert "terminationMessagePolicy" not in worker["spec"]["containers"][0]  # the workers' pods are never deleted so


def test_builders_do_not_mutate_the_model() -> None:
    job = kubeflow.parse(manifest())
    before = repr(job.worker.template)
    K.worker_pod(job, 0, K.Options(gang_scheduling="volcano"))
    K.launcher_job(job, K.Options(gang_scheduling="volcano"))
    assert repr(job.worker.template) == before
