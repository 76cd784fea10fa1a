#!/usr/bin/env bash
# Builds the local images without Docker or a registry, each from its Containerfile with the project's one builder
# (containerfile.py: cached by its build key, see there), and imports each into containerd (namespace k8s.io) when
# containerd runs and lacks that build. Images: localhost/<name>:${MPI_IMAGE_TAG:-local}, also named by their key.
# usage: hack/build/images/build.sh [--no-import] [--print]
#            [pause|openmpi4|openmpi5|mpich|intel|horovod|python|operator|kubectl-delivery|pi-openmpi|pi-mpich|pi-intel|
#             kubeflow-operator|example-mpi4py ...]
#   (default: pause openmpi4 openmpi5 mpich intel operator; horovod is built on demand, its first build compiles;
#   the pi-* images, the Kubeflow e2e suite's, and kubeflow-operator by hack/experiments/peer_e2e/peer_e2e.py)
#   --print: print "<ref> <tar> <build key>" per image.
# The Containerfiles: the project's own (operator) and hack/build/images/<name>/Containerfile, whose context is
# hack/build/images. A Containerfile's `ARG BASE_IMAGE=<registry image>` names its base; here a local stand-in built the
# same way replaces it (stand_in below), the one difference from `podman build`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { log "needs root (debootstrap, chroot)"; exit 1; }

import=1 print=0
while [ $# -gt 0 ]; do
  case $1 in
    --no-import) import=0; shift ;;
    --print) print=1; shift ;;
    *) break ;;
  esac
done
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(pause openmpi4 openmpi5 mpich intel operator)

# The registry images the Containerfiles start from, and the local image that stands in for each.
declare -A stand_in=([debian:bookworm]=debian-bookworm [debian:trixie]=debian-trixie
                     [python:3.11-slim-bookworm]=python [docker.io/mpioperator/mpi-pi:openmpi]=pi-openmpi
                     [localhost/mpi-openmpi5:local]=openmpi5 [localhost/mpi-mpich:local]=mpich
                     [localhost/mpi-intel:local]=intel)
# Results of build_image, by name (a base is built once per run however many images use it).
declare -A built_ref=() built_tar=() built_key=()

# Builds image $1 (its base first) unless cached; sets built_ref/built_tar/built_key[$1].
build_image() {
  local name=$1 image file context base args=() out start lock
  [ -z "${built_key[$name]:-}" ] || return 0
  # One builder per image (and its context, its tar, its base's debootstrap) at a time on this machine: a second
  # build.sh asking for the same image waits, one asking for another goes on (the node's images need not wait for
  # Horovod's compile). Taken image before base, always in that order, so two builds cannot wait on each other.
  exec {lock}>"$image_cache/.build-$name.lock"
  flock "$lock"
  case $name in
    pause | kubectl-delivery | kubeflow-operator) image=$name ;;
    python) image=mpi-python-base ;;
    example-*) image=mpi-$name ;;
    *) image=mpi-$name ;;
  esac
  file=$images_dir/$name/Containerfile context=$images_dir
  case $name in
    operator) file=$root_dir/Containerfile context=$root_dir
              operator_context ;;
    debian-*) file=$images_dir/debian/Containerfile context=$image_cache/base
              base_rootfs "${name#debian-}" >/dev/null
              args+=(--build-arg "SUITE=${name#debian-}") ;;
    # Compiled outside the image, as Kubernetes' own pause image is: the image holds nothing else.
    pause) context=$image_cache/context/pause
           mkdir -p "$context"
           gcc -O2 -static -o "$context/pause" "$images_dir/pause/pause.c" ;;
    # The local cluster's kubectl (built from the Kubernetes sources by hack/worlds/cluster/up.sh; static) and the
    # copier.
    kubectl-delivery)
           context=$image_cache/context/kubectl-delivery
           [ -x "$cache/bin/kubectl" ] || { log "no $cache/bin/kubectl: run make cluster-up first"; exit 2; }
           mkdir -p "$context"
           cp "$cache/bin/kubectl" "$context/kubectl"
           gcc -O2 -static -o "$context/deliver" "$images_dir/kubectl-delivery/deliver.c" ;;
    # A user guide example's own Containerfile, in examples/ (example-mpi4py: examples/v2beta1/mpi4py/).
    example-mpi4py) file=$root_dir/examples/v2beta1/mpi4py/Containerfile context=$root_dir/examples/v2beta1/mpi4py ;;
    # The peer's binary (hack/build/kubeflow.sh: built once, cached).
    kubeflow-operator)
           context=$image_cache/context/kubeflow-operator
           mkdir -p "$context"
           cp "$(bash "$images_dir/../kubeflow.sh")" "$context/mpi-operator" ;;
  esac
  [ -f "$file" ] || { log "no image '$name' (no $file)"; exit 2; }
  base=$(sed -n 's/^ARG BASE_IMAGE=//p' "$file")
  if [ -n "$base" ]; then
    [ -n "${stand_in[$base]:-}" ] || { log "$file: no local stand-in for its base $base"; exit 2; }
    build_image "${stand_in[$base]}"
    base=${stand_in[$base]}
    args+=(--build-arg "BASE_IMAGE=${built_ref[$base]}" --base-tar "${built_tar[$base]}"
           --tag-of-base "${built_ref[$base]}")
  fi
  # The builder's own log goes to a file (the operator's `pip install` is long) and is shown when it fails.
  start=$SECONDS
  out=$(python3 "$images_dir/containerfile.py" --file "$file" --context "$context" --name "$image" \
          --tag "localhost/$image:$image_tag" --key-tag --out-dir "$image_cache" "${args[@]}" \
          2>"$image_cache/$image.log") ||
    { tail -30 "$image_cache/$image.log" >&2; log "building $image failed (log: $image_cache/$image.log)"; exit 1; }
  read -r built_ref[$name] built_tar[$name] built_key[$name] <<<"$out"
  grep -q '^\[containerfile\] .*: cached' "$image_cache/$image.log" ||
    log "built ${built_ref[$name]} in $((SECONDS - start)) s ($(du -m "${built_tar[$name]}" | cut -f1) MB)"
  exec {lock}>&-
}

containerd_up() { ctr -n "$ctr_ns" version >/dev/null 2>&1; }

# The host's tools once (apt-get's lock): one build.sh at a time here; each image has its lock (build_image).
mkdir -p "$image_cache"
exec 7>"$image_cache/.build.lock"
flock 7
ensure_host_tools
flock -u 7
for name in "${names[@]}"; do
  build_image "$name"
  ref=${built_ref[$name]} tar=${built_tar[$name]} key=${built_key[$name]}
  [ "$print" = 0 ] || echo "$ref $tar $key"
  if [ "$import" = 1 ]; then
    if containerd_up; then import_image "$ref" "$tar" "$key"
    else log "containerd is not running: $ref stays in $tar"; fi
  fi
done
