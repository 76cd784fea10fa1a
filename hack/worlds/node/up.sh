#!/usr/bin/env bash
# Brings up the real node next to the local control plane: containerd (CRI) with a CNI bridge, CoreDNS for
# cluster names, a route for the `kubernetes` Service, the local images, and a kubelet registered as
# $MPI_REAL_NODE_NAME (default mpi-real-node), tainted mpi.operator/real-node=true:NoSchedule.
# MPI_CLUSTER_REAL_NODE: auto (default: only when this machine can run containers), 1 (must), 0 (never).
# Idempotent: what already runs is left running. Needs root and the control plane (hack/worlds/cluster/up.sh).
# hack/worlds/cluster/up.sh also calls it as `up.sh --wanted` (exit 0 when the node will come up, silently): it then
# builds the node's binaries (the kubelet, CoreDNS) in its own build, beside the control plane's.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
action=${1:-up}
case $action in up | --wanted) ;; *) die "usage: hack/worlds/node/up.sh [--wanted]" ;; esac
mode=${MPI_CLUSTER_REAL_NODE:-auto}
case $mode in 0|1|auto) ;; *) die "MPI_CLUSTER_REAL_NODE must be auto, 1 or 0 (got '$mode')" ;; esac
if [ "$action" = --wanted ]; then [ "$mode" != 0 ] && [ -z "$(unfit_reason)" ]; exit; fi
[ "$mode" != 0 ] || { nlog "MPI_CLUSTER_REAL_NODE=0: no real node"; exit 0; }
started=$(now_ms)

reason=$(unfit_reason)
if [ -n "$reason" ]; then
  [ "$mode" = 1 ] && die "MPI_CLUSTER_REAL_NODE=1 but this machine cannot run a real node: $reason"
  nlog "no real node on this machine ($reason); set MPI_CLUSTER_REAL_NODE=0 to silence this"
  exit 0
fi
apiserver_ready || die "the API server is not up: run hack/worlds/cluster/up.sh first"

# Binaries: the kubelet and CoreDNS (the plugins its Corefiles use) from hack/worlds/cluster/build.sh, which
# hack/worlds/cluster/up.sh has built them with (seconds when they are up to date). containerd's own ctr lists and
# removes images and containers for the scripts (no crictl: one build less).
bash "$NODE_DIR/../cluster/build.sh" kubelet coredns
bash "$NODE_DIR/packages.sh"

# render TEMPLATE OUT: fill @NAME@ placeholders from the shell variables of the same name.
render() {
  mkdir -p "$(dirname "$2")"
  python3 - "$1" "$2" <<'PY'
import os, re, sys
text = open(sys.argv[1]).read()
def value(m):
    if m.group(1) not in os.environ:
        sys.exit(f"render: {sys.argv[1]} needs {m.group(1)}")
    return os.environ[m.group(1)]
open(sys.argv[2], "w").write(re.sub(r"@([A-Z_]+)@", value, text))
PY
}
export CONTAINERD_SOCK CNI_BIN_DIR BRIDGE POD_CIDR POD_GATEWAY CLUSTER_DOMAIN NODE_TAINT_KEY
export SANDBOX_IMAGE=localhost/pause:${MPI_IMAGE_TAG:-local} CNI_CONF_DIR=$NODE_STATE/cni CA_FILE=$PKI/ca.crt
export KUBECONFIG=$ADMIN_KUBECONFIG
render "$NODE_DIR/containerd.toml" "$NODE_STATE/containerd.toml.new"
# A running containerd reads its config once: restart it when the config changed (its containers keep running).
if cmp -s "$NODE_STATE/containerd.toml.new" "$NODE_STATE/containerd.toml"; then rm "$NODE_STATE/containerd.toml.new"
else
  mv "$NODE_STATE/containerd.toml.new" "$NODE_STATE/containerd.toml"
  if [ -n "$(daemon_pid containerd)" ]; then nlog "containerd.toml changed: restarting containerd"; stop_daemon containerd; fi
fi
render "$NODE_DIR/cni.conflist" "$NODE_STATE/cni/10-mpi-node.conflist"
render "$NODE_DIR/kubelet.yaml" "$NODE_STATE/kubelet.yaml"
render "$NODE_DIR/Corefile" "$NODE_STATE/Corefile"

# Host networking: forwarding, the bridge (made here so CoreDNS can bind the gateway before the first pod),
# and the `kubernetes` Service: no kube-proxy, one DNAT to the API server on loopback (hence route_localnet).
sysctl -qw net.ipv4.ip_forward=1
ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
ip addr replace "$POD_GATEWAY/${POD_CIDR#*/}" dev "$BRIDGE"  # replace: idempotent, and the CNI bridge plugin may add it too
ip link set "$BRIDGE" up
sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"
nft -f - <<NFT
table ip mpi_node
delete table ip mpi_node
table ip mpi_node {
  chain prerouting {
    type nat hook prerouting priority -100;
    ip daddr $KUBERNETES_SERVICE_IP tcp dport 443 dnat to 127.0.0.1:$APISERVER_PORT
  }
  chain output {
    type nat hook output priority -100;
    ip daddr $KUBERNETES_SERVICE_IP tcp dport 443 dnat to 127.0.0.1:$APISERVER_PORT
  }
}
NFT

