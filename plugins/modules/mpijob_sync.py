#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
module: mpijob_sync
short_description: Sync a directory of MPIJob manifests as one set, pruning the jobs removed from it
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - GitOps for MPIJobs. Applies every MPIJob of the files in O(src) by server-side apply, each labelled
    C(mpi.operator/sync-source=<source>), and prunes the jobs carrying that label that the files no longer declare, so
    the cluster follows the directory as a whole, as Argo CD or Flux do for their applications.
  - Manifests of every MPIJob API served here are taken (C(kubeflow.org/v2beta1) and C(v1), and the opt-in
    C(batch.tensorstack.dev/v1beta1) and C(batch.test.bdap.com/v1)). C(kubeflow.org/v1) and C(v2beta1) manifests of
    the same name are the same job.
  - Only jobs that have finished are pruned, unless O(prune_unfinished) is set; a job without the source's label is
    never pruned. Nothing is pruned when a file could not be read (which jobs it still declares is unknown), when
    the source's jobs could not be listed, or when the set is empty (unless O(allow_empty)).
  - One bad manifest hides nothing. Every other job is still applied, each file's result is returned (RV(files)),
    and the task fails at the end naming each invalid document (with its field) and each conflict.
  - Like M(mpi.operator.mpijob), each job is compared by the API server's own dry run first, so C(changed) only when
    something would change, and a second run with no change in the files changes nothing.
extends_documentation_fragment:
  - mpi.operator.auth
  - mpi.operator.wait
options:
  source:
    description:
      - The name of the set, the value of the C(mpi.operator/sync-source) label of its jobs (1-63 letters, digits,
        C(-), C(_), C(.)). Two syncs with different sources never touch each other's jobs.
      - A manifest that already carries the label with another value is refused.
    type: str
    required: true
  src:
    description:
      - Files, directories and globs of manifests. A directory gives its C(*.yaml), C(*.yml) and C(*.json) files
        (hidden ones skipped); a glob must match at least one file, and a path must exist, or the task fails and
        prunes nothing.
      - On a local connection a relative path is looked up as O(mpi.operator.mpijob#module:src) is (the role's
        C(files/), the playbook's C(files/), then the playbook's directory) and a relative glob is taken from the
        playbook's directory; otherwise paths are read on the host the module runs on.
      - A file may hold several documents; every document must be an MPIJob.
    type: list
    elements: str
    required: true
  recursive:
    description:
      - Take the files of subdirectories too (hidden directories such as C(.git) are skipped), and let C(**) in a
        glob match across directories.
    type: bool
    default: false
  namespace:
    description:
      - The namespace of manifests that name none. When given, the sync is limited to it. A manifest naming another
        namespace is refused, and only jobs in it are pruned (so a Role in that namespace is enough).
      - Without it, jobs are listed in every namespace to find the ones to prune.
    type: str
  prune:
    description:
      - Delete the source's jobs that the files no longer declare (finished ones; see O(prune_unfinished)).
    type: bool
    default: true
  prune_unfinished:
    description:
      - Also prune jobs that have not finished (pending, running or suspended). Their pods are deleted with them.
    type: bool
    default: false
    aliases: [prune_running]
  allow_empty:
    description:
      - Let a source that declares no MPIJob at all prune every job of the source. Without it an empty directory
        (a bad checkout, a wrong path) prunes nothing and the task warns.
    type: bool
    default: false
  force_conflicts:
    description:
      - Take over fields that another field manager owns (C(kubectl scale), the O(mpi.operator.mpijob#module:workers)
        option) instead of reporting a conflict for that job.
    type: bool
    default: false
  field_manager:
    description:
      - The field manager of the server-side apply.
    type: str
    default: mpi.operator
  wait:
    description:
      - Wait until every job of the set reaches O(wait_for) (V(Succeeded) when not given, which is finished either way).
    type: bool
    default: false
  # wait_for, wait_timeout and wait_sleep are the mpi.operator.wait fragment's, but for these
  wait_for:
    choices: [Succeeded, Running]
  wait_sleep:
    default: 5
  fail_on_job_failure:
    description:
      - With O(wait), fail the task when a job of the set failed.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Every write is a server-side dry run; the result is the plan (RV(plan), RV(summary)).
  diff_mode:
    support: full
    description: Returns each created, updated and pruned job before and after.
  idempotent:
    support: full
    description: A second run with the same files changes nothing.
notes:
  - The files are read where the module runs. In a GitOps run (C(ansible-pull), an AWX project sync) that is the
    checkout on the controller, with C(hosts=localhost) and C(connection=local) in the play.
  - Pruning needs C(list) and C(delete) on MPIJobs in every namespace, or in O(namespace) when it is given.
seealso:
  - module: mpi.operator.mpijob
  - module: mpi.operator.mpijob_info
"""

EXAMPLES = r"""
- name: The cluster follows jobs/ of this repository (run by ansible-pull or an AWX schedule)
  mpi.operator.mpijob_sync:
    source: research-jobs
    src: jobs/
    namespace: research

- name: What a sync would do, without doing it
  mpi.operator.mpijob_sync:
    source: research-jobs
    src: jobs/
    namespace: research
  check_mode: true
  diff: true
  register: plan

- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ plan.summary }}"

