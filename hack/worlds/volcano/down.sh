#!/usr/bin/env bash
# Stops Volcano's scheduler of hack/worlds/volcano/up.sh. Its CRDs stay (jobs' PodGroups may still exist; the operator
# deletes a job's with the job).
set -euo pipefail
# shellcheck source=../cluster/lib.sh
source "$(dirname "$0")/../cluster/lib.sh"
stop_components --strays vc-scheduler
