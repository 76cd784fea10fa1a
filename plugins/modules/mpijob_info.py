#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
module: mpijob_info
short_description: Status, launcher logs and events of MPIJobs (kubeflow.org, T9k, bdap)
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Reads one MPIJob (O(name)) or a list (by O(namespace) and O(label_selectors)) and returns each with a status
    summary (phase, workers running, elapsed time), optionally the launcher's log and the job's recent events.
  - Never changes anything.
  - Without O(api_version), the jobs of every MPIJob API the cluster serves (kubeflow.org, and T9k's and the
    kubebuilder operator's when their CRDs are installed), each summarised by its own API's phase.
extends_documentation_fragment:
  - mpi.operator.auth
  - mpi.operator.attributes_readonly
  - mpi.operator.api_version
options:
  name:
    description:
      - Name of one MPIJob. Without it, every MPIJob of O(namespace) (of all namespaces when O(namespace) is not
        given) that matches O(label_selectors).
    type: str
  namespace:
    description:
      - Namespace of the jobs. With O(name), V(default) when not given.
    type: str
  label_selectors:
    description:
      - Label selectors the jobs must match, e.g. V(team=ml) or V(tier in (batch, train)); all must match.
    type: list
    elements: str
    default: []
  launcher_log:
    description:
      - V(tail) returns the last O(log_lines) lines of each job's launcher log, V(all) the whole log, V(none) no log.
    type: str
    choices: [none, tail, all]
    default: none
  log_lines:
    description:
      - Lines of the launcher log to return with O(launcher_log=tail).
    type: int
    default: 20
  events:
    description:
      - Return the jobs' recent events (the operator's Created, Running, Succeeded, Failed, ... events).
    type: bool
    default: false
notes:
  - Simulated pods (the local kwok cluster) and some kubelets serve no logs; C(launcher_log) is then empty and
    C(launcher_log_note) says why.
seealso:
  - module: mpi.operator.mpijob
"""

EXAMPLES = r"""
- name: How is pi doing?
  mpi.operator.mpijob_info:
    name: pi
    namespace: default
    launcher_log: tail
    events: true
  register: pi

- name: Print its progress line and log
  ansible.builtin.debug:
    msg: "{{ pi.jobs[0].summary.progress }} {{ pi.jobs[0].launcher_log }}"
  when: pi.jobs | length > 0

- name: Every job of the team that failed
  mpi.operator.mpijob_info:
    namespace: team-a
    label_selectors: [team=ml]
  register: all_jobs

- name: List them
  ansible.builtin.debug:
    msg: "{{ all_jobs.jobs | map(attribute='summary') | selectattr('phase', 'eq', 'Failed') | map(attribute='name') }}"

- name: Wait, showing progress, until the job has finished
  mpi.operator.mpijob_info:
    name: pi
    namespace: default
  register: info
  until: info.jobs | length == 0 or info.jobs[0].summary.finished
  retries: 60
  delay: 5
