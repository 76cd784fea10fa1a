#!/usr/bin/env bash
# The Debian packages the real node and the image builds need (containerd, runc, debootstrap, ...): installed when
# missing, nothing when this machine cannot run the node (hack/worlds/node/up.sh says why) or MPI_CLUSTER_REAL_NODE=0.
# hack/worlds/node/up.sh runs it; hack/make/test.sh runs it first, so the tests that start before the cluster is built
# find the same tools on a fresh machine as on a warm one.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "${MPI_CLUSTER_REAL_NODE:-auto}" != 0 ] || exit 0
[ -z "$(unfit_reason)" ] || exit 0

# Debian packages (idempotent: only what is missing). skopeo is not the node's: it reads and pushes the image
# archives of `make image-archive` in the e2e tier (tests/e2e/test_image_archive.py).
need=()
for pair in containerd:containerd runc:runc debootstrap:debootstrap nft:nftables ip:iproute2 openssl:openssl \
  skopeo:skopeo; do
  command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
[ -x "$CNI_BIN_DIR/bridge" ] || need+=(containernetworking-plugins)
if [ "${#need[@]}" -gt 0 ]; then
  nlog "installing ${need[*]}"
  # A fresh machine's package lists may be empty or stale: refresh them once before installing.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || die "apt-get install ${need[*]} failed"
  }
fi
