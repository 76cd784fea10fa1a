# Shared by hack/build/images/build.sh and image.sh: the inputs a build needs from the host (Debian's root filesystem,
# kubernetes.core) and the import into containerd. Sourced, not run. Needs root (debootstrap).
images_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root_dir=$(cd "$images_dir/../../.." && pwd)
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
image_cache=$cache/images
image_tag=${MPI_IMAGE_TAG:-local}
debian_mirror=${MPI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ctr_ns=k8s.io
mkdir -p "$image_cache"

log() { printf '[images] %s\n' "$*" >&2; }

ensure_host_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v ctr >/dev/null || missing+=(containerd)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# Prints the path of a tarred Debian minbase rootfs for suite $1, making it once (the input of debian/Containerfile:
# what a registry's debian:<suite> is made from).
base_rootfs() {
  local suite=$1 tar=$image_cache/base/$1.tar
  if [ ! -f "$tar" ]; then
    local dir=$image_cache/base/$suite.d start=$SECONDS
    rm -rf "$dir"; mkdir -p "$dir"
    log "debootstrap $suite (once)"
    debootstrap --variant=minbase "$suite" "$dir" "$debian_mirror" >"$image_cache/base/$suite.log" 2>&1 \
      || { log "debootstrap failed, see $image_cache/base/$suite.log"; return 1; }
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
      > "$dir/etc/apt/apt.conf.d/90-no-recommends"
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    tar --numeric-owner --xattrs -C "$dir" -cf "$tar.partial" . && mv "$tar.partial" "$tar"
    rm -rf "$dir"
    log "debootstrap $suite took $((SECONDS - start)) s"
  fi
  echo "$tar"
}

# The build key (containerfile.py's) containerd's copy of image $1 was imported from, empty when absent.
image_label() {
  ctr -n "$ctr_ns" images ls "name==$1" 2>/dev/null | grep -o 'mpi.operator/recipe=[0-9a-f]*' | cut -d= -f2
}

# Imports image tar $2, which names the image $1 (build.sh's also <name>:<key>), unless containerd already has $1
# from build key $3. <name>:<key> lets a Deployment pin one build and roll when it changes. The import creates or
# updates the names in place; never `ctr images tag --force`: a forced re-tag is a delete and a create of the name, and
# containerd 1.6's CRI then lost the name for the kubelet (ErrImageNeverPull for an image `ctr images ls` listed).
import_image() {
  local ref=$1 tar=$2 key=$3 start=$SECONDS
  [ "$(image_label "$ref")" != "$key" ] || return 0
  ctr -n "$ctr_ns" images import "$tar" >/dev/null
  ctr -n "$ctr_ns" images label "$ref" "mpi.operator/recipe=$key" >/dev/null
  log "imported $ref in $((SECONDS - start)) s"
  prune_earlier_builds "${ref%:*}" "${key:0:16}"
}

# Labels the build just imported with the time, then removes what nothing can use any more (prune.py: earlier builds of
# $1, nameless images). Not for the pause image: running pod sandboxes use it without a container record.
prune_earlier_builds() {
  local repo=$1 keep=$2
  ctr -n "$ctr_ns" images label "$repo:$keep" "mpi.operator/imported=$(date +%s)" >/dev/null 2>&1 || true
  [ "${repo##*/}" != pause ] || return 0
  python3 "$images_dir/prune.py" --repo "$repo" --keep "$keep" >&2 || true
}

# Puts kubernetes.core into the operator's build context (build/collections/, as the Containerfile expects), from the
# copy hack/build/venv.sh took out of the ansible wheel: no Galaxy needed, whichever engine builds.
operator_context() {
  local kc dest=$root_dir/build/collections/ansible_collections/kubernetes
  kc=$(ls -d "$cache"/kubernetes.core-from-ansible-*/ansible_collections/kubernetes/core 2>/dev/null | tail -1)
  [ -n "$kc" ] || { log "no kubernetes.core in $cache: run hack/build/venv.sh (make venv) first"; return 1; }
  mkdir -p "$dest"
  rm -rf "$dest/core"; cp -a "$kc" "$dest/core"
}
