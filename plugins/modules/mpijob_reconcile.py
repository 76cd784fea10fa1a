#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
module: mpijob_reconcile
short_description: Reconcile a batch of MPIJobs (one step of the MPI operator)
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Reads each named MPIJob and its children, computes what the Kubeflow MPI Operator would create for it
    (headless Service, ConfigMap with the hostfile and C(discover_hosts.sh), SSH Secret, worker Pods, launcher
    batch/v1 Job, optional PodGroup) and carries out the difference, then writes the MPIJob status.
  - Names, labels, env vars, mounts, conditions and reasons match the Kubeflow MPI Operator v2beta1 contract; the
    differences (fixed Kubeflow bugs) are listed in C(docs/differences.md) of the collection.
  - Idempotent; a job that needs nothing gets no API write. Status is written only when it changed.
  - One job's failure never fails the others; each job reports its own C(error) and C(retry).
  - The module fails only on bad arguments or when the API server cannot be reached.
extends_documentation_fragment:
  - mpi.operator.auth
options:
  jobs:
    description:
      - The MPIJobs to reconcile.
      - Exactly one of O(jobs) and O(batch_from) is required.
    type: list
    elements: dict
    suboptions:
      namespace:
        description: Namespace of the MPIJob.
        type: str
        required: true
      name:
        description: Name of the MPIJob.
        type: str
        required: true
      api_version:
        description:
          - The job's API when it is not C(kubeflow.org) (whose C(v2beta1) and C(v1) jobs are both read as
            C(v2beta1)), for example C(batch.tensorstack.dev/v1beta1) or C(batch.test.bdap.com/v1). One batch may mix
            the APIs.
        type: str
  batch_from:
    description:
      - For a warm run (the operator's), the path of a unix socket the caller listens on. The module starts and
        serves batches there, O(batch_slots) at a time. Each slot connects, waits for a batch (a JSON object with
        O(jobs); an entry may hold the job's objects as the caller watched them, C(seen), which are then planned from
        instead of read), acknowledges it, reconciles it and writes the batch's result (the RV(jobs) of that batch, with
        C(changed) and C(api_calls)) back on the same connection, then connects again. So the start of ansible and of
        the module is paid once for all the batches of O(batch_timeout) seconds, not once for each.
      - It stops taking batches after O(batch_timeout) seconds, or when the caller closes the socket, finishes the
        ones it holds and returns RV(batches); its own RV(jobs) is then empty (each batch's went back on the socket).
    type: path
  batch_timeout:
    description: Seconds a warm run (O(batch_from)) takes batches for.
    type: float
    default: 300
  batch_slots:
    description: How many batches a warm run (O(batch_from)) reconciles at a time (the operator's C(--threadiness)).
    type: int
    default: 1
  cleanup_later:
    description:
      - Leave the clean-up of a job that finishes in this call (its C(cleanPodPolicy) deletions, its PodGroup) to a
        later call. This call writes the job's status and events, and the job's entry says RV(jobs[].cleanup_pending);
        the next reconcile of the job does the clean-up. The operator sets it, and reconciles those jobs once no other
        job waits for its status, so that in a burst the outcomes are not held back by the deletions.
      - Off, a job's clean-up is done in the same call, right after its status is written.
    type: bool
    default: false
  progress_every:
    description:
      - For a warm run (O(batch_from)), the seconds it may hold back a status write that only counts pods coming up (a
        replica's C(active) count grew, nothing else changed), and the workers' C(discover_hosts.sh) with it. The
        job's RV(jobs[].requeue_after) then says when it is written, and workers coming up one by one cost one write
        instead of one each. Conditions, and every other change, are written at once.
      - V(0) writes it at once; so does a call without O(batch_from), which keeps nothing between calls.
    type: float
    default: 0
  gang_scheduling:
    description:
      - Gang scheduling backend, like the Kubeflow operator's C(--gang-scheduling) flag.
      - C(volcano) creates Volcano PodGroups; any other non-empty value is the scheduler name of the
        scheduler-plugins coscheduling plugin; empty disables gang scheduling.
    type: str
    default: ""
  cluster_domain:
    description:
      - Cluster domain appended to the hostfile FQDNs (C(<pod>.<job>.<namespace>.svc.<domain>)), like the
        Kubeflow operator's C(--cluster-domain) flag. Empty leaves the names ending in C(.svc).
    type: str
    default: ""
  kubectl_delivery_image:
    description:
      - For jobs whose launcher starts MPI with C(kubectl exec) (docs/apis.md), an image whose entrypoint
        copies C(kubectl) into the directory its argument names (as the original operator's kubectl-delivery image
        did); the launcher runs C(/opt/kube/kubectl). Empty means C(kubectl) is in the launcher's own image.
    type: str
    default: ""
  launch_gate_image:
    description:
      - The operator's own image. Every launcher made then gets an init container from it that waits until each
        worker of the hostfile resolves and its sshd answers (C(python3 -m mpijob_operator.gate)), so that mpirun
        does not race workers still pulling their image or starting sshd. A job turns it off with the annotation
        C(mpi.operator/launch-gate=false) (docs/submit.md).
      - Empty means no launch gate.
    type: str
    default: ""
  record_lines:
    description:
      - Lines of each pod's log the record of a job keeps (docs/operations.md), the last ones. The record is kept
        in ConfigMap C(<job>-record) before the operator deletes pods and when a job fails.
    type: int
    default: 50
  record_pod_bytes:
    description:
      - Bytes of each pod's log the record keeps at most, as a quantity (V(8Ki), V(8192)); V(0) keeps no log.
    type: str
    default: 8Ki
  record_total_bytes:
    description:
      - Bytes of a job's whole record at most (its summary, events and logs), as a quantity; from 16Ki plus
        O(record_pod_bytes) to 900Ki.
    type: str
    default: 64Ki
  accelerators:
    description:
      - Extended resources (a device plugin's C(<domain>/<name>)) besides C(nvidia.com/gpu) whose count per worker the
        job's slots are checked against. A job whose workers request them with other slots per worker gets a
        Warning event C(SlotsDifferFromAccelerators) and its first condition says so; the annotation
        C(mpi.operator/slots-from-accelerators=true) makes the slots the count (docs/submit.md). A name that is not
        an extended resource is refused.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Returns the plan (the actions that would be taken) and changes nothing.
  diff_mode:
    support: none
    description: The result lists the actions taken per job; there is no before/after diff.
  idempotent:
    support: full
    description: A job that needs nothing gets no API write; status is written only when it changed.
notes:
  - SSH keys (ECDSA P-521) are generated only when a job's Secret must be created and never appear in the output.
"""

EXAMPLES = r"""
- name: Reconcile two MPIJobs
  mpi.operator.mpijob_reconcile:
    jobs:
      - {namespace: team-a, name: pi}
      - {namespace: team-b, name: allreduce}
      - {namespace: team-b, name: random-walk, api_version: batch.tensorstack.dev/v1beta1}

- name: A warm run, as the operator starts one ahead of need (it listens on the socket and hands the batch over)
  mpi.operator.mpijob_reconcile:
    batch_from: /var/run/mpi-operator/warm-0.sock
    batch_timeout: 300

- name: Show what would be done for a job, with Volcano gang scheduling
  mpi.operator.mpijob_reconcile:
    jobs: [{namespace: default, name: pi}]
    gang_scheduling: volcano
    kubeconfig: ~/.kube/config
  check_mode: true
  register: plan
"""

RETURN = r"""
jobs:
  description: One entry per input job, in the input order.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: Namespace of the job.
      type: str
    name:
      description: Name of the job.
      type: str
    uid:
      description: UID of the MPIJob, null when it does not exist.
      type: str
    actions:
      description: What was done (in check mode, what would be done), in order.
      type: list
      elements: dict
      sample: [{action: create, kind: Pod, name: pi-worker-0}, {action: status, kind: MPIJob, name: pi}]
    status:
      description: The MPIJob status after this reconcile; null when the job is gone.
      type: dict
    finished:
      description: The job has finished (its C(Succeeded) or C(Failed) condition is C(True)), as this reconcile decided.
      type: bool
    transitions:
      description:
        - The conditions whose status this reconcile changed (or that it added), as written to the MPIJob status; in
          check mode, as they would be written. A change of reason or message alone is not a transition.
      type: list
      elements: dict
      sample: [{type: Created, status: "True", reason: MPIJobCreated}]
      contains:
        type:
          description: The condition type (C(Created), C(Running), C(Restarting), C(Suspended), C(Succeeded), C(Failed)).
          type: str
        status:
          description: Its new status, C(True) or C(False).
          type: str
        reason:
          description: Its reason (e.g. C(MPIJobSucceeded), C(ValidationError)).
          type: str
    error:
      description: Why the job could not be fully reconciled (e.g. a validation error naming the field); null if none.
      type: str
    retry:
      description: A transient failure; the caller should back off and reconcile the job again.
      type: bool
    requeue_after:
      description: Seconds after which the job needs another reconcile (TTL or active deadline); null if none.
      type: float
    deleted:
      description: The MPIJob does not exist any more (gone, or deleted by its ttlSecondsAfterFinished).
      type: bool
    api_version:
      description: The job's API, as given (absent for C(kubeflow.org)).
      type: str
      returned: when given
    cleanup_pending:
      description: The job finished in this call and its clean-up is left to its next reconcile (O(cleanup_later)).
      type: bool
    outcome:
      description:
        - How this reconcile of the job ended, in one word, what its caller does next; RV(jobs[].retry) and
          RV(jobs[].deleted) say two of them.
        - V(ok) reconciled (come back after RV(jobs[].requeue_after), or when the job changes), V(retry) a transient
          failure (back off and reconcile again), V(error) an error a retry cannot fix, such as an invalid spec (come
          back when the job changes), V(deleted) the MPIJob is gone.
      type: str
      choices: [ok, retry, error, deleted]
    restart:
      description:
        - The restart whose status this call wrote, for a job with a failure policy (what the operator's restart
          metric counts).
      type: dict
      returned: when a restart was written
      sample: {cause: disruption, scope: world}
      contains:
        cause:
          description: C(program) (counted against C(maxRestarts)) or C(disruption) (against C(maxDisruptionRestarts)).
          type: str
        scope:
          description: C(world) (every pod and the launcher made again) or C(worker) (one worker of an elastic job
            replaced).
          type: str
    read_version:
      description: The MPIJob's C(metadata.resourceVersion) this call planned from.
      type: str
      returned: when the status was written
    resource_version:
      description: The MPIJob's C(metadata.resourceVersion) after this call wrote its status.
      type: str
      returned: when the status was written
batch:
  description: How the jobs came, C(args) (O(jobs)) or C(served) (a warm run's batches, O(batch_from)).
  returned: always
  type: str
batches:
  description: The number of batches a warm run (O(batch_from)) served.
  returned: when O(batch_from) is given
  type: int
api_calls:
  description: Number of API requests this call made.
  returned: always
  type: int
"""

import time  # noqa: E402

from ..module_utils.kube.auth import AUTH_ARG_SPEC  # noqa: E402
from ..module_utils.kube.module import run_module, task_message  # noqa: E402
from ..module_utils.kube.reconcile import Held, reconcile_batch  # noqa: E402
from ..module_utils.kube.rest import Rest  # noqa: E402
from ..module_utils.mpijob import constants as C  # noqa: E402
from ..module_utils.mpijob.accelerators import names  # noqa: E402
from ..module_utils.mpijob.apis import storage_api_version  # noqa: E402
from ..module_utils.mpijob.children import Options  # noqa: E402
from ..module_utils.mpijob.errors import MPIJobError  # noqa: E402
from ..module_utils.mpijob.record import parse_limits  # noqa: E402
from ..module_utils.warm import serve_batches  # noqa: E402


def argspec() -> dict:
    spec = dict(
        jobs=dict(
            type="list",
            elements="dict",
            options=dict(
                namespace=dict(type="str", required=True),
                name=dict(type="str", required=True),
                api_version=dict(type="str"),
            ),
        ),
        gang_scheduling=dict(type="str", default=""),
        cluster_domain=dict(type="str", default=""),
        kubectl_delivery_image=dict(type="str", default=""),
        launch_gate_image=dict(type="str", default=""),
        record_lines=dict(type="int", default=C.RECORD_LINES),
        record_pod_bytes=dict(type="str", default="8Ki"),
        record_total_bytes=dict(type="str", default="64Ki"),
        accelerators=dict(type="list", elements="str", default=[]),
        batch_from=dict(type="path"),
        batch_timeout=dict(type="float", default=300.0),
        batch_slots=dict(type="int", default=1),
        cleanup_later=dict(type="bool", default=False),
        progress_every=dict(type="float", default=0.0),
    )
    spec.update({k: dict(v) for k, v in AUTH_ARG_SPEC.items()})
    return spec


def task(module, rest: Rest) -> dict:
    if not module.params["batch_from"]:
        return dict(reconcile_jobs(module, rest, module.params["jobs"]), batch="args")
    started = time.monotonic()
    warm_up()
    changed = []
    held = Held()  # the progress writes this run holds back, across its batches (O(progress_every))

    def handle(batch: list[dict]) -> dict:
        """One served batch's result: what a run of its own would return (its failure too); never raises."""
        own = Rest(rest.transport, rest.timeout)  # its own api_calls
        try:
            jobs = [{k: str(j[k]) for k in ("namespace", "name", "api_version") if j.get(k)} for j in batch]
            for job, entry in zip(jobs, batch):
                if isinstance(entry.get("seen"), dict):  # the job's world as the operator watched it
                    job["seen"] = entry["seen"]
            result = reconcile_jobs(module, own, jobs, held)
        except MPIJobError as exc:
            return {**exc.result, "failed": True, "msg": task_message(exc), "api_calls": own.calls}
        except Exception as exc:  # a bug costs this batch (retried), not the run's other batches
            return {"failed": True, "msg": f"internal error reconciling the batch: {exc!r}", "api_calls": own.calls}
        changed.append(result["changed"])
        return dict(result, api_calls=own.calls)

    served = serve_batches(
        module.params["batch_from"], module.params["batch_slots"], started + module.params["batch_timeout"], handle
    )
    return {"changed": any(changed), "jobs": [], "batch": "served", "batches": served}


def reconcile_jobs(module, rest: Rest, batch: list[dict], held: Held | None = None) -> dict:
    for i, job in enumerate(batch):
        if job.get("api_version"):
            try:
                storage_api_version(job["api_version"])
            except ValueError as exc:
                raise MPIJobError(f"jobs[{i}].api_version: {exc}") from exc
    p = module.params
    try:
        limits = parse_limits(
            p["record_lines"],
            p["record_pod_bytes"],
            p["record_total_bytes"],
            ("record_lines", "record_pod_bytes", "record_total_bytes"),
        )
        accelerators = names(p["accelerators"], "accelerators")
    except ValueError as exc:
        raise MPIJobError(str(exc)) from exc
    opts = Options(
        cluster_domain=module.params["cluster_domain"].strip("."),
        gang_scheduling=module.params["gang_scheduling"],
        kubectl_delivery_image=module.params["kubectl_delivery_image"],
        launch_gate_image=module.params["launch_gate_image"],
        record_lines=limits.lines,
        record_pod_bytes=limits.pod_bytes,
        record_total_bytes=limits.total_bytes,
        accelerators=accelerators,
        cleanup_later=module.params["cleanup_later"],
        progress_every=max(0.0, module.params["progress_every"]),
    )
    results = reconcile_batch(rest, batch, opts, check_mode=module.check_mode, held=held)
    jobs = [r.as_dict() for r in results]
    changed = any(a["action"] != "event" for j in jobs for a in j["actions"])
    return {"changed": changed, "jobs": jobs}


def warm_up() -> None:
    """What a warm run pays before its batch: the imports the first new job needs (its SSH keys)."""
    from cryptography.hazmat.primitives import serialization  # noqa: F401
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: F401


def main() -> None:
    run_module(
        argspec(),
        task,
        supports_check_mode=True,
        required_one_of=[("jobs", "batch_from")],
        mutually_exclusive=[("jobs", "batch_from")],
    )


if __name__ == "__main__":
    main()
