#!/usr/bin/env bash
# Prints the directory holding Debian's `prometheus` and `promtool` (the package's two binaries), unpacked once from
# the package into the cache: no daemon is started and nothing is installed on the system (the package's own
# postinst would start a Prometheus service). The alert tests use them (tests/runner/test_alerts.py: promtool's
# unit tests of roles/operator/files/prometheus-rules.yml; tests/integration/test_alerts_fire.py: a real Prometheus
# scraping the running operator). Needs apt-get and Debian's package archive (as hack/node/packages.sh does).
set -euo pipefail
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
version=$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  apt-get update -qq >/dev/null 2>&1 || true
  version=$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')
fi
[ -n "$version" ] && [ "$version" != "(none)" ] || { echo "Debian's prometheus package is not available here" >&2; exit 1; }
dir=$cache/prometheus/${version//[:+~]/_}
if [ ! -x "$dir/bin/promtool" ] || [ ! -x "$dir/bin/prometheus" ]; then
  mkdir -p "$cache/prometheus"
  exec 9>"$cache/prometheus/.lock"
  flock 9
  if [ ! -x "$dir/bin/promtool" ] || [ ! -x "$dir/bin/prometheus" ]; then
    work=$(mktemp -d "$cache/prometheus/.fetch.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    # As root, apt would fetch as its sandbox user, who may not write here.
    (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root "prometheus=$version" >/dev/null) || { echo "apt-get download prometheus=$version failed" >&2; exit 1; }
    dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
    mkdir -p "$work/out/bin"
    mv "$work/root/usr/bin/prometheus" "$work/root/usr/bin/promtool" "$work/out/bin/"
    rm -rf "$dir"
    mv "$work/out" "$dir"
  fi
fi
echo "$dir/bin"
