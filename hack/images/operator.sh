#!/usr/bin/env bash
# Builds localhost/mpi-operator:<tag> from the project's Containerfile, the file users build from; only the
# base differs: BASE_IMAGE is the local stand-in for python:3.11-slim-bookworm (recipes/python.sh).
# kubernetes.core goes into the build context's build/collections/ (as the Containerfile expects), from the
# copy hack/venv.sh took out of the ansible wheel. Prints "<ref> <tar> <hash>" like build.sh's recipes;
# with --context-only it only puts kubernetes.core into the context (for podman/docker/buildah: hack/images/image.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
kc=$(ls -d "$cache"/kubernetes.core-from-ansible-*/ansible_collections/kubernetes/core 2>/dev/null | tail -1)
[ -n "$kc" ] || { log "no kubernetes.core in $cache: run hack/venv.sh (make venv) first"; exit 1; }
context=$root_dir
dest=$context/build/collections/ansible_collections/kubernetes
mkdir -p "$dest"
rm -rf "$dest/core"; cp -a "$kc" "$dest/core"
[ "${1:-}" != --context-only ] || exit 0
read -r base_ref base_tar _ < <(bash "$images_dir/build.sh" --no-import --print python)
ref=localhost/mpi-operator:$image_tag
# The build's inputs: the Containerfile, the context it copies (git's view of it) and this tooling.
hash=$( { cat "$context/Containerfile" "$images_dir/containerfile.py" "$images_dir/pack.py" "$0"; echo "$base_tar";
          git -C "$context" ls-files -co --exclude-standard -- requirements.txt galaxy.yml README.md meta plugins \
            roles playbooks mpijob_operator | sort | while read -r f; do [ -f "$context/$f" ] && sha256sum "$context/$f"; done
        } | sha256sum | cut -c1-16)
tar=$image_cache/mpi-operator-$hash.tar
if [ ! -f "$tar" ]; then
  start=$SECONDS
  build_log=$image_cache/mpi-operator-build.log
  python3 "$images_dir/containerfile.py" --file "$context/Containerfile" --context "$context" \
    --build-arg "BASE_IMAGE=$base_ref" --base-tar "$base_tar" --tag-of-base "$base_ref" --tag "$ref" --out "$tar" \
    --cache "$image_cache/steps/mpi-operator" >"$build_log" 2>&1 || { tail -30 "$build_log" >&2; exit 1; }
  find "$image_cache" -maxdepth 1 -name "mpi-operator-*.tar" ! -name "mpi-operator-$hash.tar" -delete
  log "built $ref in $((SECONDS - start)) s ($(du -m "$tar" | cut -f1) MB)"
fi
echo "$ref $tar $hash"
