# Stand-in for python:3.11-slim-bookworm, the Containerfile's default base: Debian 12's Python 3.11 with pip
# allowed to install system-wide (as in the official image, which has no EXTERNALLY-MANAGED marker).
# shellcheck shell=bash
image=mpi-python-base
suite=bookworm
packages="python3 python3-pip ca-certificates"
image_config='{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","LANG=C.UTF-8"],"Cmd":["python3"]}'
customize() {
  rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED
  ln -sf python3 "$1/usr/bin/python"
}
