#!/usr/bin/env bash
# Stops the gang scheduler of hack/worlds/gang/up.sh. The PodGroup CRD stays (jobs' PodGroups may still exist; the
# operator deletes a job's with the job).
set -euo pipefail
# shellcheck source=../cluster/lib.sh
source "$(dirname "$0")/../cluster/lib.sh"
stop_components --strays scheduler-plugins
