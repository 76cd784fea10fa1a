#!/usr/bin/env bash
# Builds the local images without Docker or a registry, caches each as a `docker save` tar keyed by
# the hash of its recipe, and imports it into containerd (namespace k8s.io) when containerd runs and
# lacks that build. Images: localhost/<name>:${MPI_IMAGE_TAG:-local}.
# usage: hack/images/build.sh [--no-import] [--print] [pause|openmpi4|openmpi5|mpich|python|horovod|operator ...]
#   (default: pause openmpi4 openmpi5 mpich operator; horovod is built on demand, its first build compiles)
#   --print: print "<ref> <tar> <recipe hash>" per image.
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
[ "${#names[@]}" -gt 0 ] || names=(pause openmpi4 openmpi5 mpich operator)

# Hash of everything that goes into recipe $1's image (hack/images/$1/: files only that recipe uses).
recipe_hash() {
  {
    cat "$images_dir/lib.sh" "$images_dir/pack.py" "$images_dir/recipes/_mpi.sh" \
      "$images_dir/recipes/$1.sh" "$images_dir"/src/*
    if [ -d "$images_dir/$1" ]; then cat "$images_dir/$1"/*; fi
  } | sha256sum | cut -c1-16
}

# Builds recipe $1 into the cache unless it is there; prints "<ref> <tar> <hash>".
build_recipe() {
  local name=$1 hash tar
  hash=$(recipe_hash "$name")
  (
    # A subshell per recipe so one recipe's variables and functions don't leak into the next. errexit again:
    # a command substitution drops it, and a recipe step that fails must fail the build, not pack a broken image.
    set -e
    source "$images_dir/recipes/_mpi.sh"
    source "$images_dir/recipes/$name.sh"
    ref=localhost/$image:$image_tag
    tar=$image_cache/$image-$hash.tar
    if [ ! -f "$tar" ]; then
      start=$SECONDS
      root=$image_cache/work/$image
      if [ -n "$suite" ]; then
        fresh_rootfs "$suite" "$root"
        in_root_prepare "$root"
        if [ -n "$packages" ]; then
          in_root "$root" apt-get update -qq >/dev/null
          # shellcheck disable=SC2086
          in_root "$root" apt-get install -y -qq $packages >/dev/null
        fi
        customize "$root"
        in_root_finish "$root"
      else
        rm -rf "$root"; mkdir -p "$root"
        customize "$root"
      fi
      python3 "$images_dir/pack.py" "$root" "$tar" "$ref" "$image_config"
      rm -rf "$root"
      find "$image_cache" -maxdepth 1 -name "$image-*.tar" ! -name "$image-$hash.tar" -delete
      log "built $ref in $((SECONDS - start)) s ($(du -m "$tar" | cut -f1) MB)"
    fi
    echo "$ref $tar $hash"
  )
}

containerd_up() { ctr -n "$ctr_ns" version >/dev/null 2>&1; }

ensure_host_tools
for name in "${names[@]}"; do
  case $name in
    operator) out=$(bash "$images_dir/operator.sh") ;;
    *) [ -f "$images_dir/recipes/$name.sh" ] || { log "no recipe for image '$name'"; exit 2; }
       out=$(build_recipe "$name") ;;
  esac
  read -r ref tar hash <<<"$out"
  [ "$print" = 0 ] || echo "$out"
  if [ "$import" = 1 ]; then
    if containerd_up; then import_image "$ref" "$tar" "$hash"
    else log "containerd is not running: $ref stays in $tar"; fi
  fi
done
