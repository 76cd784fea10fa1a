#!/usr/bin/env bash
# Print the path of the local cluster's cluster-admin kubeconfig (and nothing else).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -f "$ADMIN_KUBECONFIG" ] || die "no kubeconfig yet: run 'make cluster-up'"
echo "$ADMIN_KUBECONFIG"
