#!/usr/bin/env bash
# Removes what hack/worlds/kueue/up.sh started: its webhooks first (while they are registered and Kueue is gone, no
# MPIJob can be created), then its cluster-wide RBAC and its namespace, and a MultiKueue worker cluster with its Kueue.
# Kueue's CRDs stay (and with them any queue objects left).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"
kubectl_admin delete mutatingwebhookconfiguration,validatingwebhookconfiguration,apiservice \
  -l app.kubernetes.io/name=kueue --ignore-not-found >/dev/null
kubectl_admin delete namespace kueue-system --ignore-not-found --wait=true --timeout=120s >/dev/null
kubectl_admin delete clusterrole,clusterrolebinding -l app.kubernetes.io/name=kueue --ignore-not-found >/dev/null
# And a MultiKueue worker, if one was started (hack/worlds/kueue/worker.sh).
bash "$here/worker.sh" down
