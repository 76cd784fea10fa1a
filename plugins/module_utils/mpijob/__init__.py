# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The MPIJob core: pure Python, no I/O, no Ansible imports.

parse (an API's, into spec's one model) -> children and podgroup (the desired objects) -> status (an API's stage, from
what was observed) -> planner (the ordered actions that turn observed into desired: a plan.Plan). The shell
(module_utils/kube/) reads and writes. apis/ is the registry of the MPIJob APIs served, one module each (kubeflow.py,
t9k.py with t9k_status.py, bdap.py) with its parse and status stage; spec.py (the model, Reader), status.py (Observed,
condition mechanics), children, podgroup and the planner are shared. protocol.py is what the reconcile module and the
operator loop exchange (a job's key, a reconcile's outcome, its result); submit.py and sync.py decide for the
mpijob and mpijob_sync modules; constants, errors and quantity serve them all.
"""
