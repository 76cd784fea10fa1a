#!/usr/bin/env bash
# scheduler-plugins from the Go module proxy, the version the Kubeflow MPI Operator v0.8.2's go.mod names: its
# kube-scheduler with the Coscheduling plugin (cmd/scheduler) built static into $CACHE/bin/scheduler-plugins, and its
# PodGroup CRD (config/crd/bases) beside it in $CACHE/scheduler-plugins/<version>/. Built in a copy of the module's own
# source, so that its go.mod's `replace` lines apply (`go install pkg@version` refuses a module that has them), with one
# change: they pin Kubernetes 1.34.7 and its staging modules, some of which the Go module proxy does not serve
# (k8s.io/csi-translation-lib v0.34.7: 403); they pin v1.34.4 here (SCHEDULER_PLUGINS_KUBE), the newest 1.34 patch
# release the proxy serves whole. Not the local cluster's 1.35: scheduler-plugins 0.34 does not compile against 1.35's
# scheduler framework (moved to k8s.io/kube-scheduler/framework); a 1.34 scheduler in front of a 1.35 API server is
# within Kubernetes' version skew policy. Built once per version, Go toolchain and this script; prints the binary's
# path.
#   hack/worlds/gang/build.sh            SCHEDULER_PLUGINS_VERSION=v0.34.7 unless set
set -euo pipefail
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
version=${SCHEDULER_PLUGINS_VERSION:-v0.34.7}
kube=${SCHEDULER_PLUGINS_KUBE:-v1.34.4}
staging=v0.${kube#v1.}
bin=$cache/bin/scheduler-plugins
dir=$cache/scheduler-plugins/$version
log() { printf '[gang %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
command -v go >/dev/null || { log "Go is required to build scheduler-plugins"; exit 2; }

recipe=$( { echo "$version $kube"; go env GOVERSION; cat "$0"; } | sha256sum | cut -c1-16)
mkdir -p "$cache/bin/.stamps" "$cache/scheduler-plugins"
exec 9>"$cache/scheduler-plugins/.build.lock"
flock 9
if [ -x "$bin" ] && [ "$(cat "$cache/bin/.stamps/scheduler-plugins" 2>/dev/null)" = "$recipe" ] &&
   [ -f "$dir/podgroups.yaml" ]; then
  echo "$bin"
  exit 0
fi
start=$SECONDS
log "building sigs.k8s.io/scheduler-plugins/cmd/scheduler@$version (the first time about 4 minutes on 2 cores) ..."
GOFLAGS=-mod=mod go mod download "sigs.k8s.io/scheduler-plugins@$version" >&2
src=$(go env GOMODCACHE)/sigs.k8s.io/scheduler-plugins@$version
work=$(mktemp -d "$cache/scheduler-plugins/.src.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$src/." "$work"
chmod -R u+w "$work"
sed -i -E -e "s#^(\s*k8s\.io/[a-z0-9-]+ => k8s\.io/[a-z0-9-]+) v0\.[0-9]+\.[0-9]+\$#\1 $staging#" \
  -e "s#^(\s*k8s\.io/kubernetes => k8s\.io/kubernetes) v1\.[0-9]+\.[0-9]+\$#\1 $kube#" \
  -e "s#^(replace k8s\.io/[a-z0-9-]+ => k8s\.io/[a-z0-9-]+) v0\.[0-9]+\.[0-9]+\$#\1 $staging#" "$work/go.mod"
# Static, no DWARF, paths trimmed: as the cluster's binaries (hack/worlds/cluster/build.sh).
(cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags=all=-dwarf=false -ldflags="-s -w" \
   -o "$work/scheduler" ./cmd/scheduler) >&2
mkdir -p "$dir"
cp "$work/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" "$dir/podgroups.yaml"
mv -f "$work/scheduler" "$bin"
echo "$recipe" >"$cache/bin/.stamps/scheduler-plugins"
log "built $bin ($(du -m "$bin" | cut -f1) MB) in $((SECONDS - start)) s"
echo "$bin"
