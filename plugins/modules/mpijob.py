#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
module: mpijob
short_description: Submit, scale, suspend, wait for and delete kubeflow.org MPIJobs
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Creates or updates an MPIJob by server-side apply (field manager O(field_manager)) from a full manifest
    (O(definition), O(src) or O(template), C(kubeflow.org/v2beta1) or the legacy C(kubeflow.org/v1)), or from a
    short form (O(name), O(image), O(command), O(workers), ...) that becomes a C(kubeflow.org/v2beta1) MPIJob.
  - With only O(name) and O(workers) and/or O(suspend), scales or suspends/resumes an existing job; only those
    fields are patched, nothing else of the job is touched.
  - Reports C(changed) only when the job would differ (the comparison is the API server's own dry run, defaults
    included), so re-running the same task is a no-op.
  - Unknown fields are rejected by the API server (field validation C(Strict)), naming the field, e.g.
    C(unknown field "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.request").
  - With O(wait), waits until the job has finished (or is Running, or Suspended, see O(wait_for)) and fails the task
    when the job failed, with the reason and the last lines of the launcher's log in the message.
  - The MPI operator must be running for a job to make progress; this module only talks to the API server.
extends_documentation_fragment:
  - mpi.operator.auth
  - mpi.operator.wait
  - mpi.operator.api_version
options:
  state:
    description:
      - V(present) creates or updates the job; V(absent) deletes it, and the API server's garbage collector
        deletes its children (launcher Job, worker Pods, Service, ConfigMap, Secret) with it.
    type: str
    choices: [present, absent]
    default: present
  name:
    description:
      - Name of the MPIJob. Required unless O(definition) or O(src) names it; replaces the manifest's name (one
        manifest can run under several names).
    type: str
  namespace:
    description:
      - Namespace of the MPIJob. Used when the manifest names none (a different one is an error, as with
        C(kubectl apply -n)); V(default) when neither does.
    type: str
  definition:
    description:
      - The MPIJob, C(kubeflow.org/v2beta1) or C(kubeflow.org/v1), as a dict or as a YAML string (for example
        from a C(lookup)); a string may hold several documents, of which exactly one must be an MPIJob.
      - Mutually exclusive with O(src), O(template) and the short form options.
      - Unlike M(kubernetes.core.k8s), which applies every object of a list, this module takes one MPIJob.
    type: raw
    aliases: [resource_definition]
  src:
    description:
      - Path of a YAML file holding one MPIJob, as a document or an item of a C(List) (the other documents and items
        are ignored, apply them first).
      - On a local connection a relative path is looked up as M(kubernetes.core.k8s) looks it up (the role's
        C(files/), the playbook's C(files/), then the playbook's directory), then relative to the current directory,
        and last in this collection, so that its examples run from the installed collection
        (for example C(examples/v2beta1/pi.yaml)); otherwise it is read on the remote host.
    type: path
  template:
    description:
      - A Jinja2 template of the MPIJob, rendered on the controller with the task's variables and applied as
        O(definition). Looked up like M(ansible.builtin.template)'s C(src) (the role's C(templates/) first).
      - A path, or a dict with C(path) and optionally C(variable_start_string), C(variable_end_string),
        C(block_start_string), C(block_end_string), C(trim_blocks) and C(lstrip_blocks), as with
        M(kubernetes.core.k8s) (which also takes a list of templates; this module takes one).
      - Rendered by the module's action plugin; needs a local connection or delegation to the controller for
        the lookup of the file only, not for the API server.
    type: raw
  image:
    description:
      - Short form. The container image of the launcher and the workers. Setting it selects the short form.
    type: str
  command:
    description:
      - Short form. The launcher's command, e.g. V([mpirun, -n, "4", /opt/mpi/pi]). A string is split like a shell
        would split it. It becomes the container's C(args), so the image's entrypoint (if any) runs it.
      - The workers get no command, so the operator starts C(sshd) in them.
    type: raw
  workers:
    description:
      - Number of worker replicas. In the short form the default is 1.
      - With a manifest it overrides C(spec.mpiReplicaSpecs.Worker.replicas).
      - Alone (with O(name)), it scales an existing job by patching that one field.
    type: int
  slots_per_worker:
    description:
      - Short form. MPI slots (processes) per worker in the hostfile; 1 when not given.
    type: int
  resources:
    description:
      - "Short form. Resources of each worker container. Plain quantities (V({cpu: 1, memory: 2Gi})) are used as
        both requests and limits; V({requests: {...}, limits: {...}}) is taken as written."
    type: dict
  launcher_resources:
    description:
      - Short form. Resources of the launcher container, in the same forms as O(resources).
    type: dict
  mpi_implementation:
    description:
      - Short form. The MPI implementation of the image; V(OpenMPI) when not given.
    type: str
    choices: [OpenMPI, Intel, MPICH]
  env:
    description:
      - Short form. Environment variables of the launcher and worker containers.
    type: dict
  labels:
    description:
      - Short form. Labels of the MPIJob.
    type: dict
  queue_name:
    description:
      - The Kueue LocalQueue to submit the job to (its C(kueue.x-k8s.io/queue-name) label), with a manifest or the
        short form. Kueue then suspends the job until it admits it; O(wait) waits until it finished, and the progress
        lines say why it is still queued (docs/kueue.md).
    type: str
  priority_class:
    description:
      - The Kueue WorkloadPriorityClass of the job (its C(kueue.x-k8s.io/priority-class) label); with O(queue_name).
    type: str
  clean_pod_policy:
    description:
      - Short form. Which pods to delete when the job finishes; V(Running) when not given.
    type: str
    choices: [All, Running, None]
  suspend:
    description:
      - V(true) suspends the job (running pods are deleted, the launcher Job is suspended), V(false) resumes it.
      - With a manifest it overrides C(spec.runPolicy.suspend); alone (with O(name)) it patches that one field.
    type: bool
  force_conflicts:
    description:
      - Take over fields that another field manager owns instead of failing with a conflict (server-side apply
        with C(force=true)), as C(server_side_apply.force_conflicts) of M(kubernetes.core.k8s).
    type: bool
    default: false
  force:
    description:
      - Deprecated name of O(force_conflicts), which replaces it, because in M(kubernetes.core.k8s) C(force) means
        something else (replace the object instead of patching it). Still works, with a deprecation warning.
    type: bool
  field_manager:
    description:
      - The field manager of the server-side apply, as C(server_side_apply.field_manager) of
        M(kubernetes.core.k8s). O(workers) and O(suspend) alone patch as C(<field_manager>-patch).
    type: str
    default: mpi.operator
  wait:
    description:
      - Wait until the job reaches O(wait_for); with O(state=absent), until the job and its children are gone.
    type: bool
    default: false
  # wait_for, wait_timeout and wait_sleep (what O(wait) waits for, and how) are the mpi.operator.wait fragment's
  fail_on_job_failure:
    description:
      - Fail the task when the waited-for job failed. With V(false) the task succeeds and RV(summary.phase) says
        V(Failed).
    type: bool
    default: true
  log_lines:
    description:
      - How many of the last lines of the launcher's log to return (and to show when the job failed); V(0) returns
        none.
    type: int
    default: 20
