# OpenMPI 4 (ORTE launcher) on Debian 12, with mpi4py.
# shellcheck shell=bash
image=mpi-openmpi4
suite=bookworm
packages="openmpi-bin openssh-server openssh-client python3-mpi4py"
build_packages="libopenmpi-dev gcc libc6-dev"
mpicc=mpicc
# CMA single-copy needs ptrace rights containers don't have; vader falls back to copy-in/out.
image_config='{'"$mpi_entrypoint"',"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","OMPI_MCA_btl_vader_single_copy_mechanism=none"]}'
customize() { mpi_customize "$1"; }
