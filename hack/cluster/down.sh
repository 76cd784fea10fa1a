#!/usr/bin/env bash
# Stop every process cluster-up started, by PID (newest first). Certificates and built binaries are kept.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
  c=${COMPONENTS[i]}
  pid=$(component_pid "$c")
  if [ -n "$pid" ]; then log "stopping $c (pid $pid)"; fi
  stop_component "$c"
done
rm -rf "$ETCD_DATA"
log "cluster stopped"
