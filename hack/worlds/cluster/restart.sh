#!/usr/bin/env bash
# Restart one component of the running local cluster, its state kept: `hack/worlds/cluster/restart.sh COMPONENT [--kill]
# [--down SECONDS]`. COMPONENT is etcd, kube-apiserver, kube-controller-manager, kube-scheduler or kwok; --kill stops it
# with SIGKILL (a crash: no graceful shutdown), else SIGTERM; --down keeps it stopped that long before starting it
# again. etcd keeps its data directory, so the cluster comes back with every object and a later resourceVersion;
# clients see their connections drop and their watches end (what `make chaos` does to the operator).
# up.sh, by contrast, starts a fresh cluster (etcd data wiped) when a control-plane component is down.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/components.sh"

component=${1:-}
shift || true
signal=TERM down=0
while [ $# -gt 0 ]; do
  case $1 in
    --kill) signal=KILL ;;
    --down) down=${2:?--down needs seconds}; shift ;;
    *) die "unknown argument $1 (usage: restart.sh COMPONENT [--kill] [--down SECONDS])" ;;
  esac
  shift
done
case $component in
  etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kwok) ;;
  *) die "COMPONENT must be etcd, kube-apiserver, kube-controller-manager, kube-scheduler or kwok, got '$component'" ;;
esac
cluster_lock
pid=$(component_pid "$component")
[ -n "$pid" ] || die "$component is not running: start the cluster with hack/worlds/cluster/up.sh"
ts=$(now_ms)
kill -"$signal" "$pid"
# Gone for good: a killed multi-threaded process shows as a zombie while its other threads still close its files
# (the API server's listening socket among them), so "not alive" is not enough; reparented to init, it is reaped.
gone() { [ ! -e "/proc/$1" ]; }
wait_until "$component exit" 60 gone "$pid" || die "$component (pid $pid) did not exit on SIG$signal"
rm -f "$PIDS/$component.pid"
log "$component stopped (SIG$signal, +$(since "$ts") s)"
[ "$down" = 0 ] || sleep "$down"
case $component in
  kube-apiserver) start_apiserver ;;
  kube-controller-manager) start_controller_manager ;;
  kube-scheduler) start_scheduler ;;
  *) "start_$component" ;;
esac
await "$component" 90
log "$component restarted in $(since "$ts") s"
