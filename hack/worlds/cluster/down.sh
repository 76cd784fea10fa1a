#!/usr/bin/env bash
# Stop every process cluster-up started, by PID (and any other process running our binaries, whose pid file was
# lost). Certificates and built binaries are kept.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cluster_lock
# The real node first, while the API server can still see its pods go.
bash "$CLUSTER_DIR/../node/down.sh"
stop_cluster --strays
rm -rf "$ETCD_DATA"
log "cluster stopped"
