#!/usr/bin/env bash
# Starts Kueue (KUEUE_VERSION, v0.17.0 unless set) on the local cluster's real node, as its release manifests install
# it (hack/worlds/kueue/manifests.py says what differs here and why), and waits until its webhooks answer. Idempotent: a
# second run applies the same objects and returns once Kueue is ready. Needs root (the image goes into containerd).
#   hack/worlds/kueue/up.sh       the cluster and the real node must be up (make cluster-up)
#   hack/worlds/kueue/down.sh     removes it again (keeps Kueue's CRDs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
ref=localhost/kueue:$version
log() { printf '[kueue %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
start=$SECONDS

kubectl_admin get crd mpijobs.kubeflow.org >/dev/null 2>&1 || {
  log "the MPIJob CRD mpijobs.kubeflow.org is not installed: install it first (ansible-playbook playbooks/install.yml),"
  log "then Kueue: it sets up its MPIJob integration only for an API the server has"
  exit 2
}
tar=$(bash "$here/build.sh")
# Imported once per build (the tar's digest labels containerd's copy).
key=$(sha256sum "$tar" | cut -c1-16)
if ! ctr -n k8s.io images ls "name==$ref" 2>/dev/null | grep -q "mpi.operator/recipe=$key"; then
  ctr -n k8s.io images import "$tar" >/dev/null
  ctr -n k8s.io images label "$ref" "mpi.operator/recipe=$key" >/dev/null
  log "imported $ref"
fi

manifests=$STATE/kueue-$version.yaml
kubectl_admin kustomize "$CACHE/kueue/$version/config/default" |
  "$python" "$here/manifests.py" --image "$ref" --node "$NODE_NAME" --api-server "127.0.0.1:$APISERVER_PORT" \
    >"$manifests.partial"
mv -f "$manifests.partial" "$manifests"
# Server-side: the Workload CRD is larger than client-side apply's annotation may be.
kubectl_admin apply --server-side --force-conflicts -f "$manifests" >/dev/null
kubectl_admin wait --for=condition=Established crd --all --timeout=60s >/dev/null
kubectl_admin -n kueue-system rollout status deployment/kueue-controller-manager --timeout=180s >/dev/null

# Ready when its MPIJob webhook answers.
kueue_answers kubectl_admin kueue-system kueue-controller-manager
log "Kueue $version ready on $NODE_NAME in $((SECONDS - start)) s (manifests: $manifests)"
