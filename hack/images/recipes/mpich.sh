# MPICH 4.2 (Hydra launcher, ch4:ucx) on Debian 13.
# Not Debian 12: its MPICH 4.0.2 (ch4:ucx, UCX 1.13) hangs in MPI_Finalize about every other run across two pods.
# Its finalize posts ucp_disconnect_nb to every peer, spins in ucp_worker_progress until all complete, then blocks
# in a PMI barrier without progressing UCX; a rank that got there first never answers a slower rank's disconnect
# over TCP, which spins at 100% CPU forever. MPICH 4.2 fixed it (pmodels/mpich#6596). See docs/real-node.md.
# shellcheck shell=bash
image=mpi-mpich
suite=trixie
packages="mpich openssh-server openssh-client"
build_packages="libmpich-dev gcc libc6-dev"
mpicc=mpicc.mpich
image_config='{'"$mpi_entrypoint"',"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}'
customize() { mpi_customize "$1"; }
