#!/bin/sh
# Image entrypoint. On the launcher, wait until its own name and every hostfile host resolve in cluster DNS:
# the headless Service publishes a pod's name only once the pod is ready, ssh gives up at once on an unknown
# name, and MPICH's proxies on the workers connect back to the launcher by name (and hang if they cannot).
wait_for() {
  tries=0
  until getent hosts "$1" >/dev/null; do
    tries=$((tries + 1))
    if [ "$tries" -ge "${MPI_DNS_WAIT_TRIES:-120}" ]; then
      echo "mpi-entrypoint: $1 does not resolve, starting anyway" >&2
      return
    fi
    sleep 0.5
  done
}
if [ "${K_MPI_JOB_ROLE:-}" = launcher ] && [ -r /etc/mpi/hostfile ]; then
  # <hostname>.<subdomain> is not in /etc/hosts (the FQDN and the short name are), so this asks the DNS.
  self=$(hostname -f 2>/dev/null)
  case $self in *.*.*) wait_for "$(echo "$self" | cut -d. -f1-2)" ;; esac
  for host in $(sed -e '/^#/d' -e 's/[ :].*//' /etc/mpi/hostfile); do wait_for "$host"; done
fi
[ "$#" -gt 0 ] || set -- /usr/sbin/sshd -De
exec "$@"
