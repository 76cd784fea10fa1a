# Shared paths, ports and helpers of the local cluster scripts (sourced, never run).
# State lives in one fixed place per machine, so any clone of the repo finds (and cleans) a cluster another started.
CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$CLUSTER_DIR/versions.env"
CACHE=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
BIN=$CACHE/bin
STATE=$CACHE/cluster
PKI=$STATE/pki
LOGS=$STATE/logs
PIDS=$STATE/pids
ETCD_DATA=$STATE/etcd
ADMIN_KUBECONFIG=$STATE/kubeconfig
# Loopback only, never the default ports, so a user's own cluster on this machine is left alone.
# MPI_CLUSTER_PORT_OFFSET (with its own MPI_OPERATOR_CACHE) runs a second, separate cluster: for testing these scripts.
port_offset=${MPI_CLUSTER_PORT_OFFSET:-0}
APISERVER_PORT=$((16443 + port_offset))
ETCD_CLIENT_PORT=$((12379 + port_offset))
ETCD_PEER_PORT=$((12380 + port_offset))
KCM_PORT=$((16257 + port_offset))
SCHEDULER_PORT=$((16259 + port_offset))
KWOK_PORT=$((16280 + port_offset))
SERVICE_CIDR=10.96.0.0/16
# The address published in the kubernetes Service's endpoints (loopback is not a valid endpoint); nothing listens on it.
ADVERTISE_IP=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -m1 -E '^[0-9]+(\.[0-9]+){3}$' || true)
ADVERTISE_IP=${ADVERTISE_IP:-10.0.2.15}
KWOK_POD_CIDR=10.240.0.0/16
NODES=${MPI_CLUSTER_NODES:-4}
# The Go garbage collector's target for etcd, the control plane and kwok. Go's default (100) spends much of the API
# server's CPU on collection when pods churn; 400 trades memory (plenty here) for CPU (docs/dev/local-cluster.md).
# GOMEMLIMIT (a soft cap per process) makes the collector work harder again before memory runs away.
GOGC_CONTROL_PLANE=${MPI_CLUSTER_GOGC:-400}
GOMEMLIMIT_CONTROL_PLANE=${MPI_CLUSTER_GOMEMLIMIT:-2GiB}
# How many pod stages (a pod Running, Succeeded, deleted: one API request each) kwok plays at once for all its nodes.
# One kwok plays them for every simulated node; 4 is kwok's default (docs/dev/local-cluster.md).
KWOK_POD_WORKERS=${MPI_CLUSTER_KWOK_POD_WORKERS:-4}
# In start order (cluster-down stops etcd last).
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

now_ms() { date +%s%3N; }
# Seconds elapsed since a now_ms stamp, with one decimal.
since() { local d=$(( $(now_ms) - $1 )); printf '%d.%d' $((d / 1000)) $(( (d % 1000) / 100 )); }

# The program a process runs (its argv[0]), or nothing if it is gone.
arg0() { local a=; { IFS= read -r -d '' a <"/proc/$1/cmdline"; } 2>/dev/null || true; printf '%s' "$a"; }

# PID of a running component, or nothing: the pid file must name a live process whose command line is our binary.
component_pid() {
  local name=$1 pid
  [ -f "$PIDS/$name.pid" ] || return 0
  pid=$(<"$PIDS/$name.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  if [ "$(arg0 "$pid")" = "$BIN/$name" ]; then echo "$pid"; fi
}

component_running() { [ -n "$(component_pid "$1")" ]; }

# A process exists and is not a zombie waiting for its parent.
is_alive() { local _p _c st; { read -r _p _c st _ <"/proc/$1/stat"; } 2>/dev/null && [ "$st" != Z ]; }

# Stop the cluster by PID: first everything that talks to etcd, then etcd (an API server without etcd hangs on
# shutdown). With --strays, also any other process running one of our binaries (pid files lost in a crash).
stop_cluster() {
  stop_components "${1:-}" scheduler-plugins vc-scheduler kwok kube-scheduler kube-controller-manager kube-apiserver
  stop_components "${1:-}" etcd
}

# stop_components [--strays] NAME...: TERM them all at once, KILL what is left after 10 s.
stop_components() {
  local strays=$1 c pid pids=() i alive=()
  shift
  for c in "$@"; do
    pid=$(component_pid "$c")
    if [ -n "$pid" ]; then log "stopping $c (pid $pid)"; pids+=("$pid"); fi
    if [ "$strays" = --strays ]; then
      for pid in $(stray_pids "$c"); do
        [[ " ${pids[*]} " == *" $pid "* ]] || { log "stopping stray $c (pid $pid)"; pids+=("$pid"); }
      done
    fi
    rm -f "$PIDS/$c.pid"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for i in $(seq 100); do
    alive=()
    for pid in "${pids[@]}"; do ! is_alive "$pid" || alive+=("$pid"); done
    [ ${#alive[@]} -gt 0 ] || return 0
    sleep 0.1
  done
  log "killing ${alive[*]} (TERM ignored for 10 s)"
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

kubectl_admin() { "$BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# True when the API server answers /readyz with the admin credentials.
apiserver_ready() {
  [ -f "$ADMIN_KUBECONFIG" ] && [ -x "$BIN/kubectl" ] && kubectl_admin get --raw /readyz --request-timeout=2s >/dev/null 2>&1
}

# PIDs of any process running one of our binaries, found by command line (for pid files lost in a crash).
stray_pids() {
  local name=$1 f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    if [ "$(arg0 "$pid")" = "$BIN/$name" ]; then echo "$pid"; fi
  done
}

# wait_until DESCRIPTION TIMEOUT_S COMMAND...: poll COMMAND every 0.2 s until it succeeds.
wait_until() {
  local what=$1 deadline=$(( $(now_ms) + $2 * 1000 )); shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

# Component health: etcd over mutual TLS, the control plane's secure ports, kwok's plain one.
etcd_healthy() {
  curl -sf --max-time 2 --cacert "$PKI/etcd-ca.crt" --cert "$PKI/apiserver-etcd-client.crt" --key "$PKI/apiserver-etcd-client.key" \
    "https://127.0.0.1:$ETCD_CLIENT_PORT/health" | grep -q '"health":"true"'
}
secure_healthz() { curl -sfk --max-time 2 "https://127.0.0.1:$1/healthz" | grep -qx ok; }
component_healthy() {
  case $1 in
    etcd) etcd_healthy ;;
    kube-apiserver) apiserver_ready ;;
    kube-controller-manager) secure_healthz "$KCM_PORT" ;;
    kube-scheduler) secure_healthz "$SCHEDULER_PORT" ;;
    kwok) curl -sf --max-time 2 "http://127.0.0.1:$KWOK_PORT/healthz" >/dev/null ;;
  esac
}

# close_inherited_fds: closes every file descriptor above 2 of this (sub)shell, before it execs a daemon: a daemon must
# not hold a caller's lock (cluster_lock's fd 8, a `flock` around the whole command) or pipe for as long as it runs.
close_inherited_fds() {
  local fd
  for fd in $(ls "/proc/$BASHPID/fd"); do
    [ "$fd" -le 2 ] || eval "exec $fd>&-" 2>/dev/null || true
  done
}

# One cluster-up or cluster-down at a time per machine: a second caller waits, then sees the first one's cluster.
cluster_lock() {
  mkdir -p "$STATE"
  exec 8>"$STATE/.lock"
  flock 8
}
