#!/usr/bin/env bash
# Stop every process cluster-up started, by PID. Certificates and built binaries are kept.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cluster_lock
stop_cluster
rm -rf "$ETCD_DATA"
log "cluster stopped"
