#!/usr/bin/env bash
# Deletes the kind cluster of hack/worlds/kind/up.sh (KIND_CLUSTER) and its podman network; keeps the cached images and
# binaries (podman rmi localhost/mpi-kind-node:<key> frees the node image).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v podman >/dev/null && [ -x "$bin/kind" ] || { log "no podman or kind: nothing to delete"; exit 0; }
if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
  kind delete cluster --name "$KIND_CLUSTER"
fi
rm -f "${KIND_KUBECONFIG:-$cache/kind/$KIND_CLUSTER.kubeconfig}"
# The network is shared by every kind cluster on this machine: removed only when no container uses it.
if podman network exists "$KIND_NETWORK" && [ -z "$(podman ps -aq --filter network="$KIND_NETWORK")" ]; then
  podman network rm "$KIND_NETWORK" >/dev/null
fi
log "kind cluster $KIND_CLUSTER deleted"
