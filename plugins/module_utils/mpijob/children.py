# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""One builder per child object of an MPIJob, named and filled exactly as the Kubeflow MPI Operator does.

Differences from Kubeflow (docs/differences.md): PRRTE variables next to the ORTE ones for OpenMPI 5,
`host:slots` lines in discover_hosts.sh, and the worker DNS search path honours the cluster domain. The gang
scheduler's PodGroup is podgroup.py's, as Kubeflow keeps it apart in podgroup.go.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import constants as C
from .gate import gate_container
from .spec import MPIJob, ReplicaSpec


@dataclass(frozen=True)
class Options:
    """Operator-level settings, the Kubeflow flags `--cluster-domain` and `--gang-scheduling`."""

    cluster_domain: str = ""
    gang_scheduling: str = ""
    # An image whose entrypoint copies kubectl into its first argument's directory, for launchers that start MPI
    # through `kubectl exec` (as the original kubectl-delivery image did); "" = kubectl is in the launcher's image.
    kubectl_delivery_image: str = ""
    # The clean-up of a job that finishes in this pass is left to a pass of its own (Plan.cleanup_pending), which the
    # operator runs once no other job waits for its status: in a burst, outcomes are not held back by deletions.
    cleanup_later: bool = False
    # The operator's image, which the launch gate runs in (gate.py); "" = no gate.
    launch_gate_image: str = ""
    # The record of a job's pods (record.py): lines and bytes of each pod's log, bytes of the whole record.
    record_lines: int = C.RECORD_LINES
    record_pod_bytes: int = C.RECORD_POD_BYTES
    record_total_bytes: int = C.RECORD_TOTAL_BYTES
    # The extended resources a worker's slots are checked against (accelerators.py).
    accelerators: tuple[str, ...] = C.ACCELERATORS
    # Seconds a status write that only counts pods coming up (Api.progress_only) may be held back, and with it the
    # discover_hosts.sh of the workers up so far, when the shell remembers what it held (a warm run): workers coming
    # up one by one then cost one write, not one each. 0: written at once.
    progress_every: float = 0.0

    @property
    def volcano(self) -> bool:
        return self.gang_scheduling == C.VOLCANO


# ---- names -------------------------------------------------------------------------------------------------------


def launcher_name(job: MPIJob) -> str:
    return job.name + C.LAUNCHER_SUFFIX


def worker_name(job: MPIJob, index: int) -> str:
    return f"{job.name}{C.WORKER_SUFFIX}-{index}"


def config_name(job: MPIJob) -> str:
    return job.name + C.CONFIG_SUFFIX


def secret_name(job: MPIJob) -> str:
    return job.name + C.SSH_SUFFIX


def worker_index(job: MPIJob, pod_name: str) -> int | None:
    """The index in `<job>-worker-<i>`, or None for any other name."""
    prefix = f"{job.name}{C.WORKER_SUFFIX}-"
    tail = pod_name[len(prefix) :] if pod_name.startswith(prefix) else ""
    return int(tail) if tail.isdigit() and str(int(tail)) == tail else None


def fqdn(job: MPIJob, hostname: str, opts: Options) -> str:
    name = f"{hostname}.{job.name}.{job.namespace}.svc"
    return f"{name}.{opts.cluster_domain}" if opts.cluster_domain else name


# ---- labels and references ---------------------------------------------------------------------------------------


def owner_reference(job: MPIJob) -> dict:
    return {
        "apiVersion": job.owner_api_version,
        "kind": C.KIND,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def default_labels(job: MPIJob, role: str) -> dict:
    return {C.OPERATOR_NAME_LABEL: C.OPERATOR_NAME, C.JOB_NAME_LABEL: job.name, C.JOB_ROLE_LABEL: role}


def worker_selector(job: MPIJob) -> str:
    """Label selector string of the job's worker pods (the scale subresource's labelSelectorPath)."""
    return ",".join(f"{k}={v}" for k, v in sorted(default_labels(job, C.ROLE_WORKER).items()))


def _meta(job: MPIJob, name: str) -> dict:
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": {C.APP_LABEL: job.name},
        "ownerReferences": [owner_reference(job)],
    }


