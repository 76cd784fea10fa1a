#!/usr/bin/env bash
# Build the local cluster's binaries from the Go module proxy into $CACHE/bin, each only when its recipe changed.
# Usage: build.sh [component...]   (default: etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok;
#        also kubelet, kube-proxy, kubeadm, coredns)
#        build.sh --with component...   the default ones and these
set -euo pipefail
source "$(dirname "$0")/lib.sh"

DEFAULT_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)
wanted=("$@")
if [ "${1:-}" = --with ]; then wanted=("${DEFAULT_COMPONENTS[@]}" "${@:2}"); fi
[ ${#wanted[@]} -gt 0 ] || wanted=("${DEFAULT_COMPONENTS[@]}")

# component -> wrapper module directory and Go package.
module_of() {
  case $1 in
    etcd) echo etcd ;;
    kwok | coredns) echo infra ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy) echo kube ;;
    kubeadm) echo kubeadm ;;
    *) die "unknown component '$1' (known: ${DEFAULT_COMPONENTS[*]} kubelet kube-proxy kubeadm coredns)" ;;
  esac
}
package_of() {
  case $1 in
    etcd) echo . ;;
    kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
    coredns) echo ./coredns ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}
# Link flags of a module (the same for all its commands).
ldflags_of() {
  local flags="-s -w" major minor pkg
  case $(module_of "$1") in
    kube|kubeadm)
      major=${KUBE_VERSION#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
        flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
      done ;;
    # (CoreDNS links with these too: -X of a package a binary does not have is ignored.)
    infra) flags+=" -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}" ;;
  esac
  echo "$flags"
}

# The pinned versions must be the ones the wrapper modules actually require.
check_pins() {
  local mod=$CLUSTER_DIR/go
  requires "$mod/kube/go.mod" k8s.io/kubernetes "$KUBE_VERSION"
  requires "$mod/kubeadm/go.mod" k8s.io/kubernetes "$KUBE_VERSION"
  requires "$mod/etcd/go.mod" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
  requires "$mod/infra/go.mod" sigs.k8s.io/kwok "$KWOK_VERSION"
  requires "$mod/infra/go.mod" github.com/coredns/coredns "$COREDNS_VERSION"
  if cat "$mod"/kube/go.mod "$mod"/kubeadm/go.mod | grep "=> k8s.io/" | grep -qv " $KUBE_STAGING_VERSION\$"; then
    die "$mod/kube{,adm}/go.mod: a k8s.io staging replace is not at $KUBE_STAGING_VERSION (versions.env)"
  fi
}
# requires GO_MOD MODULE VERSION: fail unless GO_MOD requires exactly that version.
requires() {
  grep -Eq "^(require)?[[:space:]]*$2 $3( |\$)" "$1" || die "${1#"$CLUSTER_DIR/"} does not require $2 $3 (pinned in versions.env)"
}

# Hash of everything that decides a component's binary: versions, module files, this script, the Go toolchain.
recipe_of() {
  local dir=$CLUSTER_DIR/go/$(module_of "$1")
  { echo "$1"; go env GOVERSION; cat "$CLUSTER_DIR/versions.env" "$dir"/go.mod "$dir"/go.sum "$0"; cat "$dir"/*.go "$dir"/*/*.go 2>/dev/null || true; } | sha256sum | cut -d' ' -f1
}

command -v go >/dev/null || die "Go is required to build the cluster binaries (see docs/dev/local-cluster.md)"
check_pins
mkdir -p "$BIN/.stamps"
# One builder at a time per machine: a second cluster-up waits instead of racing.
exec 9>"$BIN/.build.lock"
flock 9

declare -A todo=()
for c in "${wanted[@]}"; do
  m=$(module_of "$c")
  if [ -x "$BIN/$c" ] && [ "$(cat "$BIN/.stamps/$c" 2>/dev/null)" = "$(recipe_of "$c")" ]; then continue; fi
  todo[$m]+=" $c"
done
[ ${#todo[@]} -gt 0 ] || { log "binaries up to date in $BIN"; exit 0; }

# build_module MODULE COMPONENT...: one go build per module: its packages compile once and the commands link in
# parallel. No DWARF from the compiler: the link's -s -w drops it anyway (the same binaries, less work).
build_module() {
  local m=$1 out start pkgs=() c; shift
  out=$(mktemp -d "$BIN/.build.XXXXXX")
  start=$(now_ms)
  log "building $* ($m module) ..."
  for c in "$@"; do pkgs+=("$(package_of "$c")"); done
  (cd "$CLUSTER_DIR/go/$m" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -buildvcs=false -trimpath \
    -gcflags=all=-dwarf=false -ldflags="$(ldflags_of "$1")" -o "$out/" "${pkgs[@]}") || { rm -rf "$out"; die "build of $* failed"; }
  for c in "$@"; do
    mv -f "$out/$c" "$BIN/$c"
    recipe_of "$c" >"$BIN/.stamps/$c"
  done
  rm -rf "$out"
  log "built $* in $(since "$start") s"
}

# The modules at once: one go build leaves a core idle while it links or waits on a long package, and on a cold
# machine the cluster waits for the last of them.
total=$(now_ms)
pids=()
for m in kube kubeadm etcd infra; do
  [ -n "${todo[$m]:-}" ] || continue
  read -ra comps <<<"${todo[$m]}"
  build_module "$m" "${comps[@]}" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" = 0 ] || die "a build failed (above)"
log "build finished in $(since "$total") s"
