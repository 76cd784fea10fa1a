#!/usr/bin/env bash
# A kind cluster on podman with everything made on this machine (no Docker engine, no registry): podman from Debian's
# packages, kind from the Go module proxy, kind's base image and a node image built from the binaries of
# hack/worlds/cluster/build.sh. Each piece is cached (~/.cache/mpi-operator); an existing cluster is left as it is.
# usage: hack/worlds/kind/up.sh            (KIND_CLUSTER=mpi-operator, KIND_KUBECONFIG=$cache/kind/<cluster>.kubeconfig)
# The last line printed is "kubeconfig: <path>". hack/worlds/kind/down.sh deletes the cluster.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$root_dir/hack/worlds/cluster/versions.env"
[ "$(id -u)" = 0 ] || die "needs root (podman, debootstrap)"
start=$SECONDS
kubeconfig=${KIND_KUBECONFIG:-$cache/kind/$KIND_CLUSTER.kubeconfig}
work=$cache/images/context/kind
mkdir -p "$cache/kind" "$work"

ensure_podman
ensure_kind
# kind mounts /lib/modules into every node; a kernel built without modules (as here) leaves the host without one.
[ -d /lib/modules ] || { mkdir -p /lib/modules; log "created an empty /lib/modules (kind mounts it into its nodes)"; }

# Kubernetes binaries and CoreDNS (cached by their recipe; the local cluster's when it has built them).
nice bash "$root_dir/hack/worlds/cluster/build.sh" kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet \
  kubectl kubeadm etcd coredns
coredns_version=v$("$bin/coredns" -version | sed -n 's/^CoreDNS-//p')

# Images from the project's builder: Debian 12, pause, kind's base (hack/build/images/build.sh), then the node's images
# and the node image itself (containerfile.py, named as kubeadm asks for them with imageRepository: localhost).
declare -A ref tar
while read -r r t _; do
  name=${r#localhost/}; name=${name%%:*}
  ref[$name]=$r tar[$name]=$t
done < <(nice bash "$root_dir/hack/build/images/build.sh" --no-import --print debian-bookworm pause kind-base)

# build_one NAME CONTAINERFILE CONTEXT TAG [containerfile.py args...]: prints the image tar.
build_one() {
  local name=$1 file=$2 context=$3 tag=$4 out
  shift 4
  out=$(nice python3 "$root_dir/hack/build/images/containerfile.py" --file "$file" --context "$context" --name "$name" \
          --tag "$tag" --key-tag --out-dir "$cache/images" "$@" 2>"$cache/images/$name.log") ||
    { tail -20 "$cache/images/$name.log" >&2; die "building $name failed (log: $cache/images/$name.log)"; }
  echo "$out"
}
node_ctx=$work/node
rm -rf "$node_ctx"; mkdir -p "$node_ctx/bin" "$node_ctx/images"
images=$root_dir/hack/build/images/kind-node
debian=(--build-arg "BASE_IMAGE=${ref[mpi-debian-bookworm]}" --base-tar "${tar[mpi-debian-bookworm]}"
        --tag-of-base "${ref[mpi-debian-bookworm]}")
for c in kube-apiserver kube-controller-manager kube-scheduler etcd coredns kube-proxy; do
  ctx=$work/$c
  mkdir -p "$ctx"; ln -f "$bin/$c" "$ctx/$c"
  case $c in
    etcd) tag=localhost/etcd:$ETCD_VERSION file=$images/component/Containerfile args=(--build-arg COMPONENT=$c) ;;
    coredns) tag=localhost/coredns:$coredns_version file=$images/coredns/Containerfile args=("${debian[@]}") ;;
    kube-proxy) tag=localhost/$c:$KUBE_VERSION file=$images/kube-proxy/Containerfile args=("${debian[@]}") ;;
    *) tag=localhost/$c:$KUBE_VERSION file=$images/component/Containerfile args=(--build-arg COMPONENT=$c) ;;
  esac
  read -r _ t _ < <(build_one "kind-$c" "$file" "$ctx" "$tag" "${args[@]}")
  ln -f "$t" "$node_ctx/images/$c.tar"
done
ln -f "${tar[pause]}" "$node_ctx/images/pause.tar"
for b in kubelet kubeadm kubectl; do ln -f "$bin/$b" "$node_ctx/bin/$b"; done
echo "$KUBE_VERSION" >"$node_ctx/version"
cp "$images/10-mpi-bridge.conflist" "$node_ctx/"
read -r node_ref node_tar node_key < <(build_one mpi-kind-node "$images/Containerfile" "$node_ctx" \
  localhost/mpi-kind-node:"$KUBE_VERSION" --build-arg "BASE_IMAGE=${ref[mpi-kind-base]}" \
  --base-tar "${tar[mpi-kind-base]}" --tag-of-base "${ref[mpi-kind-base]}")
node_image=localhost/mpi-kind-node:$node_key
if ! podman image exists "$node_image"; then
  t=$SECONDS
  podman load -q -i "$node_tar" >/dev/null
  log "loaded $node_image into podman in $((SECONDS - t)) s"
fi

# The nodes' network, with a subnet chosen here (see KIND_SUBNET in lib.sh); kind uses it as it finds it.
podman network exists "$KIND_NETWORK" || podman network create -d bridge --subnet "$KIND_SUBNET" "$KIND_NETWORK" >/dev/null

if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
  log "cluster $KIND_CLUSTER exists"
  kind get kubeconfig --name "$KIND_CLUSTER" >"$kubeconfig"
else
  config=$cache/kind/$KIND_CLUSTER.yaml
  cat >"$config" <<YAML
# Written by hack/worlds/kind/up.sh.
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  # One node: the node image's bridge conflist replaces kindnetd (which would have to come from a registry).
  disableDefaultCNI: true
  # Away from 10.244.0.0/16, the local cluster's real node.
  podSubnet: 10.246.0.0/16
kubeadmConfigPatches:
  - |
    kind: ClusterConfiguration
    # The node image carries these (imported at boot): nothing is pulled.
    imageRepository: localhost
    etcd:
      local:
        imageTag: $ETCD_VERSION
    dns:
      imageTag: $coredns_version
  - |
    kind: KubeletConfiguration
    # Kubernetes 1.35 refuses cgroup v1 unless told otherwise; this machine has no cgroup v2.
    failCgroupV1: false
YAML
  t=$SECONDS
  log "creating cluster $KIND_CLUSTER from $node_image"
  kind create cluster --name "$KIND_CLUSTER" --image "$node_image" --config "$config" --kubeconfig "$kubeconfig" \
    --wait 180s || die "kind create cluster failed (kind export logs --name $KIND_CLUSTER shows the node's logs)"
  log "created cluster $KIND_CLUSTER in $((SECONDS - t)) s"
fi
log "kind cluster $KIND_CLUSTER up in $((SECONDS - start)) s"
echo "kubeconfig: $kubeconfig"
