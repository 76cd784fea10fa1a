# Shared by hack/worlds/node/*.sh (sourced): where the real node keeps its state, and daemon helpers.
# Paths and the API server come from the local cluster's scripts (hack/worlds/cluster/lib.sh).
NODE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../cluster/lib.sh
source "$NODE_DIR/../cluster/lib.sh"
NODE_NAME=${MPI_REAL_NODE_NAME:-mpi-real-node}
NODE_STATE=$STATE/node
# The taint and label that keep kwok's tests off this node and let e2e pods choose it.
NODE_TAINT_KEY=mpi.operator/real-node
NODE_LABEL=mpi.operator/real-node=true
# Pod network: one bridge, host-local IPs. Not 10.88/16 (podman's default); the gateway is also the DNS server.
BRIDGE=mpi0
POD_CIDR=10.244.0.0/24
POD_GATEWAY=10.244.0.1
CLUSTER_DOMAIN=cluster.local
KUBERNETES_SERVICE_IP=10.96.0.1
CONTAINERD_SOCK=/run/containerd/containerd.sock
CNI_BIN_DIR=/usr/lib/cni
KUBELET_ROOT=/var/lib/kubelet
# Daemons of the node, in start order (pid files $PIDS/node-<name>.pid, logs $LOGS/node-<name>.log).
NODE_DAEMONS=(containerd coredns kubelet)

nlog() { printf '[node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# PID of a running node daemon whose command line starts with the binary recorded next to its pid file.
daemon_pid() {
  local pidfile=$PIDS/node-$1.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(head -1 "$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 0
  if [ "$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -1)" = "$(sed -n 2p "$pidfile")" ]; then echo "$pid"; fi
}

# start_daemon NAME BINARY ARGS...: run in the background in its own session, logging to $LOGS.
start_daemon() {
  local name=$1; shift
  mkdir -p "$PIDS" "$LOGS"
  [ -z "$(daemon_pid "$name")" ] || return 0
  ( close_inherited_fds; exec setsid "$@" >>"$LOGS/node-$name.log" 2>&1 </dev/null ) &
  printf '%s\n%s\n' "$!" "$1" >"$PIDS/node-$name.pid"
}

stop_daemon() {
  local name=$1 pid i
  pid=$(daemon_pid "$name")
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    [ ! -d "/proc/$pid" ] || { nlog "$name (pid $pid) ignored TERM; killing"; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$PIDS/node-$name.pid"
}

# The node's daemons, started as up.sh starts them (hack/worlds/node/daemon.sh restarts them for `make chaos`).
start_containerd() {
  start_daemon containerd /usr/bin/containerd --config "$NODE_STATE/containerd.toml"
  wait_until "containerd" 30 ctr --address "$CONTAINERD_SOCK" version || die "containerd did not start (see $LOGS/node-containerd.log)"
}
start_kubelet() {
  start_daemon kubelet "$BIN/kubelet" --config="$NODE_STATE/kubelet.yaml" --kubeconfig="$NODE_STATE/kubelet.kubeconfig" \
    --hostname-override="$NODE_NAME" --node-ip="$ADVERTISE_IP" --node-labels="$NODE_LABEL,type=real" \
    --cert-dir="$NODE_STATE/kubelet-pki" --root-dir="$KUBELET_ROOT" --v=1
  wait_until "node Ready" 120 kubectl_admin wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s \
    || die "node $NODE_NAME did not become Ready (see $LOGS/node-kubelet.log)"
}

ctr_node() { ctr -a "$CONTAINERD_SOCK" -n k8s.io "$@"; }

# Why this machine cannot run the node, or nothing.
unfit_reason() {
  [ "$(id -u)" = 0 ] || { echo "not root"; return; }
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "no cgroup filesystem"; return; }
  command -v containerd >/dev/null || command -v apt-get >/dev/null || { echo "no containerd and no apt-get to install it"; return; }
  [ -x "$BIN/kubelet" ] || command -v go >/dev/null || { echo "no kubelet in $BIN and no Go to build it"; return; }
  unshare --mount --pid --fork true 2>/dev/null || { echo "cannot create namespaces (runc would fail)"; return; }
}
