#!/bin/sh
# Image entrypoint. On the launcher, wait until every hostfile host resolves: the headless Service
# publishes a worker's name only once the worker is ready, and ssh gives up at once on an unknown name.
if [ "${K_MPI_JOB_ROLE:-}" = launcher ] && [ -r /etc/mpi/hostfile ]; then
  for host in $(sed -e 's/[ :].*//' -e '/^#/d' /etc/mpi/hostfile); do
    tries=0
    until getent hosts "$host" >/dev/null; do
      tries=$((tries + 1))
      if [ "$tries" -ge "${MPI_DNS_WAIT_TRIES:-60}" ]; then
        echo "mpi-entrypoint: $host does not resolve, starting anyway" >&2
        break
      fi
      sleep 0.5
    done
  done
fi
[ "$#" -gt 0 ] || set -- /usr/sbin/sshd -De
exec "$@"
