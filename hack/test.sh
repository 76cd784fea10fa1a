#!/usr/bin/env bash
# The test suite, or one tier of it: `hack/test.sh [pure|runner|cluster|realnode] [pytest args]`. Without a tier,
# every tier (`make test`, CI). The tiers, by what they need (tests/conftest.py marks them by folder):
#   pure      tests/unit         no processes, seconds               make test-unit
#   runner    tests/runner       ansible-runner/-playbook/-test, bash processes; no cluster   make test-runner
#   cluster   tests/integration  an API server (the local kwok cluster, or $KUBECONFIG)       make test-cluster
#   realnode  tests/e2e + tests marked realnode: the real kubelet + containerd node            make test-realnode
set -euo pipefail
source "$(dirname "$0")/env.sh"

tier=all
case "${1:-}" in pure | runner | cluster | realnode) tier=$1; shift ;; esac
declare -A select=([pure]="pure" [runner]="runner" [cluster]="cluster and not realnode" [realnode]="realnode")

# Everything slow to build is built first, outside pytest's per-test timeout: on a fresh machine the local cluster
# (Kubernetes from source), the real node's images, the operator image and the Kubeflow peer take 30-40 minutes cold,
# and seconds once cached. A reachable $KUBECONFIG of the user's own is used as it is (the fixtures decide the same).
if [ "$tier" = all ] || [ "$tier" = cluster ] || [ "$tier" = realnode ]; then
  local_kubeconfig=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}/cluster/kubeconfig
  users_cluster_answers() {
    .venv/bin/python -c 'from kubernetes import client, config
client.VersionApi(config.new_client_from_config()).get_code(_request_timeout=5)' >/dev/null 2>&1
  }
  if [ -z "${KUBECONFIG:-}" ] || [ "$(realpath -m "$KUBECONFIG")" = "$(realpath -m "$local_kubeconfig")" ] ||
     ! users_cluster_answers; then
    bash hack/cluster/up.sh
    if KUBECONFIG=$local_kubeconfig "$(dirname "$local_kubeconfig")/../bin/kubectl" get node mpi-real-node >/dev/null 2>&1; then
      # The images the e2e jobs run that no fixture builds ahead: the Horovod one compiles Horovod when cold.
      nice bash hack/images/build.sh operator horovod kubectl-delivery >/dev/null
    fi
  fi
  if [ "$tier" != realnode ]; then bash hack/kubeflow.sh >/dev/null; fi  # the differential tests' peer
fi

args=(tests -q --durations=25 --timeout=1200)
if [ "$tier" != all ]; then args+=(-m "${select[$tier]}"); fi
set +e
.venv/bin/python -m pytest "${args[@]}" "$@"
rc=$?
set -e
# pytest's 5 means no test ran: that is a failure here, never a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
