#!/usr/bin/env bash
# Print each component's PID, resident memory (MiB) and health; exit 1 if any is down.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
rc=0 total=0
printf '%-24s %8s %9s  %s\n' COMPONENT PID RSS_MiB HEALTH
for c in "${COMPONENTS[@]}"; do
  pid=$(component_pid "$c")
  if [ -z "$pid" ]; then printf '%-24s %8s %9s  %s\n' "$c" - - down; rc=1; continue; fi
  rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  total=$((total + rss_kb))
  health=healthy; component_healthy "$c" || { health=unhealthy; rc=1; }
  printf '%-24s %8s %9s  %s\n' "$c" "$pid" "$(mib "$rss_kb")" "$health"
done
printf '%-24s %8s %9s\n' total '' "$(mib "$total")"
echo "kubeconfig: $ADMIN_KUBECONFIG; logs: $LOGS"
exit "$rc"
