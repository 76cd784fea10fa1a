# OpenMPI 5 (PRRTE launcher) on Debian 13: ignores the OMPI_MCA_orte_* variables.
# shellcheck shell=bash
image=mpi-openmpi5
suite=trixie
packages="openmpi-bin openssh-server openssh-client"
build_packages="libopenmpi-dev gcc libc6-dev"
mpicc=mpicc
image_config='{'"$mpi_entrypoint"',"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","OMPI_MCA_btl_sm_single_copy_mechanism=none"]}'
customize() { mpi_customize "$1"; }
