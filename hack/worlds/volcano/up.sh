#!/usr/bin/env bash
# Volcano's scheduler on the local cluster (build.sh): `vc-scheduler` with its default configuration (actions enqueue,
# allocate, backfill; the priority, gang, conformance, overcommit, drf, predicates, proportion and nodeorder plugins)
# as a second scheduler named `volcano`, beside the default one, with the CRDs it watches. A process on the host, like
# the cluster's own scheduler: its log and pid file among theirs ($STATE/logs, $STATE/pids), stopped by down.sh and by
# cluster-down. What Volcano's controllers would do and this does instead: the scheduler makes the `root` and
# `default` queues itself, and the queue controller (not run) is what opens them; up.sh sets the default queue's
# state Open (the proportion plugin admits no job into a queue that is not). No admission webhook: the operator's
# PodGroups are complete as it makes them. Idempotent: a healthy one is left running. Prints its scheduler name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
# shellcheck source=../cluster/components.sh
source "$here/../cluster/components.sh"
name=vc-scheduler
scheduler_name=volcano
port=$((16271 + port_offset))
version=${VOLCANO_VERSION:-v1.14.1}
apiserver_ready || die "the local cluster is not up (make cluster-up)"
bash "$here/build.sh" >/dev/null
kubectl_admin apply --server-side --force-conflicts -f "$CACHE/volcano/$version/crds.yaml" >/dev/null
kubectl_admin wait --for=condition=Established --timeout=60s crd/queues.scheduling.volcano.sh \
  crd/podgroups.scheduling.volcano.sh crd/hypernodes.topology.volcano.sh crd/numatopologies.nodeinfo.volcano.sh >/dev/null
healthy() { curl -sf --max-time 2 "http://127.0.0.1:$port/healthz" >/dev/null; }
# Its built-in default configuration (pkg/scheduler/util.go), written out: without a file it logs it as invalid.
conf=$STATE/vc-scheduler.conf
cat >"$conf" <<'CONF'
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
CONF
flags=(--kubeconfig="$ADMIN_KUBECONFIG" --scheduler-name="$scheduler_name" --scheduler-conf="$conf" --leader-elect=false
  --enable-healthz --healthz-address="127.0.0.1:$port" --listen-address="127.0.0.1:$((port + 1))"
  --schedule-period=1s --cache-dumper=false)
want="$version ${flags[*]}"
if ! { component_running "$name" && healthy && [ "$(cat "$STATE/$name.flags" 2>/dev/null)" = "$want" ]; }; then
  stop_components "" "$name"
  printf '%s\n' "$want" >"$STATE/$name.flags"
  ts=$(now_ms)
  start "$name" "${flags[@]}"
  wait_until "$name" 60 healthy || { tail -n 20 "$LOGS/$name.log" >&2; die "$name not healthy after 60 s (log: $LOGS/$name.log)"; }
  log "$name ($scheduler_name) healthy (+$(since "$ts") s)"
fi
# The scheduler makes the default queue; open it as Volcano's queue controller would.
queue_open() {
  local queue=queues.scheduling.volcano.sh/default  # not `queue`: Kueue's LocalQueue answers to that short name
  [ "$(kubectl_admin get "$queue" -o 'jsonpath={.status.state}' 2>/dev/null)" = Open ] && return 0
  kubectl_admin patch "$queue" --subresource=status --type=merge -p '{"status":{"state":"Open"}}' >/dev/null 2>&1
  [ "$(kubectl_admin get "$queue" -o 'jsonpath={.status.state}' 2>/dev/null)" = Open ]
}
wait_until "the default queue Open" 60 queue_open || die "Volcano's default queue is not Open after 60 s (log: $LOGS/$name.log)"
echo "$scheduler_name"
