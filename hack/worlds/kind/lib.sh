# Shared by hack/worlds/kind/*.sh: podman as the container engine, kind built from the Go module proxy. Sourced, not
# run. Everything lands in the project's cache (~/.cache/mpi-operator), like the local cluster's binaries.
kind_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root_dir=$(cd "$kind_dir/../../.." && pwd)
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
bin=$cache/bin
KIND_VERSION=${KIND_VERSION:-v0.33.0}
KIND_CLUSTER=${KIND_CLUSTER:-mpi-operator}
# The podman network kind's nodes join. Created here (not by kind, which lets podman pick the next free /24) so its
# subnet is known and stays away from 10.88.0.0/16 (podman's default bridge once broke host-to-pod traffic here) and
# 10.244.0.0/16 (the local cluster's real node).
KIND_NETWORK=kind
KIND_SUBNET=${KIND_SUBNET:-10.89.0.0/24}
# The drop-in this project writes for podman (containers.conf.d is read after containers.conf).
PODMAN_CONF=/etc/containers/containers.conf.d/50-mpi-operator.conf
export KIND_EXPERIMENTAL_PROVIDER=podman
export PATH=$bin:$PATH

log() { printf '[kind %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# podman from Debian's packages, and a containers.conf drop-in that lets it run containers on this kind of machine:
# podman's default rlimits (nofile 1048576) exceed the hard limits a process may raise to here, and runc then fails
# with "error setting rlimit type 7: operation not permitted". nofile: the machine's hard limit; nproc: 32768, below
# what runc may set here (docs/dev/local-cluster.md has the values tried).
ensure_podman() {
  if ! command -v podman >/dev/null; then
    [ "$(id -u)" = 0 ] || die "podman is missing (as root: apt-get install podman)"
    log "installing podman (Debian package)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman >/dev/null
  fi
  local nofile nproc want
  nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
  [ "$nofile" != unlimited ] || nofile=1048576
  [ "$nproc" != unlimited ] && [ "$nproc" -le 32768 ] || nproc=32768
  want=$(cat <<CONF
# Written by mpi.operator's hack/worlds/kind/lib.sh. Container rlimits within this machine's hard limits (podman's
# default nofile=1048576 makes runc fail with "error setting rlimit"); the default network away from 10.88.0.0/16 and
# the pools away from 10.244.0.0/16.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[network]
default_subnet = "10.89.255.0/24"
default_subnet_pools = [{"base" = "10.89.0.0/16", "size" = 24}]
CONF
)
  if [ "$(cat "$PODMAN_CONF" 2>/dev/null)" != "$want" ]; then
    [ -w "$(dirname "$(dirname "$PODMAN_CONF")")" ] || die "cannot write $PODMAN_CONF (run as root once)"
    mkdir -p "$(dirname "$PODMAN_CONF")"
    printf '%s\n' "$want" >"$PODMAN_CONF"
    log "wrote $PODMAN_CONF"
  fi
}

# kind $KIND_VERSION, built from the Go module proxy once into $bin.
ensure_kind() {
  if [ -x "$bin/kind" ] && "$bin/kind" version 2>/dev/null | grep -q "^kind $KIND_VERSION "; then return 0; fi
  command -v go >/dev/null || die "Go is required to build kind"
  local start=$SECONDS
  log "building kind $KIND_VERSION (go install, once)"
  # Pure Go and -trimpath like every other Go build here: the standard library compiles once for all of them.
  GOBIN=$bin CGO_ENABLED=0 GOFLAGS="-trimpath -gcflags=all=-dwarf=false" nice go install -ldflags="-s -w" \
    "sigs.k8s.io/kind@$KIND_VERSION"
  log "built kind in $((SECONDS - start)) s"
}
