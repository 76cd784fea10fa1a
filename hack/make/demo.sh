#!/usr/bin/env bash
# `make demo`: the main job on a fresh machine. Brings up the local cluster (building it the first time),
# installs the operator and runs an example MPIJob to completion, printing the launcher's log.
# - With the real node (containerd + kubelet, where this machine can run one): the operator image is built from
#   the Containerfile, installed in-cluster by playbooks/install.yml, and examples/local/pi-real-node.yaml runs
#   real mpirun across two worker pods.
# - Without it: the operator runs as a local process and examples/local/pi.yaml runs on the simulated nodes.
# The operator watches only MPI_DEMO_NAMESPACE (default mpi-demo), so it never touches other jobs.
set -euo pipefail
source "$(dirname "$0")/env.sh"
ns=${MPI_DEMO_NAMESPACE:-mpi-demo}
bash hack/worlds/cluster/up.sh
KUBECONFIG=$(bash hack/worlds/cluster/kubeconfig.sh)
export KUBECONFIG K8S_AUTH_KUBECONFIG=$KUBECONFIG
kubectl=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}/bin/kubectl
"$kubectl" create namespace "$ns" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null

submit() {
  # A previous demo's job is deleted first, so the demo really runs again.
  ansible-playbook playbooks/submit.yml -e mpijob_src="$1" -e mpijob_namespace="$ns" -e mpijob_state=absent >/dev/null
  ansible-playbook playbooks/submit.yml -e mpijob_src="$1" -e mpijob_namespace="$ns" -e mpijob_wait_timeout=600
}

if "$kubectl" get node mpi-real-node >/dev/null 2>&1; then
  read -r image _ tag < <(bash hack/build/images/build.sh --print operator | tail -n 1)
  echo "== installing the operator in-cluster (${image%:*}:$tag), watching namespace $ns"
  ansible-playbook playbooks/install.yml -e mpi_operator_namespace_name=mpi-operator-demo \
    -e mpi_operator_watch_namespace="$ns" -e mpi_operator_image_repository="${image%:*}" \
    -e mpi_operator_image_tag="$tag" -e mpi_operator_image_pull_policy=Never \
    -e '{"mpi_operator_node_selector": {"mpi.operator/real-node": "true"}}' \
    -e '{"mpi_operator_tolerations": [{"key": "mpi.operator/real-node", "operator": "Exists", "effect": "NoSchedule"}]}'
  echo "== running examples/local/pi-real-node.yaml (real mpirun, 2 workers x 2 slots)"
  submit examples/local/pi-real-node.yaml
else
  echo "== no real node on this machine: the operator runs as a local process, the job on simulated nodes"
  log=$(mktemp)
  bash hack/make/run.sh --namespace "$ns" >"$log" 2>&1 &
  operator=$!
  trap 'kill "$operator" 2>/dev/null; wait "$operator" 2>/dev/null; rm -f "$log"' EXIT
  submit examples/local/pi.yaml
fi
echo "== demo done: the MPIJob Succeeded"
