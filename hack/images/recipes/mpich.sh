# MPICH 4 (Hydra launcher) on Debian 12.
# shellcheck shell=bash
image=mpi-mpich
suite=bookworm
packages="mpich openssh-server openssh-client"
build_packages="libmpich-dev gcc libc6-dev"
mpicc=mpicc.mpich
image_config='{'"$mpi_entrypoint"',"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}'
customize() { mpi_customize "$1"; }
