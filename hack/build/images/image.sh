#!/usr/bin/env bash
# make image / make image-archive: the operator image from the project's Containerfile, built with whatever this
# machine has: podman, buildah or docker when one of them works, else the project's own builder (build.sh operator:
# no container engine, no registry; needs root). The archive is one image in the `docker save` layout, which
# `kind load image-archive`, `ctr -n k8s.io images import`, `podman load`, `docker load` and
# `skopeo copy docker-archive:` read.
# usage: hack/build/images/image.sh build|archive
#   IMAGE          the name (default localhost/mpi-operator:<collection version>, the role's default image)
#   IMAGE_BUILDER  auto (default) | podman | buildah | docker | local
#   IMAGE_ARCHIVE  where archive writes (default _output/images/mpi-operator-<tag>.tar)
set -euo pipefail
images_dir=$(cd "$(dirname "$0")" && pwd)
root_dir=$(cd "$images_dir/../../.." && pwd)
mode=${1:?usage: image.sh build|archive}
version=$(sed -n 's/^version: *//p' "$root_dir/galaxy.yml")
image=${IMAGE:-localhost/mpi-operator:$version}
archive=${IMAGE_ARCHIVE:-$root_dir/_output/images/mpi-operator-${image##*:}.tar}
builder=${IMAGE_BUILDER:-auto}

say() { printf '[image] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# A client is not enough: docker's CLI without an engine (as on this project's machines) cannot build.
works() {
  case $1 in
    podman) podman info ;;
    buildah) buildah version ;;
    docker) docker info ;;
  esac >/dev/null 2>&1
}

# In auto mode an engine must also get the Containerfile's base image (it has it, or pulls it now): podman installed
# for kind on a machine that reaches no registry works, but cannot build this.
base_image=$(sed -n 's/^ARG BASE_IMAGE=//p' "$root_dir/Containerfile" | head -1)
has_base() {
  [ -n "$base_image" ] || return 0
  case $1 in
    podman) podman image exists "$base_image" || timeout 600 podman pull -q "$base_image" ;;
    buildah) buildah inspect --type image "$base_image" || timeout 600 buildah pull -q "$base_image" ;;
    docker) docker image inspect "$base_image" || timeout 600 docker pull -q "$base_image" ;;
  esac >/dev/null 2>&1
}

case $image in *:*) ;; *) die "IMAGE=$image: give NAME:TAG" ;; esac
case $builder in
  auto)
    builder=local
    for tool in podman buildah docker; do
      if command -v "$tool" >/dev/null && works "$tool"; then
        if has_base "$tool"; then builder=$tool; break; fi
        say "$tool works but cannot get $base_image (no registry?): not using it"
      fi
    done ;;
  podman|buildah|docker) works "$builder" || die "IMAGE_BUILDER=$builder: '$builder' is missing or does not work here" ;;
  local) ;;
  *) die "IMAGE_BUILDER=$builder: one of auto, podman, buildah, docker, local" ;;
esac
if [ "$builder" = local ] && [ "$(id -u)" != 0 ]; then
  die "no working podman, buildah or docker, and the project's own builder (hack/build/images/build.sh) needs root"
fi
say "building $image with $builder"

# The host's CA file, which pip inside the build needs behind a TLS-intercepting proxy as much as pip here does: copied
# into the context for the Containerfile's CA_BUNDLE (the project's own builder mounts the same file).
ca_args=()
host_ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
context_ca=$root_dir/build/ca-bundle.crt
with_host_ca() {
  [ -f "$host_ca" ] || return 0
  mkdir -p "$(dirname "$context_ca")"
  cp "$host_ca" "$context_ca"
  trap 'rm -f "$context_ca"' EXIT
  ca_args=(--build-arg "CA_BUNDLE=build/ca-bundle.crt")
}

# The build; for the local builder, leaves "<ref> <tar> <key>" of the cached build in $local_build.
build() {
  case $builder in
    local) local_build=$(bash "$images_dir/build.sh" --no-import --print operator) ;;
    buildah) operator_context; with_host_ca
             buildah bud "${ca_args[@]}" -t "$image" -f "$root_dir/Containerfile" "$root_dir" ;;
    *) operator_context; with_host_ca
       "$builder" build "${ca_args[@]}" -t "$image" -f "$root_dir/Containerfile" "$root_dir" ;;
  esac
}

write_archive() {
  mkdir -p "$(dirname "$archive")"
  case $builder in
    local) read -r _ tar _ <<<"$local_build"; python3 "$images_dir/archive.py" "$tar" "$archive" "$image" ;;
    podman) rm -f "$archive"; podman save --format docker-archive -o "$archive" "$image" ;;
    docker) docker save -o "$archive" "$image" ;;
    buildah) rm -f "$archive"; buildah push "$image" "docker-archive:$archive:$image" ;;
  esac
}

source "$images_dir/lib.sh"
build
case $mode in
  build)
    if [ "$builder" = local ]; then
      # The local builder has no image store of its own: containerd (the real node's) is it, when it runs.
      read -r _ tar hash <<<"$local_build"
      if ctr -n "$ctr_ns" version >/dev/null 2>&1; then
        if [ "$(image_label "$image")" != "$hash" ]; then
          archive=$image_cache/mpi-operator-import.tar
          write_archive
          import_image "$image" "$archive" "$hash"
          rm -f "$archive"
        fi
        say "$image is in containerd (namespace $ctr_ns)"
      else
        say "built $image (cached as $tar); containerd is not running: make image-archive writes a file to load"
      fi
    else
      say "built $image in $builder's image store"
    fi ;;
  archive)
    write_archive
    say "wrote $archive ($image, $(du -m "$archive" | cut -f1) MB). Load it with one of:"
    say "  kind load image-archive $archive [--name CLUSTER]"
    say "  ctr -n k8s.io images import $archive"
    say "  skopeo copy docker-archive:$archive docker://REGISTRY/mpi-operator:${image##*:}"
    echo "$archive" ;;
  *) die "usage: image.sh build|archive" ;;
esac
