#!/usr/bin/env bash
# Stop, start, restart or kill (SIGKILL, then start: a crash) one daemon of the running real node, its state kept:
# `hack/worlds/node/daemon.sh stop|start|restart|kill kubelet|containerd`. Stopping the kubelet (SIGTERM) leaves its containers running, as a crashed or
# stopped kubelet does: to the control plane the node goes silent and, past the node monitor grace period, NotReady
# (what `make chaos` does to a node with ranks on it). Stopping containerd leaves the containers' shims, so the
# containers keep running.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
action=${1:-} name=${2:-}
case $action in stop | start | restart | kill) ;; *) die "usage: hack/worlds/node/daemon.sh stop|start|restart|kill kubelet|containerd" ;; esac
case $name in kubelet | containerd) ;; *) die "DAEMON must be kubelet or containerd, got '$name'" ;; esac
[ -d "$NODE_STATE" ] || die "no real node here: hack/worlds/node/up.sh brings it up"
cluster_lock
ts=$(now_ms)
if [ "$action" = kill ]; then
  pid=$(daemon_pid "$name")
  [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 100); do [ -n "$pid" ] && [ -d "/proc/$pid" ] || break; sleep 0.1; done
  rm -f "$PIDS/node-$name.pid"
  nlog "$name killed (+$(since "$ts") s)"
elif [ "$action" != start ]; then
  stop_daemon "$name"
  nlog "$name stopped (+$(since "$ts") s)"
fi
if [ "$action" != stop ]; then
  "start_$name"
  nlog "$name started (+$(since "$ts") s)"
fi
