#!/usr/bin/python
# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
# The documentation of the mpi.operator.mpijob_wait action plugin (plugins/action/mpijob_wait.py), which does the work.
from __future__ import annotations

DOCUMENTATION = r"""
module: mpijob_wait
short_description: Wait for a kubeflow.org MPIJob, printing its progress at every look
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Looks at one MPIJob every O(wait_sleep) seconds and prints one line per look (phase, workers running, time
    elapsed since submission, time waited), until the job reached O(wait_for) or O(wait_timeout) passed.
  - The same wait as the P(mpi.operator.mpijob#module) module's O(mpi.operator.mpijob#module:wait), with the same
    predicate, plus the progress lines. A wait of any length (days) is one loop, and its memory does not grow with it.
  - Runs on the controller (an action plugin), like the C(kubernetes.core.k8s) lookup. The API server must be
    reachable from the controller with the connection options below or the controller's C(K8S_AUTH_*) and
    C(KUBECONFIG) variables.
extends_documentation_fragment:
  - mpi.operator.auth
  - mpi.operator.attributes_readonly
  - mpi.operator.wait
  - mpi.operator.api_version
options:
  name:
    description:
      - Name of the MPIJob.
    type: str
    required: true
  namespace:
    description:
      - Namespace of the MPIJob.
    type: str
    default: default
  # wait_for, wait_timeout and wait_sleep are the mpi.operator.wait fragment's, but for these
  wait_timeout:
    type: float
    default: 3600
  wait_sleep:
    type: float
    default: 5
attributes:
  action:
    support: full
    description: An action plugin; the loop runs on the controller.
notes:
  - A job deleted while waited for fails the task; so does a job that does not exist.
  - A failed job ends a wait for V(Succeeded) without failing the task; RV(summary)'s C(phase) is then V(Failed). The
    P(mpi.operator.mpijob#module) module's O(mpi.operator.mpijob#module:fail_on_job_failure) fails the task instead.
"""

EXAMPLES = r"""
- name: Submit a job without waiting
  mpi.operator.mpijob:
    src: pi.yaml
  register: pi

- name: Wait for it, one progress line every 10 seconds, up to two days
  mpi.operator.mpijob_wait:
    name: "{{ pi.result.metadata.name }}"
    namespace: "{{ pi.result.metadata.namespace }}"
    wait_sleep: 10
    wait_timeout: 172800
  register: waited

- name: Fail when it failed
  ansible.builtin.fail:
    msg: "{{ waited.summary.reason }}: {{ waited.summary.message }}"
  when: waited.summary.phase == 'Failed'
"""

RETURN = r"""
reached:
  description: Whether the job reached RV(wait_for) (always true when the task succeeds).
  returned: success
  type: bool
wait_for:
  description: What was waited for.
  returned: success
  type: str
  sample: Succeeded
rounds:
  description: How many times the job was looked at.
  returned: always
  type: int
waited_seconds:
  description: How long the wait took.
  returned: success
  type: int
result:
  description: The MPIJob as last seen.
  returned: when the job was seen
  type: dict
summary:
  description: The status summary of the job as last seen, as P(mpi.operator.mpijob_info#module) returns it (phase,
    reason, message, workers, workers_running, elapsed_seconds, finished, progress, ...).
  returned: when the job was seen
  type: dict
"""