"""

RETURN = r"""
jobs:
  description: The jobs found, sorted by namespace and name; empty when none (or O(name) does not exist).
  returned: always
  type: list
  elements: dict
  contains:
    mpijob:
      description: The MPIJob object as the API server has it.
      type: dict
    conditions:
      description: The job's status conditions.
      type: list
      elements: dict
    summary:
      description: The job's status at a glance, with the keys of P(mpi.operator.mpijob#module)'s C(summary) return
        value (name, namespace, phase, reason, message, workers, workers_running, workers_failed, launcher_active,
        launcher_failed, suspended, start_time, completion_time, elapsed_seconds, finished, restarts,
        restarts_by_cause, restarting, waiting, progress).
      type: dict
    launcher:
      description: The newest launcher pod and how it ended; empty unless O(launcher_log) asks for a log or the job
        failed.
      type: dict
      contains:
        pod:
          description: Name of the newest launcher pod; empty when there is none.
          type: str
        exit:
          description: How its MPI container ended, or why the pod failed; empty while it runs.
          type: str
          sample: "Error, exit code 3"
    launcher_log:
      description: Lines of the newest launcher pod's log (with O(launcher_log=tail) or V(all)).
      type: list
      elements: str
    launcher_log_note:
      description: Why C(launcher_log) is empty although a log was asked for; empty otherwise.
      type: str
    events:
      description: The job's most recent events, oldest first (with O(events)).
      type: list
      elements: dict
      sample: [{type: Normal, reason: MPIJobCreated, message: MPIJob default/pi is created., count: 1,
                last_timestamp: "2026-01-01T12:00:00Z"}]
    record:
      description:
        - What the operator kept of the job's pods before it deleted them (C(cleanPodPolicy), a suspend, a scale-down)
          and when the job failed, from the ConfigMap C(status.record) names (C(<job>-record), owned by the job); it
          outlives the pods. V(null) when the operator kept nothing.
      type: dict
      contains:
        config_map:
          description: Name of the ConfigMap.
          type: str
        occasions:
          description: When something was kept and why (C(job failed), C(cleanPodPolicy=All), C(suspend), ...), and
            of which pods.
          type: list
          elements: dict
        pods:
          description:
            - Each pod kept (the launcher's newest and failed ones, each failed or evicted worker), in the order
              kept - name, uid, role (launcher or worker), phase, reason, exitCode, node, container, message,
              startedAt, finishedAt, restarts - and C(log), the last lines of its log (at most the install's
              C(--record-lines) lines and C(--record-pod-bytes) bytes; empty with C(logNote) saying why when not kept).
          type: list
          elements: dict
          sample: [{name: pi-launcher-x7k2p, role: launcher, phase: Failed, reason: Error, exitCode: 1,
                    node: node-3, container: launcher, log: ["rank 1 failed: boom", "mpirun: exiting"]}]
        omitted:
          description: Pods not described for the record's size (more than 100).
          type: int
        events:
          description: The newest Warning events of the job and of the pods whose logs were kept, oldest first.
          type: list
          elements: dict
        lines:
          description: All of it as lines to print (what C(submit.yml) prints once the pods are gone).
          type: list
          elements: str
api_calls:
  description: Number of API requests made.
  returned: always
  type: int
"""


from ..module_utils.kube.auth import AUTH_ARG_SPEC  # noqa: E402
from ..module_utils.kube.jobs import Jobs  # noqa: E402
from ..module_utils.kube.module import run_module  # noqa: E402
from ..module_utils.kube.mpijob_task import named_api_version  # noqa: E402
from ..module_utils.kube.rest import Rest  # noqa: E402
from ..module_utils.mpijob import constants as C  # noqa: E402
from ..module_utils.mpijob.apis import served_api_versions  # noqa: E402
from ..module_utils.mpijob.errors import JobError, SubmitError  # noqa: E402


def argspec() -> dict:
    spec = dict(
        name=dict(type="str"),
        namespace=dict(type="str"),
        label_selectors=dict(type="list", elements="str", default=[]),
        launcher_log=dict(type="str", choices=["none", "tail", "all"], default="none"),
        log_lines=dict(type="int", default=20),
        events=dict(type="bool", default=False),
        api_version=dict(type="str", aliases=["apiVersion"]),
    )
    spec.update({k: dict(v) for k, v in AUTH_ARG_SPEC.items()})
    return spec


def describe(jobs: Jobs, job: dict, params: dict) -> dict:
    entry = {
        "mpijob": job,
        "conditions": (job.get("status") or {}).get("conditions") or [],
        "summary": jobs.summary(job),  # a queued job's Workload: why Kueue holds it
    }
    wanted = {"none": None, "tail": params["log_lines"], "all": 0}[params["launcher_log"]]
    # one more request per job: only for a log, or to say how a failed job's launcher ended
    asked = wanted is not None or entry["summary"]["phase"] == C.FAILED
    entry["launcher"] = jobs.launcher(job, wanted) if asked else {}
    entry["launcher_log"] = entry["launcher"].get("log") or []
    entry["launcher_log_note"] = entry["launcher"].get("note") or ""
    if params["events"]:
        entry["events"] = jobs.events(job)
    entry["record"] = jobs.record(job)  # a request only for a job whose status names a record
    return entry


def task(module, rest: Rest) -> dict:
    p = module.params
    jobs = Jobs(rest)
    # Without api_version, every API's jobs: one name may be a job of each API (they are different jobs).
    try:
        apis = [named_api_version(p)] if p["api_version"] else served_api_versions()
    except SubmitError as exc:
        module.fail_json(msg=str(exc))
    found = []
    for api_version in apis:
        try:
            if p["name"]:
                one = jobs.get(p["namespace"] or "default", p["name"], api_version)
                found += [one] if one is not None else []
            else:
                found += jobs.list(p["namespace"], p["label_selectors"], api_version)
        except JobError as exc:
            # Looking at every API is this module's default, not the user's request: an API the user may not read
            # is one they do not use. kubeflow.org's, or the one asked for, is still an error.
            if p["api_version"] or api_version == apis[0] or getattr(exc.__cause__, "status", None) != 403:
                raise
    found.sort(key=lambda j: (j["metadata"].get("namespace", ""), j["metadata"]["name"], j.get("apiVersion", "")))
    return {"changed": False, "jobs": [describe(jobs, job, p) for job in found]}


def main() -> None:
    run_module(argspec(), task, supports_check_mode=True)


if __name__ == "__main__":
    main()