attributes:
  check_mode:
    support: full
    description: Every write is sent as a server-side dry run; the result shows the job as it would be.
  diff_mode:
    support: full
    description: Returns the job before and after (without status and server bookkeeping such as managedFields).
  idempotent:
    support: full
    description: C(changed) only when the job's metadata or spec would change.
notes:
  - A field that another field manager changed since the last apply (C(kubectl scale), C(kubectl patch), an
    autoscaler) is a conflict. The task fails naming the field and the manager unless O(force_conflicts) is set; in check
    mode it shows the drift as a diff and warns instead.
  - Simulated pods (the local kwok cluster) and some kubelets serve no logs; RV(launcher_log) is then empty and
    RV(launcher_log_note) says why.
  - O(workers) and O(suspend) alone patch as field manager C(mpi.operator-patch), so re-applying a manifest that
    says otherwise is such a conflict, by design (the manifest and the cluster disagree).
  - Options shared with M(kubernetes.core.k8s) have its meaning; the differences on purpose are listed, option by
    option, in C(docs/kubernetes-core.md) of the collection.
seealso:
  - module: mpi.operator.mpijob_info
"""

EXAMPLES = r"""
- name: Run the pi example from a file, wait for it, fail when it fails
  mpi.operator.mpijob:
    src: examples/v2beta1/pi.yaml
    namespace: default
    wait: true
    wait_timeout: 900
  register: pi

