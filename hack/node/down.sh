#!/usr/bin/env bash
# Takes the real node down: the Node object (its pods go with it), the kubelet, every pod sandbox (so CNI
# releases IPs and network namespaces), CoreDNS, containerd, leftover mounts, the bridge and the DNAT table.
# Imported images stay in containerd's store and the image cache. Safe to run when nothing is up.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
  # Without root there can be no real node of ours, unless a root run left its pid files.
  compgen -G "$PIDS/node-*.pid" >/dev/null && die "hack/node/down.sh: the real node was started as root; run this as root"
  exit 0
fi

# The bridge, the DNAT table, the CNI network namespaces and the mounts are host-wide: only the cluster whose state
# holds the node (up.sh rendered its config there) may take them down. A second cluster (MPI_CLUSTER_PORT_OFFSET with
# its own cache, as the scripts' own tests start) going down must leave the main cluster's pods their network.
if [ ! -d "$NODE_STATE" ]; then
  exit 0
fi

if apiserver_ready && kubectl_admin get node "$NODE_NAME" >/dev/null 2>&1; then
  kubectl_admin delete node "$NODE_NAME" --wait=false >/dev/null
fi
stop_daemon kubelet
if [ -n "$(daemon_pid containerd)" ] && [ -x "$BIN/crictl" ]; then
  crictl_node rmp --all --force >/dev/null 2>&1 || nlog "crictl rmp failed; removing what is left by hand"
fi
stop_daemon coredns
stop_daemon containerd
# Sandboxes removed through CRI leave nothing; this is for a crashed containerd or kubelet.
awk '{print $2}' /proc/mounts | { grep -E "^($KUBELET_ROOT/|/run/containerd/|/run/netns/cni-)" || true; } | sort -r |
  while read -r mnt; do umount -l "$mnt" 2>/dev/null || true; done
for ns in /run/netns/cni-*; do [ ! -e "$ns" ] || ip netns delete "${ns##*/}" 2>/dev/null || true; done
rm -rf /var/lib/cni/networks/mpi-node
nft delete table ip mpi_node 2>/dev/null || true
ip link del "$BRIDGE" 2>/dev/null || true
nlog "real node down"
