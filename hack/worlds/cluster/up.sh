#!/usr/bin/env bash
# Start the local Kubernetes (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) on loopback.
# Builds the binaries the first time. Safe to call repeatedly and from anywhere: a healthy cluster is left as it is;
# anything else (a crash, a killed session, another clone's leftovers) is stopped by PID and started fresh.
# The last line printed is "kubeconfig: <path>".
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/components.sh"
t0=$(now_ms)
for tool in curl openssl flock setsid; do
  command -v "$tool" >/dev/null || die "$tool is required (Debian: apt-get install curl openssl util-linux)"
done
[[ $NODES =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] && [ "$NODES" -le 200 ] || die "MPI_CLUSTER_NODES must be 1..200, got '$NODES'"
[[ $KWOK_POD_WORKERS =~ ^[1-9][0-9]{0,2}$ ]] || die "MPI_CLUSTER_KWOK_POD_WORKERS must be 1..999, got '$KWOK_POD_WORKERS'"
cluster_lock

tb=$(now_ms)
# When the real node will come up, its binaries build with the control plane's: the kubelet in the same go build as
# the other Kubernetes commands, CoreDNS in kwok's (their packages compile once).
if bash "$CLUSTER_DIR/../node/up.sh" --wanted; then
  bash "$CLUSTER_DIR/build.sh" --with kubelet coredns
else
  bash "$CLUSTER_DIR/build.sh"
fi
build_s=$(since "$tb")

# The simulated nodes: kwok-node-<i>, untainted, so pods land here unless they ask for another node.
nodes_manifest() {
  local i
  for ((i = 0; i < NODES; i++)); do cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
status:
  capacity: {cpu: "32", memory: 128Gi, pods: "110"}
  allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
  addresses:
  - {type: InternalIP, address: 10.239.0.$((i + 1))}
  - {type: Hostname, address: kwok-node-$i}
NODE
  done
}

# Make the kwok nodes match MPI_CLUSTER_NODES (create missing ones, delete extra ones) and wait until all are Ready.
ensure_nodes() {
  nodes_manifest | kubectl_admin apply -f - >/dev/null
  local extra
  extra=$(kubectl_admin get nodes -l type=kwok -o name | awk -F- -v n="$NODES" '$NF + 0 >= n')
  [ -z "$extra" ] || kubectl_admin delete $extra --wait=false >/dev/null
  kubectl_admin wait --for=condition=Ready nodes -l type=kwok --timeout=60s >/dev/null || die "kwok nodes did not become Ready (see $LOGS/kwok.log)"
}

# healthy NAME...: every one of them runs (by its pid file) and passes its health check. A running component gets
# HEALTH_GRACE_S (20) to answer: on a busy machine (a test suite beside a CPU hog) a healthy API server can miss one
# 2-second check, and a cluster declared unhealthy is started fresh, its etcd data wiped under every running test.
healthy() {
  local c
  for c in "$@"; do
    component_running "$c" || return 1
    component_healthy "$c" || wait_until "$c health" "${HEALTH_GRACE_S:-20}" alive_and_healthy "$c" || return 1
    component_running "$c" || return 1
  done
}

# What a running component was started from: changed binaries or flags mean a fresh cluster, changed stages a new kwok.
control_plane_recipe() {
  { cat "$BIN"/.stamps/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler}; echo "GOGC=$GOGC_CONTROL_PLANE GOMEMLIMIT=$GOMEMLIMIT_CONTROL_PLANE $APISERVER_ROUTING $APISERVER_ADMISSION"; } | sha256sum | cut -c1-16
}
kwok_recipe() { { cat "$BIN/.stamps/kwok" "$CLUSTER_DIR"/kwok/*.yaml; kwok_configuration; } | sha256sum | cut -c1-16; }
recorded() { cat "$STATE/$1.recipe" 2>/dev/null || true; }

restart_kwok() {
  stop_components --strays kwok
  # The old kwok's node Leases would hold the new one off until they expire (40 s).
  kubectl_admin -n kube-node-lease delete lease $(kubectl_admin get nodes -l type=kwok -o name | sed 's|^node/||') \
    --ignore-not-found >/dev/null
  start_kwok
  await kwok 60
  kwok_recipe >"$STATE/kwok.recipe"
}

control_plane=(etcd kube-apiserver kube-controller-manager kube-scheduler)
if healthy "${control_plane[@]}"; then
  # A cluster started before recipes were recorded is adopted as it is.
  [ -f "$STATE/control-plane.recipe" ] || control_plane_recipe >"$STATE/control-plane.recipe"
  if [ "$(recorded control-plane)" = "$(control_plane_recipe)" ]; then
    if ! healthy kwok; then
      log "kwok is down: restarting it"
      restart_kwok
    elif [ "$(recorded kwok)" != "$(kwok_recipe)" ]; then
      log "kwok stages, configuration or binary changed: restarting kwok"
      restart_kwok
    fi
    ensure_nodes
    log "cluster already running and healthy (checked in $(since "$t0") s); logs in $LOGS"
    bash "$CLUSTER_DIR/../node/up.sh"
    echo "kubeconfig: $ADMIN_KUBECONFIG"
    exit 0
  fi
  log "control-plane binaries changed"
fi

# Stale, partial or outdated: stop what we started (pid files), then anything still running our binaries.
log "starting a fresh cluster (state in $STATE)"
stop_cluster --strays
rm -rf "$ETCD_DATA" "$STATE"/*.recipe
mkdir -p "$LOGS" "$PIDS"
# Keep the previous run's logs one round for post-mortems (only ours: the real node logs here too).
mkdir -p "$LOGS/previous"
for c in "${COMPONENTS[@]}"; do [ ! -f "$LOGS/$c.log" ] || mv -f "$LOGS/$c.log" "$LOGS/previous/$c.log"; done
bash "$CLUSTER_DIR/pki.sh"

ts=$(now_ms)
start_etcd
await etcd 30
start_apiserver
await kube-apiserver 90
start_controller_manager
start_scheduler
start_kwok
await kube-controller-manager 60
await kube-scheduler 60
await kwok 60
control_plane_recipe >"$STATE/control-plane.recipe"
kwok_recipe >"$STATE/kwok.recipe"
tn=$(now_ms)
ensure_nodes
log "$NODES kwok nodes Ready (+$(since "$tn") s)"
# Pods need their namespace's default ServiceAccount: wait for the controller that makes it.
wait_until "default ServiceAccount" 30 kubectl_admin -n default get serviceaccount default || die "no default ServiceAccount (see $LOGS/kube-controller-manager.log)"
start_s=$(since "$ts")

log "cluster up: ${NODES} kwok nodes, Kubernetes $KUBE_VERSION; build/check ${build_s} s, start ${start_s} s, total $(since "$t0") s; logs in $LOGS"
# The real node (MPI_CLUSTER_REAL_NODE=auto|1|0; auto: only where this machine can run containers).
bash "$CLUSTER_DIR/../node/up.sh"
echo "kubeconfig: $ADMIN_KUBECONFIG"
