#!/usr/bin/env bash
# A gang scheduler on the local cluster: scheduler-plugins' kube-scheduler with its Coscheduling plugin (build.sh) as a
# second scheduler beside the default one, its profile named `scheduler-plugins-scheduler` (the name the Kubeflow MPI
# Operator's e2e suite and scheduler-plugins' chart give it), and the PodGroup CRD. A process on the host, like the
# cluster's own scheduler: its log and pid file among theirs ($STATE/logs, $STATE/pids), stopped by down.sh and by
# cluster-down. Idempotent: a healthy one is left running. Prints its scheduler name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
# shellcheck source=../cluster/components.sh
source "$here/../cluster/components.sh"
name=scheduler-plugins
scheduler_name=scheduler-plugins-scheduler
port=$((16261 + port_offset))
version=${SCHEDULER_PLUGINS_VERSION:-v0.34.7}
apiserver_ready || die "the local cluster is not up (make cluster-up)"
bash "$here/build.sh" >/dev/null
kubectl_admin apply --server-side --force-conflicts -f "$CACHE/scheduler-plugins/$version/podgroups.yaml" >/dev/null
kubectl_admin wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.x-k8s.io >/dev/null
healthy() { secure_healthz "$port"; }
config=$STATE/scheduler-plugins.yaml
# The admin's kubeconfig: the default scheduler's identity may not read PodGroups. A short Permit wait, as the chart's
# default configuration has it: a gang that cannot all be placed gives its reservations back after 10 s.
want=$(cat <<CONF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: $ADMIN_KUBECONFIG
  qps: 100
  burst: 200
profiles:
- schedulerName: $scheduler_name
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
CONF
)
want+=$'\n# flags: --pod-max-in-unschedulable-pods-duration=20s'
if component_running "$name" && healthy && [ "$(cat "$config" 2>/dev/null)" = "$want" ]; then
  echo "$scheduler_name"
  exit 0
fi
stop_components "" "$name"
printf '%s\n' "$want" >"$config"
ts=$(now_ms)
# A gang turned down for want of room is looked at again only on the events Coscheduling registers (a pod added, a
# PodGroup added or changed: not a pod deleted, not a node grown) or when the scheduler flushes its unschedulable pods,
# after 5 minutes by default; 20 s here, so that a test's "room appears" does not wait 5 minutes (docs/dev/verification.md).
start "$name" --config="$config" --bind-address=127.0.0.1 --secure-port="$port" --pod-max-in-unschedulable-pods-duration=20s \
  --authentication-kubeconfig="$ADMIN_KUBECONFIG" --authorization-kubeconfig="$ADMIN_KUBECONFIG"
wait_until "$name" 60 healthy || { tail -n 20 "$LOGS/$name.log" >&2; die "$name not healthy after 60 s (log: $LOGS/$name.log)"; }
log "$name ($scheduler_name) healthy (+$(since "$ts") s)"
echo "$scheduler_name"
