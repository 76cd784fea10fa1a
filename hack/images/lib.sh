# Shared by hack/images/*.sh: a cached Debian base, chroot helpers, packing and importing.
# Sourced, not run. Needs root (debootstrap, chroot, mounts).
images_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root_dir=$(cd "$images_dir/../.." && pwd)
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

# Runs a command chrooted in $1 with /proc and /dev, in a private mount namespace so the
# mounts vanish with it, and without starting services (policy-rc.d, see in_root_prepare).
in_root() {
  local root=$1; shift
  unshare --mount --propagation private -- /bin/sh -c '
    root=$1; shift
    mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" && exec chroot "$root" "$@"
  ' in_root "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes "$@"
}

in_root_prepare() {
  local root=$1
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
}

in_root_finish() {
  local root=$1
  rm -f "$root/usr/sbin/policy-rc.d"
  : > "$root/etc/resolv.conf"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/tmp/* "$root"/root/.cache
}

# Prints the path of a tarred Debian minbase rootfs for suite $1, making it once.
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

# Unpacks a fresh copy of the base for suite $1 into directory $2.
fresh_rootfs() {
  local tar; tar=$(base_rootfs "$1") || return 1
  rm -rf "$2"; mkdir -p "$2"
  tar --numeric-owner --xattrs -C "$2" -xpf "$tar"
}

# The recipe hash containerd's copy of image $1 was imported from, empty when absent.
image_label() {
  ctr -n "$ctr_ns" images ls "name==$1" 2>/dev/null | grep -o 'mpi.operator/recipe=[0-9a-f]*' | cut -d= -f2
}

# Imports image tar $2 as $1 unless containerd already has it from recipe hash $3; also names it
# <name>:<hash>, so a Deployment can pin one build and roll when it changes.
import_image() {
  local ref=$1 tar=$2 hash=$3
  if [ "$(image_label "$ref")" != "$hash" ]; then
    local start=$SECONDS
    ctr -n "$ctr_ns" images import "$tar" >/dev/null
    ctr -n "$ctr_ns" images label "$ref" "mpi.operator/recipe=$hash" >/dev/null
    log "imported $ref in $((SECONDS - start)) s"
  fi
  # Only when missing: a forced re-tag is a delete and a create of the name, and containerd 1.6's CRI then lost the
  # name for the kubelet (ErrImageNeverPull for an image `ctr images ls` and crictl still listed).
  [ "$(image_label "${ref%:*}:$hash")" = "$hash" ] || ctr -n "$ctr_ns" images tag --force "$ref" "${ref%:*}:$hash" >/dev/null
}