- name: Show how it went
  ansible.builtin.debug:
    msg: "{{ pi.summary.progress }}: {{ pi.launcher_log | join('\n') }}"

- name: The same without writing a manifest (the short form)
  mpi.operator.mpijob:
    name: pi
    namespace: default
    image: mpioperator/mpi-pi:openmpi
    command: mpirun --allow-run-as-root -n 4 /home/mpiuser/pi
    workers: 2
    slots_per_worker: 2
    resources: {cpu: 1, memory: 1Gi}

- name: Submit an inline manifest and only wait until it runs
  mpi.operator.mpijob:
    definition:
      apiVersion: kubeflow.org/v2beta1
      kind: MPIJob
      metadata: {name: hello, namespace: default}
      spec:
        mpiReplicaSpecs:
          Launcher:
            replicas: 1
            template:
              spec:
                containers: [{name: launcher, image: mpioperator/mpi-pi:openmpi, command: [mpirun, hostname]}]
          Worker:
            replicas: 2
            template:
              spec:
                containers: [{name: worker, image: mpioperator/mpi-pi:openmpi}]
    wait: true
    wait_for: Running

- name: Scale a running elastic job to 3 workers
  mpi.operator.mpijob:
    name: tensorflow-mnist-elastic
    namespace: default
    workers: 3

- name: Suspend a job (its pods go away), then resume it
  mpi.operator.mpijob:
    name: pi
    namespace: default
    suspend: "{{ item }}"
  loop: [true, false]

- name: Know whether the job would change (a GitOps drift check), without changing it
  mpi.operator.mpijob:
    src: examples/v2beta1/pi.yaml
  check_mode: true
  diff: true
  register: drift

- name: Delete the job and its children, and wait until they are gone
  mpi.operator.mpijob:
    name: pi
    namespace: default
    state: absent
    wait: true
"""

RETURN = r"""
result:
  description: The MPIJob as the API server has it after the task (in check mode, as it would be); null when absent.
  returned: always
  type: dict
  sample: {apiVersion: kubeflow.org/v2beta1, kind: MPIJob, metadata: {name: pi, namespace: default}, spec: {}, status: {}}
conditions:
  description: The job's status conditions (Created, Running, Suspended, Succeeded, Failed).
  returned: always
  type: list
  elements: dict
  sample: [{type: Created, status: "True", reason: MPIJobCreated, message: MPIJob default/pi is created.}]
