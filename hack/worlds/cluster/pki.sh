#!/usr/bin/env bash
# Certificates, keys and kubeconfigs of the local cluster (openssl only; ECDSA P-256, quick to make). Kept across
# restarts; made once.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || die "openssl is required (Debian: apt-get install openssl)"
mkdir -p "$PKI"
umask 077
DAYS=3650

# new_ca NAME CN: a self-signed CA.
new_ca() {
  [ -f "$PKI/$1.crt" ] && return 0
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.crt" -days "$DAYS" \
    -subj "/CN=$2" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}

# new_cert NAME CA SUBJECT USAGE [SANS]: a leaf key pair signed by CA; USAGE is serverAuth, clientAuth or both.
new_cert() {
  local name=$1 ca=$2 subj=$3 usage=$4 sans=${5:-}
  [ -f "$PKI/$name.crt" ] && return 0
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/$name.key" -out "$PKI/$name.csr" -subj "$subj" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -z "$sans" ] || echo "subjectAltName=$sans"
  } >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
    -out "$PKI/$name.crt" -days "$DAYS" -sha256 -extfile "$PKI/$name.ext" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

# kubeconfig FILE CERT: a kubeconfig for the identity in CERT, with the certificates embedded.
kubeconfig() {
  local b64="base64 -w0"
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: mpi-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $($b64 "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $($b64 "$PKI/$2.crt")
    client-key-data: $($b64 "$PKI/$2.key")
contexts:
- name: mpi-local
  context: {cluster: mpi-local, user: $2}
current-context: mpi-local
KC
}

new_ca ca mpi-operator-local-ca
new_ca front-proxy-ca mpi-operator-local-front-proxy-ca
new_ca etcd-ca mpi-operator-local-etcd-ca
new_cert apiserver ca /CN=kube-apiserver serverAuth \
  "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
new_cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
new_cert front-proxy-client front-proxy-ca /CN=front-proxy-client clientAuth
new_cert etcd-server etcd-ca /CN=etcd-server serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
new_cert apiserver-etcd-client etcd-ca /CN=kube-apiserver-etcd-client clientAuth
new_cert admin ca "/O=system:masters/CN=kubernetes-admin" clientAuth
new_cert controller-manager ca /CN=system:kube-controller-manager clientAuth
new_cert scheduler ca /CN=system:kube-scheduler clientAuth
# kwok plays the kubelet of every simulated node, so it acts beyond what the Node authorizer grants one kubelet.
new_cert kwok ca "/O=system:masters/CN=kwok-controller" clientAuth
[ -f "$PKI/sa.key" ] || { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$PKI/sa.key" 2>/dev/null && openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null; }

kubeconfig "$STATE/controller-manager.kubeconfig" controller-manager
kubeconfig "$STATE/scheduler.kubeconfig" scheduler
kubeconfig "$STATE/kwok.kubeconfig" kwok
kubeconfig "$ADMIN_KUBECONFIG.tmp" admin
mv -f "$ADMIN_KUBECONFIG.tmp" "$ADMIN_KUBECONFIG"
