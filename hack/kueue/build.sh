#!/usr/bin/env bash
# Kueue from the Go module proxy, for the tests that put Kueue in front of the operator (issue 27, docs/kueue.md):
# the `kueue` manager built static into $CACHE/bin/kueue, and its CRDs (from the same module) in
# $CACHE/kueue/<version>/crds. Built once per version, Go toolchain and this script; prints the binary's path.
#   hack/kueue/build.sh            KUEUE_VERSION=v0.17.0 unless set
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
version=${KUEUE_VERSION:-v0.17.0}
bin=$cache/bin/kueue
crds=$cache/kueue/$version/crds
log() { printf '[kueue %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
command -v go >/dev/null || { log "Go is required to build Kueue"; exit 2; }

recipe=$( { echo "$version"; go env GOVERSION; cat "$0"; } | sha256sum | cut -c1-16)
mkdir -p "$cache/bin/.stamps" "$cache/kueue"
exec 9>"$cache/kueue/.build.lock"
flock 9
if [ -x "$bin" ] && [ "$(cat "$cache/bin/.stamps/kueue" 2>/dev/null)" = "$recipe" ] && [ -d "$crds" ]; then
  echo "$bin"
  exit 0
fi
start=$SECONDS
log "building sigs.k8s.io/kueue/cmd/kueue@$version (the first time about 10 minutes on 2 cores) ..."
out=$(mktemp -d "$cache/bin/.kueue.XXXXXX")
trap 'rm -rf "$out"' EXIT
# Static, no DWARF, paths trimmed: as the cluster's binaries (hack/cluster/build.sh).
CGO_ENABLED=0 GOBIN=$out go install -trimpath -gcflags=all=-dwarf=false -ldflags="-s -w" \
  "sigs.k8s.io/kueue/cmd/kueue@$version"
mv -f "$out/kueue" "$bin"
# The CRDs of the same version, from the module the build just used.
src=$(go env GOMODCACHE)/sigs.k8s.io/kueue@$version/config/components/crd/bases
[ -d "$src" ] || { log "no CRDs at $src"; exit 1; }
rm -rf "$crds"
mkdir -p "$crds"
cp "$src"/*.yaml "$crds/"
chmod -R u+w "$crds"
echo "$recipe" >"$cache/bin/.stamps/kueue"
log "built $bin ($(du -m "$bin" | cut -f1) MB) and $(ls "$crds" | wc -l) CRDs in $((SECONDS - start)) s"
echo "$bin"