# ---- Service, ConfigMap, Secret ------------------------------------------------------------------------------------


def service(job: MPIJob) -> dict:
    """Headless Service `<job>` in front of the launcher and the workers."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(job, job.name),
        "spec": {
            "clusterIP": "None",
            "selector": {C.OPERATOR_NAME_LABEL: C.OPERATOR_NAME, C.JOB_NAME_LABEL: job.name},
            # Only a launcher that is also a worker must be resolvable before it is Ready.
            "publishNotReadyAddresses": job.run_launcher_as_worker,
        },
    }


def _slot_hosts(job: MPIJob, hostnames: Iterable[str], opts: Options) -> list[str]:
    hosts = [launcher_name(job)] if job.run_launcher_as_worker else []
    return [fqdn(job, h, opts) for h in hosts + list(hostnames)]


def topology_order(job: MPIJob, placement: Mapping[int, Sequence[str]]) -> list[int] | None:
    """The worker indices in hostfile order for a job with `mpi.operator/hostfile-topology`: by their nodes' values of
    its label keys, the widest level first, then by index (`placement`: each worker's values, "" for a label its node
    lacks). None while a worker is not placed yet, or for a job that did not ask: the hostfile is then in index
    order, as Kubeflow writes it. Nodes without the labels keep index order."""
    indices = range(job.worker_replicas)
    if not job.directives.hostfile_topology or any(i not in placement for i in indices):
        return None
    return sorted(indices, key=lambda i: (tuple(placement[i]), i))


def hostfile(job: MPIJob, opts: Options, order: Sequence[int] | None = None) -> str:
    """One line per host from the Worker replicas (OpenMPI `host slots=N`, Intel/MPICH `host:N`), in index order or
    in `order` (topology_order); the launcher first when it runs as a worker."""
    indices = range(job.worker_replicas) if order is None else order
    hosts = _slot_hosts(job, (worker_name(job, i) for i in indices), opts)
    form = "{host} slots={slots}\n" if job.mpi_implementation == C.OPENMPI else "{host}:{slots}\n"
    return "".join(form.format(host=h, slots=job.slots_per_worker) for h in hosts)


def discover_hosts(job: MPIJob, running_workers: Iterable[str], opts: Options) -> str:
    """Horovod elastic host discovery: the Running workers (sorted by name) in `host:slots` form."""
    hosts = _slot_hosts(job, sorted(running_workers), opts)
    return "#!/bin/sh\n" + "".join(f"echo {h}:{job.slots_per_worker}\n" for h in hosts)


def _kubexec_item() -> dict:
    """kubexec.sh, as an item of the config volume (a new dict each time: pod specs are edited later)."""
    return {"key": C.KUBEXEC, "path": C.KUBEXEC, "mode": 0o555}


def kubexec(job: MPIJob, opts: Options) -> str:
    """The launcher's rsh agent for C.LAUNCH_KUBEXEC, called as MPI calls an rsh agent (`kubexec.sh <host>
    <command...>`) or as ssh is called (`ssh [options] <host> <command...>`: it is also the launcher's `ssh`, so tools
    that check or start the workers over ssh themselves, as horovodrun does, reach them too). It runs the command in
    that worker pod's MPI container (the hostfile's FQDN cut to the pod name); ssh's options are dropped."""
    kubectl = f"{C.KUBECTL_DIR}/kubectl" if opts.kubectl_delivery_image else "kubectl"
    container = ""
    if job.worker is not None:
        containers = ((job.worker.template.get("spec") or {}).get("containers")) or [{}]
        name = _main_container(job, {"containers": containers}).get("name")
        container = f" --container {shlex.quote(name)}" if isinstance(name, str) and name else ""
    # ssh's options that take a value (OpenSSH's getopt string), given apart (-p 22) or joined (-p22).
    return (
        "#!/bin/sh\n"
        "while [ $# -gt 0 ]; do\n"
        "  case $1 in\n"
        "    -[BbcDEeFIiJLlmOoPpRSWw]) shift 2 ;;\n"
        "    --) shift; break ;;\n"
        "    -*) shift ;;\n"
        "    *) break ;;\n"
        "  esac\n"
        "done\n"
        "host=${1%%.*}\n"
        "shift\n"
        f'exec {kubectl} exec "$host"{container} -- /bin/sh -c "$*"\n'
    )


def _digits_below(n: int) -> int:
    """The digits of 0, 1, ..., n-1 written out, together."""
    total, width, start = 0, 1, 0
    while start < n:
        end = min(n, 10**width)
        total += (end - start) * width
        start, width = end, width + 1
    return total


def config_bytes(job: MPIJob, opts: Options) -> int:
    """The size of the job's ConfigMap data at its largest (every worker running: the hostfile and discover_hosts.sh
    each list them all), as the API server counts it (keys and values), computed from the number of workers rather
    than built: a job asking for two billion workers costs nothing to refuse."""
    slots = str(job.slots_per_worker)
    line = len(" slots=\n" if job.mpi_implementation == C.OPENMPI else ":\n") + len(slots)  # after the host
    echo = len("echo :\n") + len(slots)  # discover_hosts.sh, around the host
    n = job.worker_replicas
    # worker i's FQDN is worker 0's with i in place of 0
    hosts = n * (len(fqdn(job, worker_name(job, 0), opts)) - 1) + _digits_below(n)
    total = hosts * 2 + n * (line + echo)
    if job.run_launcher_as_worker:
        total += 2 * len(fqdn(job, launcher_name(job), opts)) + line + echo
    total += len(C.HOSTFILE) + len(C.DISCOVER_HOSTS) + len("#!/bin/sh\n")
    if job.launch_agent == C.LAUNCH_KUBEXEC:
        total += len(C.KUBEXEC) + len(kubexec(job, opts))
    return total


def config_map(job: MPIJob, running_workers: Iterable[str], opts: Options, order: Sequence[int] | None = None) -> dict:
    data = {C.HOSTFILE: hostfile(job, opts, order), C.DISCOVER_HOSTS: discover_hosts(job, running_workers, opts)}
    if job.launch_agent == C.LAUNCH_KUBEXEC:
        data[C.KUBEXEC] = kubexec(job, opts)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(job, config_name(job)), "data": data}


def launcher_rbac(job: MPIJob) -> list[dict]:
    """ServiceAccount, Role and RoleBinding `<job>-launcher` (C.LAUNCH_KUBEXEC): the launcher may exec into pods of
    its namespace, nothing else."""
    name = launcher_name(job)
    ref = {"kind": "ServiceAccount", "name": name, "namespace": job.namespace}
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]},
    ]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(job, name)},
        {"apiVersion": C.RBAC_API_VERSION, "kind": "Role", "metadata": _meta(job, name), "rules": rules},
        {
            "apiVersion": C.RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": _meta(job, name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [ref],
        },
    ]


def ssh_secret(job: MPIJob, private_key_pem: bytes, public_key: bytes) -> dict:
    """Secret `<job>-ssh`; the key pair is made by the shell (randomness is I/O)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(job, secret_name(job)),
        "type": C.SSH_SECRET_TYPE,
        "data": {
            C.SSH_PRIVATE_KEY: base64.b64encode(private_key_pem).decode(),
            C.SSH_PUBLIC_KEY: base64.b64encode(public_key).decode(),
        },
    }


# ---- pods ------------------------------------------------------------------------------------------------------------


def _main_container(job: MPIJob, pod_spec: dict) -> dict:
    """The MPI container: the one `spec.mainContainer` names (legacy v1 field), else the first."""
    containers = pod_spec["containers"]
    for container in containers:
        if job.main_container and container.get("name") == job.main_container:
            return container
    return containers[0]


def _append(obj: dict, key: str, items: list) -> None:
    obj[key] = list(obj.get(key) or []) + items


def _setup_ssh(job: MPIJob, pod_spec: dict) -> None:
    secret: dict[str, Any] = {
        "secretName": secret_name(job),
        "items": [
            {"key": C.SSH_PRIVATE_KEY, "path": "id_rsa"},
            {"key": C.SSH_PUBLIC_KEY, "path": "id_rsa.pub"},
            {"key": C.SSH_PUBLIC_KEY, "path": "authorized_keys"},
        ],
    }
    if job.ssh_auth_mount_path == C.ROOT_SSH_PATH:
        secret["defaultMode"] = 0o600  # elsewhere the Kubernetes default 0644 applies, as in Kubeflow
    _append(pod_spec, "volumes", [{"name": C.SSH_VOLUME, "secret": secret}])
    _append(
        _main_container(job, pod_spec), "volumeMounts", [{"name": C.SSH_VOLUME, "mountPath": job.ssh_auth_mount_path}]
    )


def _pod_template(job: MPIJob, replica: ReplicaSpec, role: str, hostname: str, opts: Options) -> tuple[dict, dict]:
    """(metadata, spec) of a launcher or worker pod with what both roles share."""
    template = copy.deepcopy(replica.template)
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    labels.update(default_labels(job, role))
    meta = {"labels": labels}
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    spec = template.get("spec") or {}
    spec["hostname"] = hostname
    spec["subdomain"] = job.name  # the headless Service
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    spec["restartPolicy"] = replica.restart_policy
    if opts.gang_scheduling:
        spec["schedulerName"] = opts.gang_scheduling
        if opts.volcano:
            meta.setdefault("annotations", {})[C.VOLCANO_GROUP_ANNOTATION] = job.name
        else:
            labels[C.PLUGINS_GROUP_LABEL] = job.name
    _append(_main_container(job, spec), "env", [{"name": C.ROLE_ENV, "value": role}])
    _setup_ssh(job, spec)
    _with_attempt(job, labels, spec)
    return meta, spec


def _with_attempt(job: MPIJob, labels: dict, spec: dict) -> None:
    """With a failure policy, a pod belongs to an attempt (its label, and C.ATTEMPT_ENV for the program, to resume
    from its checkpoint) and never restarts in place: a failed container is a fault of the world (restart.py)."""
    if job.run_policy.failure_policy is None:
        return
    labels[C.ATTEMPT_LABEL] = str(job.attempt)
    spec["restartPolicy"] = "Never"
    _append(_main_container(job, spec), "env", [{"name": C.ATTEMPT_ENV, "value": str(job.attempt)}])


def worker_template_hash(job: MPIJob) -> str:
    """A short digest of the worker template: equal for equal templates, whatever the key order."""
    template = job.worker.template if job.worker else {}
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def worker_pod(job: MPIJob, index: int, opts: Options) -> dict:
    """Plain Pod `<job>-worker-<index>`."""
    if job.worker is None:
        raise AssertionError("worker_pod needs a job with workers")
    name = worker_name(job, index)
    meta, spec = _pod_template(job, job.worker, C.ROLE_WORKER, name, opts)
    # Kueue TAS needs a unique index per pod of the group: the launcher takes 0 when it is a worker too.
    meta["labels"][C.REPLICA_INDEX_LABEL] = str(index + 1 if job.run_launcher_as_worker else index)
    # Lets Intel MPI and MPICH workers resolve the launcher's short hostname.
    search = f"{job.name}.{job.namespace}.svc.{opts.cluster_domain or 'cluster.local'}"
    spec["dnsConfig"] = dns = dict(spec.get("dnsConfig") or {})
    _append(dns, "searches", [search])
    container = _main_container(job, spec)
    if not container.get("command") and not container.get("args"):
        container["command"] = list(C.SSHD_COMMAND)
    if job.launch_agent == C.LAUNCH_KUBEXEC:
        # OpenMPI's daemon on a worker opens the rsh launcher too, and stops when the rsh agent it was given is not
        # there: the same script at the same path (the launcher starts every daemon itself, _use_kubexec).
        _mount_config(job, spec, container, [_kubexec_item()])
    if job.roll_workers:
        meta.setdefault("annotations", {})[C.WORKER_TEMPLATE_HASH_ANNOTATION] = worker_template_hash(job)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": job.namespace, **meta, "ownerReferences": [owner_reference(job)]},
        "spec": spec,
    }


def launcher_env(job: MPIJob) -> list[dict]:
    """Environment of the MPI implementation, added to the launcher's MPI container."""
    slots = str(job.slots_per_worker)
    if job.mpi_implementation == C.OPENMPI:
        env = [
            ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            ("OMPI_MCA_orte_default_hostfile", C.HOSTFILE_PATH),
            ("OMPI_MCA_plm_rsh_args", C.SSH_ARGS),
            ("OMPI_MCA_orte_set_default_slots", slots),
            # OpenMPI 5 replaced ORTE by PRRTE and silently ignores the ORTE names (kubeflow/mpi-operator#842). Not
            # PRRTE's keep_fqdn_hostnames: with it, PRRTE takes a launcher that is also a worker for another host
            # (its hostfile name, the FQDN, is not its hostname) and ssh-es to itself; its default finds the workers
            # by their hostfile names all the same (the Kubeflow e2e suite's cluster-domain spec, docs/dev/peer-e2e.md).
            ("PRTE_MCA_prte_default_hostfile", C.HOSTFILE_PATH),
            ("PRTE_MCA_plm_ssh_args", C.SSH_ARGS),
            ("PRTE_MCA_prte_set_default_slots", slots),
        ]
    elif job.mpi_implementation == C.INTEL:
        env = [
            ("I_MPI_HYDRA_HOST_FILE", C.HOSTFILE_PATH),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", C.SSH_ARGS),
            ("I_MPI_PERHOST", slots),
        ]
    else:
        env = [("HYDRA_HOST_FILE", C.HOSTFILE_PATH), ("HYDRA_LAUNCH_EXTRA_ARGS", C.SSH_ARGS)]
    result = [{"name": k, "value": v} for k, v in env]
    if not job.run_launcher_as_worker:
        # Keeps a launcher that is not a worker off the GPUs.
        result += [{"name": "NVIDIA_VISIBLE_DEVICES"}, {"name": "NVIDIA_DRIVER_CAPABILITIES"}]
    return result


def launcher_pod_template(job: MPIJob, opts: Options) -> dict:
    meta, spec = _pod_template(job, job.launcher, C.ROLE_LAUNCHER, launcher_name(job), opts)
    if job.run_launcher_as_worker:
        meta["labels"][C.REPLICA_INDEX_LABEL] = "0"
    container = _main_container(job, spec)
    # The last lines of its log in its status when it fails (unless the template says otherwise): the record keeps them
    # even when the pod is gone before its log is read (the Job controller deletes a failed launcher's pod, restarted
    # in place, once the backoffLimit is spent)
    container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    _append(container, "env", launcher_env(job))
    items = [
        {"key": C.HOSTFILE, "path": C.HOSTFILE, "mode": 0o444},
        {"key": C.DISCOVER_HOSTS, "path": C.DISCOVER_HOSTS, "mode": 0o555},
    ]
    if job.launch_agent == C.LAUNCH_KUBEXEC:
        _use_kubexec(job, spec, container, items, opts)
    _mount_config(job, spec, container, items)
    gate = gate_container(job, opts.launch_gate_image, launcher_name(job))
    if gate is not None:
        _append(spec, "initContainers", [gate])  # last: right before mpirun
    return {"metadata": {**meta, "ownerReferences": [owner_reference(job)]}, "spec": spec}


def _mount_config(job: MPIJob, spec: dict, container: dict, items: list[dict]) -> None:
    """The job's ConfigMap keys `items` as the pod's config volume, mounted at C.CONFIG_MOUNT_PATH in `container`."""
    _append(spec, "volumes", [{"name": C.CONFIG_VOLUME, "configMap": {"name": config_name(job), "items": items}}])
    _append(container, "volumeMounts", [{"name": C.CONFIG_VOLUME, "mountPath": C.CONFIG_MOUNT_PATH}])


def _use_kubexec(job: MPIJob, spec: dict, container: dict, items: list[dict], opts: Options) -> None:
    """MPI's rsh agent is kubexec.sh, run with the job's own ServiceAccount; kubectl comes from the delivery image
    when there is one."""
    items.append(_kubexec_item())
    # The launcher's `ssh` is kubexec.sh too: /usr/local/bin comes before /usr/bin on every distribution's PATH.
    _append(
        container,
        "volumeMounts",
        [{"name": C.CONFIG_VOLUME, "mountPath": C.KUBEXEC_SSH_PATH, "subPath": C.KUBEXEC, "readOnly": True}],
    )
    # No tree spawn: a worker has neither kubectl nor the right to exec, so the launcher starts every daemon.
    _append(
        container,
        "env",
        [
            {"name": "OMPI_MCA_plm_rsh_agent", "value": C.KUBEXEC_PATH},
            {"name": "OMPI_MCA_plm_rsh_no_tree_spawn", "value": "1"},
            {"name": "PRTE_MCA_plm_ssh_agent", "value": C.KUBEXEC_PATH},
            {"name": "PRTE_MCA_plm_ssh_no_tree_spawn", "value": "1"},
        ],
    )
    spec["serviceAccountName"] = launcher_name(job)
    spec["automountServiceAccountToken"] = True
    if opts.kubectl_delivery_image:
        _append(spec, "volumes", [{"name": C.KUBECTL_VOLUME, "emptyDir": {}}])
        mount = {"name": C.KUBECTL_VOLUME, "mountPath": C.KUBECTL_DIR}
        _append(
            spec,
            "initContainers",
            [
                {
                    "name": C.KUBECTL_DELIVERY_CONTAINER,
                    "image": opts.kubectl_delivery_image,
                    "args": [C.KUBECTL_DIR],
                    "volumeMounts": [mount],
                }
            ],
        )
        _append(container, "volumeMounts", [mount])


def launcher_pod(job: MPIJob, opts: Options) -> dict:
    """Plain Pod `<job>-launcher` (MPIJob.launcher_pod): `kubectl logs <job>-launcher` works, as with the kubebuilder
    operator (apis/bdap.py)."""
    template = launcher_pod_template(job, opts)
    meta = {"name": launcher_name(job), "namespace": job.namespace, **template["metadata"]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}


def launcher_job(job: MPIJob, opts: Options) -> dict:
    """batch/v1 Job `<job>-launcher` carrying the runPolicy limits."""
    rp = job.run_policy
    spec: dict = {}
    for key, value in (
        ("ttlSecondsAfterFinished", rp.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", rp.active_deadline_seconds),
        ("backoffLimit", rp.backoff_limit),
    ):
        if value is not None:
            spec[key] = value
    spec["template"] = launcher_pod_template(job, opts)
    # Avoids kubernetes/kubernetes#115844: terminating pods being replaced.
    spec["podReplacementPolicy"] = "Failed"
    if job.suspended:
        spec["suspend"] = True
    meta = _meta(job, launcher_name(job))
    if job.run_policy.failure_policy is not None:
        # The operator retries, after the whole world was made again (restart.py): the Job's failure is seen once.
        spec["backoffLimit"] = 0
        meta["labels"][C.ATTEMPT_LABEL] = str(job.attempt)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def scheduling_directives(job: MPIJob, opts: Options) -> dict:
    """The launcher template fields Kueue may change while the job is suspended (KEP-2926)."""
    template = launcher_pod_template(job, opts)
    spec = template["spec"]
    return {
        "labels": template["metadata"].get("labels") or {},
        "annotations": template["metadata"].get("annotations") or {},
        "nodeSelector": spec.get("nodeSelector"),
        "tolerations": spec.get("tolerations"),
        "schedulingGates": spec.get("schedulingGates"),
    }
