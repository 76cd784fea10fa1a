# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The launch gate: an init container of every launcher the operator makes (first start, after a restart, after a
resume; on every API) that waits until each worker of the hostfile resolves and its sshd answers, so that mpirun never
spends the launcher's retries racing workers whose image is still pulling or whose sshd is not listening yet.

It runs the operator's own image (`python3 -m mpijob_operator.gate`: any launcher image will do, with or without a
shell) and reads the hostfile the launcher reads. When the workers do not all answer within the job's timeout it
prints who did not and lets the launcher start anyway: the gate never fails a job that would have run without it.
A launcher that starts MPI with `kubectl exec` (no sshd) waits for the names only. docs/submit.md has the
annotations that tune it; docs/differences.md what it changes for Kubeflow's manifests.
"""

from __future__ import annotations

from . import constants as C
from .spec import MPIJob

# requests = limits: an init container counts in the pod's QoS class, and a Guaranteed launcher stays Guaranteed.
RESOURCES = {"cpu": "100m", "memory": "64Mi"}


def ssh_ports(job: MPIJob) -> tuple[int, ...]:
    """The ports the gate tries on each worker (any one answering will do): the job's ssh-port annotation, else what
    the worker's MPI container says (a tcpSocket readinessProbe's port, a port named `ssh`, sshd's `-p N`), else
    C.SSH_PORTS; none for a launcher that reaches its workers through `kubectl exec`."""
    if job.launch_agent == C.LAUNCH_KUBEXEC:
        return ()
    if job.directives.ssh_port is not None:
        return (job.directives.ssh_port,)
    spec = (job.worker.template.get("spec") if job.worker else None) or {}
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    named = [c for c in containers if job.main_container and c.get("name") == job.main_container]
    main = (named or containers or [{}])[0]
    probe = ((main.get("readinessProbe") or {}).get("tcpSocket") or {}).get("port")
    if isinstance(probe, int) and not isinstance(probe, bool):
        return (probe,)
    for port in main.get("ports") or []:
        if isinstance(port, dict) and port.get("name") == "ssh" and isinstance(port.get("containerPort"), int):
            return (port["containerPort"],)
    argv = [str(a) for key in ("command", "args") if isinstance(main.get(key), list) for a in main[key]]
    if any(a.endswith("sshd") for a in argv):
        for flag, value in zip(argv, argv[1:]):
            if flag == "-p" and value.isdigit():
                return (int(value),)
    return C.SSH_PORTS


def gate_container(job: MPIJob, image: str, launcher_host: str) -> dict | None:
    """The launcher's init container that holds it until its workers answer; None without an image (the operator
    was not given one), when the job turned the gate off, or when there is no worker to wait for."""
    if not image or not job.directives.launch_gate or job.worker_replicas == 0:
        return None
    args = ["--hostfile", C.HOSTFILE_PATH, "--timeout", str(job.directives.launch_gate_timeout)]
    for port in ssh_ports(job):
        args += ["--port", str(port)]
    if job.run_launcher_as_worker:
        args += ["--skip", launcher_host]  # its own sshd starts after the gate
    return {
        "name": C.LAUNCH_GATE_CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-m", "mpijob_operator.gate"],
        "args": args,
        "resources": {"requests": dict(RESOURCES), "limits": dict(RESOURCES)},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": C.CONFIG_VOLUME, "mountPath": C.CONFIG_MOUNT_PATH, "readOnly": True}],
    }
