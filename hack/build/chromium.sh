#!/usr/bin/env bash
# Prints the path of a headless-capable Chromium: Debian's package, installed once (root; the machine has the package in
# its registry, and Chromium cannot download a browser of its own here). For the docsite test (tests/runner/test_docsite.py).
set -euo pipefail
if ! command -v chromium >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "chromium is not installed (apt-get install chromium, as root)" >&2; exit 3; }
  exec 9>"${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}/.apt.lock"
  flock 9
  command -v chromium >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium >/dev/null
fi
command -v chromium
