#!/usr/bin/env bash
# Volcano's scheduler from the Go module proxy: `vc-scheduler` (cmd/scheduler of volcano.sh/volcano, VOLCANO_VERSION,
# v1.14.1 unless set) built static into $CACHE/bin/vc-scheduler, and the CRDs it watches (config/crd/volcano/bases:
# queues, podgroups, hypernodes, numatopologies) beside it in $CACHE/volcano/<version>/. Built in a copy of the
# module's own source, with one change to its go.mod: Volcano replaces volcano.sh/apis with ./staging/src/volcano.sh/apis,
# a folder with a go.mod of its own that the module's zip leaves out; the build takes volcano.sh/apis at
# VOLCANO_APIS (v1.14.0, the one the proxy serves for this release; v1.14.1 is refused). v1.15.0 (Kubernetes 1.35)
# needs a newer volcano.sh/apis than the proxy serves. Built once per version, Go toolchain and this script; prints
# the binary's path.
#   hack/worlds/volcano/build.sh
set -euo pipefail
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
version=${VOLCANO_VERSION:-v1.14.1}
apis=${VOLCANO_APIS:-v1.14.0}
bin=$cache/bin/vc-scheduler
dir=$cache/volcano/$version
log() { printf '[volcano %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
command -v go >/dev/null || { log "Go is required to build Volcano's scheduler"; exit 2; }

recipe=$( { echo "$version $apis"; go env GOVERSION; cat "$0"; } | sha256sum | cut -c1-16)
mkdir -p "$cache/bin/.stamps" "$cache/volcano"
exec 9>"$cache/volcano/.build.lock"
flock 9
crds=(scheduling.volcano.sh_queues scheduling.volcano.sh_podgroups topology.volcano.sh_hypernodes
  nodeinfo.volcano.sh_numatopologies)
if [ -x "$bin" ] && [ "$(cat "$cache/bin/.stamps/vc-scheduler" 2>/dev/null)" = "$recipe" ] && [ -f "$dir/crds.yaml" ]; then
  echo "$bin"
  exit 0
fi
start=$SECONDS
log "building volcano.sh/volcano/cmd/scheduler@$version (the first time about 4 minutes on 2 cores) ..."
GOFLAGS=-mod=mod go mod download "volcano.sh/volcano@$version" >&2
src=$(go env GOMODCACHE)/volcano.sh/volcano@$version
work=$(mktemp -d "$cache/volcano/.src.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$src/." "$work"
chmod -R u+w "$work"
sed -i -E "s#^(\s*volcano\.sh/apis =>) \./staging/src/volcano\.sh/apis\$#\1 volcano.sh/apis $apis#" "$work/go.mod"
grep -q "volcano.sh/apis => volcano.sh/apis $apis" "$work/go.mod" || { log "go.mod's volcano.sh/apis replace not found"; exit 1; }
# Static, no DWARF, paths trimmed: as the cluster's binaries (hack/worlds/cluster/build.sh).
(cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags=all=-dwarf=false -ldflags="-s -w" \
   -o "$work/vc-scheduler" ./cmd/scheduler) >&2
mkdir -p "$dir"
for crd in "${crds[@]}"; do
  cat "$work/config/crd/volcano/bases/$crd.yaml"
  echo "---"
done >"$dir/crds.yaml"
mv -f "$work/vc-scheduler" "$bin"
echo "$recipe" >"$cache/bin/.stamps/vc-scheduler"
log "built $bin ($(du -m "$bin" | cut -f1) MB) in $((SECONDS - start)) s"
echo "$bin"
