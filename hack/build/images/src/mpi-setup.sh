#!/bin/sh
# Run by the MPI images' Containerfiles, inside the image, with the files of src/ in /tmp/mpi-src: sshd that takes
# the operator's mounted key, the entrypoint, and the MPI programs under /opt/mpi (plus the Kubeflow install guide's
# /helloworld/mpi_hello_world and T9k's /usr/local/code/random_walk), compiled with $MPICC; $BUILD_PACKAGES
# (the compiler and MPI headers) are removed afterwards.
set -eu
: "${MPICC:?}" "${BUILD_PACKAGES:?}"
src=/tmp/mpi-src
install -m 0644 "$src/sshd_config" /etc/ssh/sshd_config.d/mpi.conf
install -m 0644 "$src/ssh_config" /etc/ssh/ssh_config.d/mpi.conf
install -m 0755 "$src/entrypoint.sh" /usr/local/bin/mpi-entrypoint
mkdir -p /run/sshd /root/.ssh /opt/mpi/src /helloworld
chmod 0700 /root/.ssh
ssh-keygen -A >/dev/null
cp "$src"/*.c "$src"/*.py /opt/mpi/src/
# Everything installed so far stays when the build packages go (--auto-remove takes only what they pulled in).
# shellcheck disable=SC2046
apt-mark manual $(dpkg-query -W -f '${Package}\n') >/dev/null
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $BUILD_PACKAGES >/dev/null
cd /opt/mpi
"$MPICC" -O2 -o pi src/pi.c
"$MPICC" -O2 -o hostnames src/hostnames.c
cp hostnames /helloworld/mpi_hello_world
# T9k's tutorial job (batch.tensorstack.dev/v1beta1) as written: `./random_walk` in workingDir /usr/local/code, mpirun from mpiHome
# /usr/local (so <mpiHome>/bin/mpirun).
mkdir -p /usr/local/code
"$MPICC" -O2 -o /usr/local/code/random_walk src/random_walk.c
# OpenMPI only (T9k's mpirun line is OpenMPI's). Run by its absolute path, OpenMPI takes that path's prefix for the
# daemons it starts on the workers (as --prefix): /usr/local/bin/orted must be there too. Not in the MPICH image:
# Hydra looks for hydra_pmi_proxy next to the mpirun it was started as, and `mpirun` from the PATH would then be
# /usr/local/bin/mpirun (the pi job failed so).
if command -v orted >/dev/null || command -v prted >/dev/null; then
  for tool in mpirun mpiexec orted prted prterun; do
    found=$(command -v "$tool" || true)
    if [ -n "$found" ] && [ ! -e "/usr/local/bin/$tool" ]; then ln -s "$found" "/usr/local/bin/$tool"; fi
  done
fi
# shellcheck disable=SC2086
apt-get purge -y -qq --auto-remove $BUILD_PACKAGES >/dev/null
apt-get clean
rm -rf "$src" /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*
