#!/usr/bin/env bash
# usage: hack/build/deb-unpack.sh PACKAGE PROGRAM...
# Prints the directory holding the PROGRAMs (/usr/bin/PROGRAM) of Debian's PACKAGE, unpacked once from the package
# into the cache: nothing is installed on the system and no daemon is started (a daemon package's postinst would
# start its service). For programs the tests run as their own processes: Debian's `prometheus` (prometheus,
# promtool: tests/runner/test_alerts.py, tests/integration/test_alerts_fire.py) and `docker-registry` (the CNCF
# distribution registry: tests/e2e/test_image_archive.py). Needs apt-get and Debian's archive, as
# hack/worlds/node/packages.sh does.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PACKAGE PROGRAM..." >&2; exit 2; }
package=$1; shift
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
candidate() { apt-cache policy "$package" 2>/dev/null | awk '/Candidate:/ {print $2}'; }
version=$(candidate)
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  apt-get update -qq >/dev/null 2>&1 || true  # a fresh machine's package lists may be empty
  version=$(candidate)
fi
[ -n "$version" ] && [ "$version" != "(none)" ] || { echo "Debian's package $package is not available here" >&2; exit 1; }
dir=$cache/deb/$package/${version//[:+~]/_}
have() { local p; for p in "$@"; do [ -x "$dir/bin/$p" ] || return 1; done; }
if ! have "$@"; then
  mkdir -p "$cache/deb/$package"
  exec 9>"$cache/deb/$package/.lock"
  flock 9
  if ! have "$@"; then
    work=$(mktemp -d "$cache/deb/$package/.unpack.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    # As root, apt would fetch as its sandbox user, who may not write here.
    (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root "$package=$version" >/dev/null) \
      || { echo "apt-get download $package=$version failed" >&2; exit 1; }
    dpkg-deb -x "$work"/*.deb "$work/root"
    mkdir -p "$work/out/bin"
    for p in "$@"; do
      [ -x "$work/root/usr/bin/$p" ] || { echo "$package $version has no /usr/bin/$p" >&2; exit 1; }
      mv "$work/root/usr/bin/$p" "$work/out/bin/"
    done
    rm -rf "$dir"
    mv "$work/out" "$dir"
  fi
fi
echo "$dir/bin"
