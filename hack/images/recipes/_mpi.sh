# Shared by the MPI image recipes: sshd that takes the operator's mounted key, the entrypoint,
# and the MPI programs under /opt/mpi (plus the seed's /helloworld/mpi_hello_world), compiled
# in the image with the recipe's $mpicc and its build packages removed afterwards.
# shellcheck shell=bash
mpi_entrypoint='"Entrypoint":["/usr/local/bin/mpi-entrypoint"],"Cmd":[]'

mpi_customize() {
  local root=$1
  install -m 0644 "$images_dir/src/sshd_config" "$root/etc/ssh/sshd_config.d/mpi.conf"
  install -m 0644 "$images_dir/src/ssh_config" "$root/etc/ssh/ssh_config.d/mpi.conf"
  install -m 0755 "$images_dir/src/entrypoint.sh" "$root/usr/local/bin/mpi-entrypoint"
  mkdir -p "$root/run/sshd" "$root/root/.ssh" "$root/opt/mpi/src" "$root/helloworld"
  chmod 0700 "$root/root/.ssh"
  in_root "$root" ssh-keygen -A >/dev/null
  cp "$images_dir"/src/*.c "$images_dir"/src/*.py "$root/opt/mpi/src/"
  rm -f "$root/opt/mpi/src/pause.c"
  in_root "$root" sh -ec "
    apt-mark manual \$(dpkg-query -W -f '\${Package}\n') >/dev/null
    apt-get install -y -qq $build_packages >/dev/null
    cd /opt/mpi
    $mpicc -O2 -o pi src/pi.c
    $mpicc -O2 -o hostnames src/hostnames.c
    cp hostnames /helloworld/mpi_hello_world
    apt-get purge -y -qq --auto-remove $build_packages >/dev/null
  "
}