summary:
  description: The job's status at a glance; null when the job does not exist.
  returned: always
  type: dict
  contains:
    name:
      description: Name of the job.
      type: str
    namespace:
      description: Namespace of the job.
      type: str
    phase:
      description: From the conditions, V(Pending) (no condition yet), V(Created), V(Running), V(Suspended),
        V(Succeeded) or V(Failed).
      type: str
      sample: Running
    reason:
      description: Reason of the condition that gave the phase.
      type: str
      sample: MPIJobRunning
    message:
      description: Message of the condition that gave the phase.
      type: str
    workers:
      description: Desired worker replicas.
      type: int
    workers_running:
      description: Worker pods running (C(status.replicaStatuses.Worker.active)).
      type: int
    workers_failed:
      description: Worker pods failed.
      type: int
    launcher_active:
      description: Launcher pods running.
      type: int
    launcher_failed:
      description: Launcher pods failed (retries count).
      type: int
    suspended:
      description: Whether C(spec.runPolicy.suspend) is set.
      type: bool
    start_time:
      description: C(status.startTime).
      type: str
    completion_time:
      description: C(status.completionTime).
      type: str
    elapsed_seconds:
      description: Seconds since the job was created (until it finished, for a finished job).
      type: int
    finished:
      description: Whether the job Succeeded or Failed.
      type: bool
    queue:
      description: The Kueue LocalQueue of the job (its C(kueue.x-k8s.io/queue-name) label); empty when none.
      type: str
    queued:
      description:
        - For a job that waits for Kueue (in a queue, suspended, not finished), why it waits, from its Workload's
          conditions, for example C(QuotaReserved Pending - couldn't assign flavors ...); empty otherwise.
      type: str
    restarts:
      description: World restarts of a job with a failure policy so far (C(status.restartCount)); 0 without one.
      type: int
    restarts_by_cause:
      description: Its restarts (and replaced workers) by cause, C(program) and C(disruption) (C(status.restarts)).
      type: dict
      sample: {program: 1, disruption: 0}
    restarting:
      description: While the job's world restarts, why (the pod, its node, its exit code or condition); empty otherwise.
      type: str
    waiting:
      description:
        - "While some of the job's pods do not run for a reason the user must act on, which pods and why, for example
          C(pi-worker-0 unschedulable: 0/5 nodes are available: 5 Insufficient cpu) or
          C(pi-worker-1 ImagePullBackOff: Back-off pulling image ...) (read only while not every worker runs); empty
          otherwise. The progress line ends with it."
      type: str
    progress:
      description: One line for humans.
      type: str
      sample: "default/pi: Running, workers 2/2 running, 14s elapsed"
launcher:
  description: The newest launcher pod and how it ended.
  returned: always
  type: dict
  contains:
    pod:
      description: Name of the newest launcher pod; empty when there is none.
      type: str
    exit:
      description: How its MPI container ended, or why the pod failed; empty while it runs.
      type: str
      sample: "Error, exit code 3"
    log:
      description: The same as RV(launcher_log).
      type: list
      elements: str
    note:
      description: The same as RV(launcher_log_note).
      type: str
launcher_log:
  description: The last O(log_lines) lines of the newest launcher pod's log.
  returned: always
  type: list
  elements: str
  sample: ["Rank 0 on host pi-worker-0", "pi is approximately 3.1410034896"]
launcher_log_note:
  description: Why RV(launcher_log) is empty (no launcher pod yet, the kubelet serves no logs, ...); empty otherwise.
  returned: always
  type: str
method:
  description: What was done, V(created), V(applied), V(patched), V(deleted) or V(unchanged).
  returned: always
  type: str
diff:
  description: The job before and after, without status and server bookkeeping.
  returned: when diff mode is on and something changed
  type: dict
  contains:
    before:
      description: The job before the task; empty when it did not exist.
      type: dict
    after:
      description: The job after the task; empty when deleted.
      type: dict
api_calls:
  description: Number of API requests made.
  returned: always
  type: int
"""

from ..module_utils.kube.auth import AUTH_ARG_SPEC  # noqa: E402
from ..module_utils.kube.jobs import FIELD_MANAGER, WAIT_ARG_SPEC, Jobs  # noqa: E402
from ..module_utils.kube.module import run_module  # noqa: E402
from ..module_utils.kube.mpijob_task import Run  # noqa: E402
from ..module_utils.kube.rest import Rest  # noqa: E402
from ..module_utils.mpijob import constants as C  # noqa: E402


def argspec() -> dict:
    spec = dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        name=dict(type="str"),
        namespace=dict(type="str"),
        definition=dict(type="raw", aliases=["resource_definition"]),
        src=dict(type="path"),
        template=dict(type="raw"),
        image=dict(type="str"),
        command=dict(type="raw"),
        workers=dict(type="int"),
        api_version=dict(type="str", aliases=["apiVersion"]),
        slots_per_worker=dict(type="int"),
        resources=dict(type="dict"),
        launcher_resources=dict(type="dict"),
        mpi_implementation=dict(type="str", choices=list(C.MPI_IMPLEMENTATIONS)),
        env=dict(type="dict"),
        labels=dict(type="dict"),
        queue_name=dict(type="str"),
        priority_class=dict(type="str"),
        clean_pod_policy=dict(type="str", choices=list(C.CLEAN_POD_POLICIES)),
        suspend=dict(type="bool"),
        force_conflicts=dict(type="bool", default=False),
        force=dict(type="bool", removed_in_version="1.0.0", removed_from_collection="mpi.operator"),
        field_manager=dict(type="str", default=FIELD_MANAGER),
        wait=dict(type="bool", default=False),
        fail_on_job_failure=dict(type="bool", default=True),
        log_lines=dict(type="int", default=20),
    )
    spec.update({k: dict(v) for k, v in WAIT_ARG_SPEC.items()})
    spec.update({k: dict(v) for k, v in AUTH_ARG_SPEC.items()})
    return spec


def task(module, rest: Rest) -> dict:
    jobs = Jobs(rest, module.check_mode, module.params["field_manager"])
    return Run(module.params, jobs, module.check_mode, module._diff, module.warn)()


def main() -> None:
    run_module(argspec(), task, mutually_exclusive=[("definition", "src", "template")], supports_check_mode=True)


if __name__ == "__main__":
    main()
