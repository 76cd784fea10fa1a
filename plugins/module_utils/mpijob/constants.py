# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Names, labels, env vars and reasons of the Kubeflow MPI Operator contract (kubeflow.org MPIJob).

Tools around the Kubeflow operator (Kueue, dashboards, `kubectl logs -l ...`) rely on these exact strings.
"""

from __future__ import annotations

GROUP = "kubeflow.org"
VERSION = "v2beta1"  # the storage version
LEGACY_VERSION = "v1"  # served too, for Kubeflow's older manifests
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "MPIJob"
PLURAL = "mpijobs"
SINGULAR = "mpijob"
ACCEPTED_API_VERSIONS = (API_VERSION, f"{GROUP}/{LEGACY_VERSION}")

LAUNCHER = "Launcher"
WORKER = "Worker"
REPLICA_TYPES = (LAUNCHER, WORKER)
ROLE_LAUNCHER = "launcher"
ROLE_WORKER = "worker"

# Child name suffixes.
LAUNCHER_SUFFIX = "-launcher"
WORKER_SUFFIX = "-worker"
CONFIG_SUFFIX = "-config"
SSH_SUFFIX = "-ssh"

# Labels.
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
OPERATOR_NAME = "mpi-operator"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
APP_LABEL = "app"
# Ours: the worker template a worker pod was made from (MPIJob.roll_workers compares it with the current one).
WORKER_TEMPLATE_HASH_ANNOTATION = "mpi.operator/worker-template-hash"
# On a running launcher pod: "<digest of discover_hosts.sh>@<time>", the hosts list it was told of and when. The kubelet
# rewrites a pod's ConfigMap volumes when the pod changes, at once, instead of at its next periodic sync (up to about a
# minute later): Horovod's elastic driver, which runs discover_hosts.sh every second, learns of a worker's removal
# before the worker goes.
DISCOVER_HOSTS_ANNOTATION = "mpi.operator/discover-hosts"
# Seconds between telling the launcher and deleting the workers a scale-down removes: the kubelet's rewrite of the
# file and one run of Horovod's host discovery (every 1 s).
HOSTS_NOTICE_S = 5.0

# What a job asks of this operator through annotations (spec.Directives, docs/submit.md), on every API.
# The launch gate: an init container of the launcher that waits until every worker of the hostfile answers (gate.py).
LAUNCH_GATE_ANNOTATION = "mpi.operator/launch-gate"  # "false": no gate
LAUNCH_GATE_TIMEOUT_ANNOTATION = "mpi.operator/launch-gate-timeout"  # seconds, then the launcher starts anyway
LAUNCH_GATE_TIMEOUT_S = 600
SSH_PORT_ANNOTATION = "mpi.operator/ssh-port"  # the workers' sshd port, when the worker template does not say
SLOTS_FROM_ACCELERATORS_ANNOTATION = "mpi.operator/slots-from-accelerators"  # "true": slots = the worker's GPUs
# Node label keys, the widest level first ("topology.kubernetes.io/zone,example.com/rack"): the launcher waits until
# every worker is bound to a node, and the hostfile lists the workers by their nodes' values of these labels (then by
# index), so that consecutive ranks are topology neighbours. Without it, the hostfile is in index order (Kubeflow's).
HOSTFILE_TOPOLOGY_ANNOTATION = "mpi.operator/hostfile-topology"
HOSTFILE_TOPOLOGY_LEVELS = 16
LAUNCH_GATE_CONTAINER = "launch-gate"
# The ports the gate tries when neither the annotation nor the worker template names one: OpenSSH's, and the one the
# Kubeflow operator's images run sshd on as a non-root user.
SSH_PORTS = (22, 2222)

# The extended resources whose count per worker the slots are checked against (accelerators.py); the install adds more.
ACCELERATORS = ("nvidia.com/gpu",)

# The record of a job's pods kept before they are deleted (record.py): the defaults of the operator's --record-* flags.
RECORD_LINES = 50
RECORD_POD_BYTES = 8 * 1024
RECORD_TOTAL_BYTES = 64 * 1024

# ConfigMap and its mount.
CONFIG_VOLUME = "mpi-job-config"
# The most a ConfigMap's data holds, its keys and values together: the API server refuses a bigger one.
CONFIG_MAP_MAX_BYTES = 1024 * 1024
CONFIG_MOUNT_PATH = "/etc/mpi"
HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"
HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"
# How the launcher starts MPI's daemons on the workers: ssh (Kubeflow), or `kubectl exec` (the kubebuilder
# operator's, apis/bdap.py: its workers need no sshd), through the ConfigMap's kubexec.sh and a per-job ServiceAccount.
LAUNCH_SSH, LAUNCH_KUBEXEC = "ssh", "kubexec"
KUBEXEC = "kubexec.sh"
KUBEXEC_PATH = f"{CONFIG_MOUNT_PATH}/{KUBEXEC}"
KUBEXEC_SSH_PATH = "/usr/local/bin/ssh"
KUBECTL_VOLUME = "mpi-kubectl"
KUBECTL_DIR = "/opt/kube"
KUBECTL_DELIVERY_CONTAINER = "kubectl-delivery"
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"

# SSH Secret and its mount.
SSH_VOLUME = "ssh-auth"
ROOT_SSH_PATH = "/root/.ssh"
SSH_PRIVATE_KEY = "ssh-privatekey"
SSH_PUBLIC_KEY = "ssh-publickey"
SSH_SECRET_TYPE = "kubernetes.io/ssh-auth"

ROLE_ENV = "K_MPI_JOB_ROLE"
SSHD_COMMAND = ["/usr/sbin/sshd", "-De"]
SSH_ARGS = "-o ConnectionAttempts=10"

# MPI implementations.
OPENMPI = "OpenMPI"
INTEL = "Intel"
MPICH = "MPICH"
MPI_IMPLEMENTATIONS = (OPENMPI, INTEL, MPICH)

AT_STARTUP = "AtStartup"
WAIT_FOR_WORKERS_READY = "WaitForWorkersReady"
LAUNCHER_CREATION_POLICIES = (AT_STARTUP, WAIT_FOR_WORKERS_READY)

CLEAN_ALL = "All"
CLEAN_RUNNING = "Running"
CLEAN_NONE = "None"
CLEAN_POD_POLICIES = (CLEAN_ALL, CLEAN_RUNNING, CLEAN_NONE)
CLEAN_WORKERS = "Workers"  # not a cleanPodPolicy: T9k's runPolicy.cleanUpWorkers (the launcher and its logs stay)

RESTART_POLICIES = ("Never", "OnFailure")
MANAGED_BY_US = "kubeflow.org/mpi-operator"
MANAGED_BY_VALUES = (MANAGED_BY_US, "kueue.x-k8s.io/multikueue")

# Kueue (docs/kueue.md): the labels that put a job in a LocalQueue and give it a WorkloadPriorityClass, and the one
# that names the job a Workload belongs to.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"  # its Workloads

# Gang scheduling.
VOLCANO = "volcano"
VOLCANO_PODGROUP_API = "scheduling.volcano.sh/v1beta1"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
PLUGINS_PODGROUP_API = "scheduling.x-k8s.io/v1alpha1"
PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

# Condition types.
CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
SUSPENDED = "Suspended"
CONDITION_TYPES = (CREATED, RUNNING, RESTARTING, SUSPENDED, SUCCEEDED, FAILED)
# Every API's phase of a job the operator has not seen yet (no condition).
PENDING = "Pending"

# Condition and event reasons (Kubeflow's, plus ours marked as such).
REASON_CREATED = "MPIJobCreated"
REASON_RUNNING = "MPIJobRunning"
REASON_SUCCEEDED = "MPIJobSucceeded"
REASON_FAILED = "MPIJobFailed"
REASON_EVICTED = "MPIJobEvicted"
REASON_SUSPENDED = "MPIJobSuspended"
REASON_RESUMED = "MPIJobResumed"
REASON_VALIDATION = "ValidationError"
REASON_RESOURCE_EXISTS = "ErrResourceExists"
REASON_RESTART_POLICY = "SetPodTemplateRestartPolicy"
REASON_WORKER_FAILED = "MPIJobWorkerFailed"  # ours: Kubeflow only counts failed workers
REASON_TTL = "MPIJobTTLExpired"  # ours: Kubeflow only applies the TTL to the launcher Job
REASON_WAITING_WORKERS = "MPIJobWaitingForWorkers"  # ours: launcher held until workers are Ready
MESSAGE_RESOURCE_EXISTS = 'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
EVENT_MESSAGE_LIMIT = 1024
EVENT_COMPONENT = "mpi-job-controller"

# The failure policy (ours, opt-in: failure_policy.py, restart.py): the operator restarts the whole world.
FAILURE_POLICY = "failurePolicy"
ACTION_FAIL_JOB = "FailJob"  # a bug: the job fails at once
ACTION_IGNORE = "Ignore"  # a disruption: restart, counted against maxDisruptionRestarts, not maxRestarts
ACTION_COUNT = "Count"  # a program failure: restart, counted against maxRestarts
RULE_ACTIONS = (ACTION_FAIL_JOB, ACTION_IGNORE, ACTION_COUNT)
EXIT_CODE_OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("True", "False", "Unknown")
# What a worker's failure restarts: the whole world, or (elastic Horovod) only that worker, which is replaced.
RESTART_WORLD, REPLACE_WORKER = "RestartWorld", "ReplaceWorker"
WORKER_FAILURE_SCOPES = (RESTART_WORLD, REPLACE_WORKER)
DEFAULT_MAX_DISRUPTION_RESTARTS = 10
DEFAULT_NODE_LOST_SECONDS = 60
MAX_FAILURE_RULES = 20  # as a Job's podFailurePolicy
MAX_EXIT_CODES = 255
# The two budgets, as status.restarts counts them and the metric labels them.
CAUSE_PROGRAM, CAUSE_DISRUPTION = "program", "disruption"
CAUSES = (CAUSE_PROGRAM, CAUSE_DISRUPTION)
# On the launcher Job and on every pod of a job with a failure policy: the attempt (status.restartCount) it belongs to.
ATTEMPT_LABEL = "mpi.operator/attempt"
# In the launcher's and the workers' MPI container: the attempt, 0 on the first run, n after n restarts.
ATTEMPT_ENV = "MPIJOB_RESTART_ATTEMPT"
DISRUPTION_TARGET = "DisruptionTarget"  # the pod condition Kubernetes sets before it evicts or preempts a pod
REASON_PROGRAM_FAILURE = "MPIJobProgramFailure"  # Restarting (and its Event): a program failure restarted the world
REASON_DISRUPTION = "MPIJobDisruption"  # Restarting (and its Event): a disruption restarted the world
REASON_WORKER_REPLACED = "MPIJobWorkerReplaced"  # the Event of a worker replaced (ReplaceWorker)
REASON_MAX_RESTARTS = "MaxRestartsExceeded"  # Failed: failurePolicy.maxRestarts is spent
REASON_MAX_DISRUPTIONS = "MaxDisruptionRestartsExceeded"  # Failed: failurePolicy.maxDisruptionRestarts is spent
REASON_FAIL_JOB_RULE = "PodFailurePolicy"  # Failed: a FailJob rule matched (the Job's reason for the same)