# The kernel settings the pod network relies on, checked and stated in the log. ip_forward and route_localnet are set
# above; bridge-nf-call-iptables is host-wide and left as it is: the node works with 0 and with 1, the production
# value (kube-proxy needs it; br_netfilter's default). With 1, packets between pods on the bridge go through the
# host's netfilter forward hook, so a forward chain that drops by default (Docker's FORWARD policy, a firewall)
# would cut the pods off from each other: refuse to start then, naming it.
kernel_settings() {
  local forward localnet bridge_nf drops
  forward=$(cat /proc/sys/net/ipv4/ip_forward)
  localnet=$(cat "/proc/sys/net/ipv4/conf/$BRIDGE/route_localnet")
  [ "$forward" = 1 ] || die "net.ipv4.ip_forward is $forward after setting it to 1: pods cannot leave the bridge"
  [ "$localnet" = 1 ] || die "route_localnet on $BRIDGE is $localnet: pods cannot reach the API server through 10.96.0.1"
  bridge_nf=$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo absent)
  if [ "$bridge_nf" = 1 ]; then
    drops=$(nft list ruleset 2>/dev/null | awk '/^table /{t=$2" "$3} /^\tchain /{c=$2} /hook forward/ && /policy drop/{print t" chain "c}')
    if command -v iptables-legacy >/dev/null && iptables-legacy -S FORWARD 2>/dev/null | grep -q '^-P FORWARD DROP'; then
      drops="$drops iptables-legacy FORWARD"
    fi
    [ -z "$drops" ] || die "net.bridge.bridge-nf-call-iptables=1 and a forward chain drops by default ($drops):" \
      "pod-to-pod traffic on $BRIDGE would be dropped; accept it there (iifname $BRIDGE oifname $BRIDGE accept)"
  fi
  nlog "kernel: net.ipv4.ip_forward=1, route_localnet=1 on $BRIDGE, net.bridge.bridge-nf-call-iptables=$bridge_nf"
}
kernel_settings

# containerd, then the images every pod needs (cached; imported only when containerd lacks that build).
start_containerd
# shellcheck disable=SC2086
bash "$NODE_DIR/../../build/images/build.sh" ${MPI_NODE_IMAGES:-pause openmpi4 openmpi5 mpich intel}

# The kubelet's identity: a client certificate from the cluster CA, in the system:nodes group (Node authorizer).
if [ ! -f "$NODE_STATE/kubelet.kubeconfig" ]; then
  key=$NODE_STATE/kubelet-client.key crt=$NODE_STATE/kubelet-client.crt
  (umask 077; openssl req -newkey rsa:2048 -nodes -keyout "$key" -out "$crt.csr" \
    -subj "/O=system:nodes/CN=system:node:$NODE_NAME" 2>/dev/null)
  printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$crt.ext"
  openssl x509 -req -in "$crt.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -out "$crt" -days 3650 \
    -sha256 -extfile "$crt.ext" 2>/dev/null
  rm -f "$crt.csr" "$crt.ext"
  kc=$NODE_STATE/kubelet.kubeconfig.tmp
  "$BIN/kubectl" config --kubeconfig="$kc" set-cluster local --server="https://127.0.0.1:$APISERVER_PORT" \
    --certificate-authority="$PKI/ca.crt" --embed-certs >/dev/null
  "$BIN/kubectl" config --kubeconfig="$kc" set-credentials kubelet --client-certificate="$crt" --client-key="$key" \
    --embed-certs >/dev/null
  "$BIN/kubectl" config --kubeconfig="$kc" set-context local --cluster=local --user=kubelet >/dev/null
  "$BIN/kubectl" config --kubeconfig="$kc" use-context local >/dev/null
  mv "$kc" "$NODE_STATE/kubelet.kubeconfig"
fi

# A kubelet registers its Node only when it starts: after a fresh control plane (etcd wiped) it must restart. So must
# CoreDNS: its watches carry the old etcd's resource versions and it answered NXDOMAIN for every new pod's name.
if [ -n "$(daemon_pid kubelet)" ] && ! kubectl_admin get "node/$NODE_NAME" >/dev/null 2>&1; then
  nlog "node $NODE_NAME is gone from the API server (fresh control plane): restarting the kubelet and CoreDNS"
  stop_daemon kubelet
  stop_daemon coredns
fi
start_daemon coredns "$BIN/coredns" -conf "$NODE_STATE/Corefile"
start_kubelet
nlog "real node $NODE_NAME Ready in $(since "$started") s (taint $NODE_TAINT_KEY=true:NoSchedule, label $NODE_LABEL)"
