#!/bin/sh
# Run by the pi-* Containerfiles on top of one of our MPI images: the shape the Kubeflow MPI Operator's e2e suite
# (test/e2e of its module) expects of its mpioperator/mpi-pi images, as that suite's specs and the peer's Dockerfiles
# state it: sshd on port 2222 and ssh dialling 2222; user mpiuser with uid 1000 and home /home/mpiuser; a config
# there for sshd run by that user (`sshd -De -f /home/mpiuser/.sshd_config`, its host key the job's key the operator
# mounts in /home/mpiuser/.ssh); the MPI program at /home/mpiuser/pi (ours: src/pi.c, built in the base image).
set -eu
sed -i 's/^Port .*/Port 2222/' /etc/ssh/sshd_config.d/mpi.conf
grep -q '^Port 2222$' /etc/ssh/sshd_config.d/mpi.conf
printf '    Port 2222\n' >> /etc/ssh/ssh_config.d/mpi.conf
useradd --create-home --uid 1000 --shell /bin/bash mpiuser
cat > /home/mpiuser/.sshd_config <<'CONF'
# sshd run as mpiuser: its own pid file, and the job's key (mounted in ~/.ssh) as the host key.
Port 2222
PidFile /home/mpiuser/sshd.pid
HostKey /home/mpiuser/.ssh/id_rsa
StrictModes no
UsePAM no
PasswordAuthentication no
AcceptEnv OMPI_* PRTE_* PMIX_* HYDRA_* I_MPI_*
CONF
install -m 0755 /opt/mpi/pi /home/mpiuser/pi
chown -R mpiuser:mpiuser /home/mpiuser