- name: Several globs, running jobs pruned too, then wait until every job of the set has finished
  mpi.operator.mpijob_sync:
    source: nightly
    src: ["benchmarks/*.yaml", "smoke/**/*.yml"]
    recursive: true
    prune_unfinished: true
    wait: true
    wait_timeout: 7200
"""

RETURN = r"""
summary:
  description: The plan in one line.
  returned: always
  type: str
  sample: create 1, update 1, prune 1, unchanged 2, kept 1, conflict 0, invalid 1
plan:
  description: What the sync did (in check mode, would do), job by job (C(namespace/name), with the API group when it
    is not C(kubeflow.org)).
  returned: always
  type: dict
  contains:
    created:
      description: Jobs created.
      type: list
      elements: str
    updated:
      description: Jobs whose spec or metadata changed.
      type: list
      elements: str
    pruned:
      description: Jobs deleted because the files no longer declare them.
      type: list
      elements: str
    unchanged:
      description: Jobs already as declared.
      type: list
      elements: str
    kept:
      description: Jobs no longer declared but not pruned, each with C(job), C(phase) and C(why).
      type: list
      elements: dict
    conflicts:
      description: Jobs not applied because another field manager owns fields the file sets, each with C(job),
        C(file) and C(message) (which names the fields and the manager).
      type: list
      elements: dict
    invalid:
      description: Documents refused, each with C(file) and C(message) (naming the field).
      type: list
      elements: dict
files:
  description: Each file's result, the worst of its documents' (C(invalid), C(conflict), C(created), C(updated),
    C(unchanged)), with its jobs and messages.
  returned: always
  type: list
  elements: dict
  sample: [{file: jobs/pi.yaml, result: created, jobs: [research/pi], messages: []}]
jobs:
  description: The status summary of every job of the set (as RV(mpi.operator.mpijob#module:summary)).
  returned: always
  type: list
  elements: dict
progress:
  description: With O(wait), the set's phases in one line.
  returned: when O(wait) is set
  type: str
  sample: "3 jobs: 2 Succeeded, 1 Failed"
diff:
  description: Each created, updated or pruned job before and after (without status and server bookkeeping).
  returned: when diff mode is on and something changed
  type: list
  elements: dict
api_calls:
  description: Number of API requests made.
  returned: always
  type: int
"""

from ..module_utils.kube.auth import AUTH_ARG_SPEC  # noqa: E402
from ..module_utils.kube.jobs import FIELD_MANAGER, WAIT_ARG_SPEC, Jobs  # noqa: E402
from ..module_utils.kube.module import run_module  # noqa: E402
from ..module_utils.kube.mpijob_sync_task import Sync  # noqa: E402
from ..module_utils.kube.rest import Rest  # noqa: E402
from ..module_utils.mpijob import constants as C  # noqa: E402


def argspec() -> dict:
    spec = dict(
        source=dict(type="str", required=True),
        src=dict(type="list", elements="str", required=True),
        recursive=dict(type="bool", default=False),
        namespace=dict(type="str"),
        prune=dict(type="bool", default=True),
        prune_unfinished=dict(type="bool", default=False, aliases=["prune_running"]),
        allow_empty=dict(type="bool", default=False),
        force_conflicts=dict(type="bool", default=False),
        field_manager=dict(type="str", default=FIELD_MANAGER),
        wait=dict(type="bool", default=False),
        fail_on_job_failure=dict(type="bool", default=True),
    )
    spec.update({k: dict(v) for k, v in WAIT_ARG_SPEC.items()})
    spec["wait_for"]["choices"] = [C.SUCCEEDED, C.RUNNING]  # a set of jobs is not waited for until suspended
    spec["wait_sleep"]["default"] = 5
    spec.update({k: dict(v) for k, v in AUTH_ARG_SPEC.items()})
    return spec


def task(module, rest: Rest) -> dict:
    jobs = Jobs(rest, module.check_mode, module.params["field_manager"])
    return Sync(module.params, jobs, module.check_mode, module._diff, module.warn)()


def main() -> None:
    run_module(argspec(), task, supports_check_mode=True)


if __name__ == "__main__":
    main()
