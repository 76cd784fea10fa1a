#!/usr/bin/env bash
# Takes the real node down: the Node object (its pods go with it), the kubelet, every container and pod sandbox,
# CoreDNS, containerd, leftover mounts, network namespaces and IPs, the bridge and the DNAT table.
# Imported images stay in containerd's store and the image cache. Safe to run when nothing is up.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
  # Without root there can be no real node of ours, unless a root run left its pid files.
  compgen -G "$PIDS/node-*.pid" >/dev/null && die "hack/worlds/node/down.sh: the real node was started as root; run this as root"
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
# Every container and pod sandbox (containerd keeps their shims running when it stops): killed and removed with
# containerd's own ctr. Their network namespaces, mounts and IPs go below, by hand.
if [ -n "$(daemon_pid containerd)" ]; then
  # A pod's containers share their sandbox's shim: deleting the sandbox's task first ends the others' connection
  # ("ttrpc: closed"), so the tasks are deleted one by one, errors aside, and what is left is named.
  for id in $(ctr_node tasks ls -q 2>/dev/null); do ctr_node tasks rm -f "$id" >/dev/null 2>&1 || true; done
  left=$(ctr_node tasks ls -q 2>/dev/null | xargs) || true
  [ -z "$left" ] || nlog "tasks left running in containerd: $left"
  mapfile -t ids < <(ctr_node containers ls -q 2>/dev/null || true)
  [ "${#ids[@]}" = 0 ] || ctr_node containers rm "${ids[@]}" >/dev/null 2>&1 || nlog "could not remove every container"
fi
stop_daemon coredns
stop_daemon containerd
awk '{print $2}' /proc/mounts | { grep -E "^($KUBELET_ROOT/|/run/containerd/|/run/netns/cni-)" || true; } | sort -r |
  while read -r mnt; do umount -l "$mnt" 2>/dev/null || true; done
for ns in /run/netns/cni-*; do [ ! -e "$ns" ] || ip netns delete "${ns##*/}" 2>/dev/null || true; done
rm -rf /var/lib/cni/networks/mpi-node
nft delete table ip mpi_node 2>/dev/null || true
ip link del "$BRIDGE" 2>/dev/null || true
nlog "real node down"
