# shellcheck shell=bash
# How each component of the local cluster starts (sourced after lib.sh by up.sh, which starts a cluster, and
# restart.sh, which restarts one component of a running cluster with its state kept): its flags, its log, its pid file.

# There is no kube-proxy: the API server reaches a webhook's or an APIService's Service at its endpoints (Kueue's
# webhooks, on the real node: hack/worlds/kueue/up.sh).
APISERVER_ROUTING=--enable-aggregator-routing=true
# PodNodeSelector and PodTolerationRestriction (upstream admission plugins, off by default) let a namespace place its
# pods: the user guide's examples run as written on the real node in a namespace annotated so (tests/e2e/test_examples.py).
APISERVER_ADMISSION=--enable-admission-plugins=NodeRestriction,PodNodeSelector,PodTolerationRestriction
# start NAME ARGS...: run a component detached from this session, logging to $LOGS/NAME.log.
start() {
  local name=$1; shift
  ( close_inherited_fds
    exec setsid env GOGC="$GOGC_CONTROL_PLANE" GOMEMLIMIT="$GOMEMLIMIT_CONTROL_PLANE" "$BIN/$name" "$@" >"$LOGS/$name.log" 2>&1 </dev/null ) &
  echo $! >"$PIDS/$name.pid"
  # The pid is the forked shell's until it has exec'd the binary.
  wait_until "$name exec" 3 component_running "$name" || die "$name did not start (see $LOGS/$name.log)"
}

# Healthy, or exit the wait at once when the process has died.
alive_and_healthy() {
  component_running "$1" || { log "$1 exited"; return 0; }
  component_healthy "$1"
}

# await NAME TIMEOUT: wait for a component's health check; fail with its log's tail.
await() {
  local ts
  ts=$(now_ms)
  if ! wait_until "$1" "$2" alive_and_healthy "$1"; then
    tail -n 20 "$LOGS/$1.log" >&2 || true
    die "$1 not healthy after $2 s (log: $LOGS/$1.log)"
  fi
  component_running "$1" || { tail -n 20 "$LOGS/$1.log" >&2 || true; die "$1 exited (log: $LOGS/$1.log)"; }
  log "$1 healthy (+$(since "$ts") s)"
}

start_etcd() {
  start etcd --name=local --data-dir="$ETCD_DATA" \
    --listen-client-urls="https://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls="https://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="local=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
    --listen-metrics-urls="http://127.0.0.1:$((ETCD_PEER_PORT + 1))" \
    --cert-file="$PKI/etcd-server.crt" --key-file="$PKI/etcd-server.key" --trusted-ca-file="$PKI/etcd-ca.crt" --client-cert-auth \
    --unsafe-no-fsync --log-level=warn
}
start_apiserver() {
  start kube-apiserver --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" --advertise-address="$ADVERTISE_IP" \
    --etcd-servers="https://127.0.0.1:$ETCD_CLIENT_PORT" --etcd-cafile="$PKI/etcd-ca.crt" \
    --etcd-certfile="$PKI/apiserver-etcd-client.crt" --etcd-keyfile="$PKI/apiserver-etcd-client.key" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC \
    "$APISERVER_ADMISSION" --allow-privileged=true --enable-bootstrap-token-auth=true \
    $APISERVER_ROUTING
}
start_controller_manager() {
  start kube-controller-manager --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
    --kubeconfig="$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
    --client-ca-file="$PKI/ca.crt" --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
    --root-ca-file="$PKI/ca.crt" --service-account-private-key-file="$PKI/sa.key" --use-service-account-credentials=true \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --controllers='*,bootstrapsigner,tokencleaner' --allocate-node-cidrs=false --service-cluster-ip-range="$SERVICE_CIDR" \
    --leader-elect=false --kube-api-qps=100 --kube-api-burst=200
}
# Client rate limits as a busy production cluster sets them: the defaults (20 and 50 QPS) throttle the Job
# controller and the scheduler long before 800 simulated pods, and the bench would measure that instead of us.
start_scheduler() {
  start kube-scheduler --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
    --kubeconfig="$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig="$STATE/scheduler.kubeconfig" --authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
    --leader-elect=false --kube-api-qps=100 --kube-api-burst=200
}
# Only when MPI_CLUSTER_KWOK_POD_WORKERS is not kwok's default: a KwokConfiguration replaces kwok's defaults as a
# whole, so it carries every one of them (kwok v0.8.0's SetObjectDefaults_KwokConfiguration) but that one.
kwok_configuration() {
  [ "$KWOK_POD_WORKERS" = 4 ] && return
  cat <<KWOK
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: $KWOK_POD_WORKERS
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
KWOK
}
start_kwok() {
  local configuration=()
  kwok_configuration >"$STATE/kwok-configuration.yaml"
  [ -s "$STATE/kwok-configuration.yaml" ] && configuration=(-c "$STATE/kwok-configuration.yaml")
  start kwok --kubeconfig="$STATE/kwok.kubeconfig" --manage-nodes-with-label-selector=type=kwok \
    --cidr="$KWOK_POD_CIDR" --node-lease-duration-seconds=40 --server-address="127.0.0.1:$KWOK_PORT" \
    "${configuration[@]}" -c "$CLUSTER_DIR/kwok/node-stages.yaml" -c "$CLUSTER_DIR/kwok/pod-stages.yaml"
}
