#!/usr/bin/env bash
# Kueue from the Go module proxy, for the tests that put Kueue in front of the operator (docs/kueue.md): the `kueue`
# manager built static into $CACHE/bin/kueue; an image of it, localhost/kueue:<version> (the binary as /manager, as
# Kueue's own image has it) in $CACHE/kueue/<version>/kueue.tar for `ctr images import`; and Kueue's kustomize tree
# (config/: CRDs, RBAC, manager, webhooks, from the same module) in $CACHE/kueue/<version>/config, which
# hack/worlds/kueue/up.sh renders as Kueue's release manifests are. Built once per version, Go toolchain and this
# script; prints the image tar's path.
#   hack/worlds/kueue/build.sh            KUEUE_VERSION=v0.17.0 unless set
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
version=${KUEUE_VERSION:-v0.17.0}
bin=$cache/bin/kueue
dir=$cache/kueue/$version
image=$dir/kueue.tar
log() { printf '[kueue %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
command -v go >/dev/null || { log "Go is required to build Kueue"; exit 2; }

recipe=$( { echo "$version"; go env GOVERSION; cat "$0"; } | sha256sum | cut -c1-16)
mkdir -p "$cache/bin/.stamps" "$cache/kueue"
exec 9>"$cache/kueue/.build.lock"
flock 9
if [ -x "$bin" ] && [ "$(cat "$cache/bin/.stamps/kueue" 2>/dev/null)" = "$recipe" ] && [ -f "$image" ]; then
  echo "$image"
  exit 0
fi
start=$SECONDS
log "building sigs.k8s.io/kueue/cmd/kueue@$version (the first time about 10 minutes on 2 cores) ..."
out=$(mktemp -d "$cache/bin/.kueue.XXXXXX")
trap 'rm -rf "$out"' EXIT
# Static, no DWARF, paths trimmed: as the cluster's binaries (hack/worlds/cluster/build.sh).
CGO_ENABLED=0 GOBIN=$out go install -trimpath -gcflags=all=-dwarf=false -ldflags="-s -w" \
  "sigs.k8s.io/kueue/cmd/kueue@$version"
mv -f "$out/kueue" "$bin"
# Kueue's kustomize tree of the same version, from the module the build just used.
src=$(go env GOMODCACHE)/sigs.k8s.io/kueue@$version/config
[ -d "$src/default" ] || { log "no kustomize tree at $src"; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
cp -r "$src" "$dir/config"
chmod -R u+w "$dir/config"
# The image: the static binary alone, run as a non-root user as Kueue's distroless image runs it.
rootfs=$out/rootfs
mkdir -p "$rootfs/tmp"
cp "$bin" "$rootfs/manager"
chmod 1777 "$rootfs/tmp"
python3 "$here/../../build/images/pack.py" "$rootfs" "$image" "localhost/kueue:$version" \
  '{"Entrypoint": ["/manager"], "User": "65532:65532", "WorkingDir": "/"}'
echo "$recipe" >"$cache/bin/.stamps/kueue"
log "built $bin ($(du -m "$bin" | cut -f1) MB) and its image in $((SECONDS - start)) s"
echo "$image"
