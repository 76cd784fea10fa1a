# Shared by hack/worlds/kueue/*.sh (sourced): the local cluster's and real node's paths (hack/worlds/node/lib.sh), the
# Kueue version, the Python with PyYAML, and the readiness probe of a Kueue.
# shellcheck source=../node/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../node/lib.sh"
kueue_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=${KUEUE_VERSION:-v0.17.0}
python=$kueue_dir/../../../.venv/bin/python
[ -x "$python" ] || python=python3

# kueue_answers KUBECTL_FUNCTION NAMESPACE DEPLOYMENT: waits (120 s at most) until that cluster's Kueue MPIJob webhook
# answers: a dry-run MPIJob with a queue name comes back suspended. Else prints the Deployment's log (on the manager
# cluster, where both Kueues run) and fails.
kueue_answers() {
  local kubectl=$1 namespace=$2 deployment=$3 probe
  probe='{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
    "metadata": {"name": "kueue-probe", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "probe"}},
    "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {"spec": {"containers": [{"name": "l", "image": "x"}]}}}}}}'
  for _ in $(seq 1 120); do
    [ "$(echo "$probe" | "$kubectl" create --dry-run=server -f - -o 'jsonpath={.spec.runPolicy.suspend}' 2>/dev/null)" != true ] ||
      return 0
    sleep 1
  done
  log "the MPIJob webhook of $namespace/$deployment does not answer after 120 s; its log:"
  kubectl_admin -n "$namespace" logs "deployment/$deployment" --tail=40 >&2 || true
  return 1
}
