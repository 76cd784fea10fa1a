#!/usr/bin/env bash
# The whole test suite: unit tests, then (with a cluster) integration tests. Used by `make test` and CI.
set -euo pipefail
source "$(dirname "$0")/env.sh"
set +e
.venv/bin/python -m pytest tests -q --durations=25 --timeout=1200 "$@"
rc=$?
set -e
# pytest's 5 means no test ran: that is a failure here, never a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
