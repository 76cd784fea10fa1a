# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The shell: the only code that talks to the Kubernetes API server, for the modules and the operator alike.

One job per module: auth (connection options, credentials), transport (HTTP: urllib3 alone or the kubernetes
client), rest (JSON requests, API paths, connect), sshkeys, read (a batch's world), reconcile (the operator's step
over a batch: read, plan, apply), apply (carrying one job's plan out), jobs (Jobs: the API calls of the mpijob,
mpijob_info, mpijob_wait and mpijob_sync tasks), mpijob_task (one mpijob task), mpijob_sync_task (one mpijob_sync
task), kinds (where each kind lives, for k8s_objects and k8s_read) and module (run_module: every module's entry, any
MPIJobError as the task's failure). The decisions are the core's (module_utils/mpijob).
"""
