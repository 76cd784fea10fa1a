#!/usr/bin/env bash
# A MultiKueue worker for the kueue tier (docs/kueue.md): a second local cluster (kwok nodes only, its own state in
# $CACHE/multikueue-worker, ports +200) with the MPIJob CRD, and its own Kueue, which runs as a pod on the first
# cluster's real node and talks to the worker's API server (hack/worlds/kueue/worker.py says how). Run after
# hack/worlds/kueue/up.sh (which imports Kueue's image). Prints the worker's kubeconfig.
#   hack/worlds/kueue/worker.sh [up]     idempotent
#   hack/worlds/kueue/worker.sh down     removes the worker's Kueue and stops the worker cluster
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
log() { printf '[kueue-worker %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
worker_cache=$CACHE/multikueue-worker
worker_env=(MPI_OPERATOR_CACHE="$worker_cache" MPI_CLUSTER_PORT_OFFSET=200 MPI_CLUSTER_REAL_NODE=0 MPI_CLUSTER_NODES=2)
worker_kubeconfig=$worker_cache/cluster/kubeconfig
kubectl_worker() { "$BIN/kubectl" --kubeconfig "$worker_kubeconfig" "$@"; }

if [ "${1:-up}" = down ]; then
  kubectl_admin delete namespace kueue-worker --ignore-not-found --wait=true --timeout=120s >/dev/null
  [ ! -d "$worker_cache" ] || env "${worker_env[@]}" bash "$here/../cluster/down.sh" >&2
  exit 0
fi
start=$SECONDS
# The worker cluster, from the same binaries (a second path to them: its stray-process cleanup matches by path).
mkdir -p "$worker_cache"
ln -sfn "$BIN" "$worker_cache/bin"
env "${worker_env[@]}" bash "$here/../cluster/up.sh" >&2
kubectl_worker apply --server-side --force-conflicts -f "$here/../../../roles/crds/files/mpijobs.kubeflow.org.yaml" >/dev/null

# The serving certificate of the worker's Kueue: its webhooks are called at the real node's address.
node_ip=$(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
certs=$worker_cache/kueue-certs
if [ "$(cat "$certs/ip" 2>/dev/null)" != "$node_ip" ]; then
  rm -rf "$certs"
  mkdir -p "$certs"
  (cd "$certs"
   openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=kueue-worker-ca -keyout ca.key -out ca.crt
   openssl req -newkey rsa:2048 -nodes -subj /CN=kueue-worker-webhook -keyout tls.key -out tls.csr
   printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "$node_ip" >ext.cnf
   openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile ext.cnf -out tls.crt
   echo "$node_ip" >ip) >/dev/null 2>&1
fi

kubectl_admin kustomize "$CACHE/kueue/$version/config/default" |
  "$python" "$here/worker.py" --image "localhost/kueue:$version" --node "$NODE_NAME" --node-ip "$node_ip" \
    --certs "$certs" --kubeconfig "$worker_kubeconfig" \
    --worker-out "$worker_cache/kueue-worker.yaml" --manager-out "$worker_cache/kueue-manager-side.yaml"
kubectl_worker apply --server-side --force-conflicts -f "$worker_cache/kueue-worker.yaml" >/dev/null
kubectl_worker wait --for=condition=Established crd --all --timeout=60s >/dev/null
kubectl_admin apply --server-side --force-conflicts -f "$worker_cache/kueue-manager-side.yaml" >/dev/null
kubectl_admin -n kueue-worker rollout status deployment/kueue-worker --timeout=180s >/dev/null

kueue_answers kubectl_worker kueue-worker kueue-worker
log "worker cluster and its Kueue ready in $((SECONDS - start)) s"
echo "$worker_kubeconfig"
