# Horovod 0.28.1 (its last release; elastic mode through Gloo, also MPI) with PyTorch 1.13 on CPU, both from
# Debian 12 (python3-torch 1.13.1, Python 3.11, OpenMPI 4.1), sshd, and the elastic training script of
# hack/images/horovod/ in /opt/horovod. No wheel of Horovod exists: it is compiled once in the image's own root
# (same libraries as at run time) and the wheel cached under $image_cache/wheels, keyed by the Horovod version,
# the build flags and the versions of the Debian packages it compiles against; a recipe or script change
# reuses it.
# shellcheck shell=bash
image=mpi-horovod
suite=bookworm
packages="openmpi-bin openssh-server openssh-client python3-torch python3-pip python3-cloudpickle python3-psutil
  python3-yaml python3-packaging python3-cffi"
build_packages="libopenmpi-dev gcc libc6-dev"
mpicc=mpicc
horovod_version=0.28.1
# Elastic mode needs Gloo; MPI too so `horovodrun --mpi` (and mpirun) work; no TensorFlow, MXNet or CUDA.
horovod_flags="HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1"
# (pip brings setuptools and wheel, which the build uses: purging them would take pip along)
horovod_build_packages="libtorch-dev pybind11-dev cmake g++ make python3-dev libopenmpi-dev"
image_config='{'"$mpi_entrypoint"',"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","OMPI_MCA_btl_vader_single_copy_mechanism=none","PYTHONUNBUFFERED=1"]}'

customize() {
  local root=$1
  mpi_customize "$root"
  local wheel; wheel=$(horovod_wheel "$root")
  cp "$wheel" "$root/tmp/"
  in_root "$root" pip install -q --no-deps --no-index --break-system-packages "/tmp/${wheel##*/}"
  in_root "$root" python3 -c 'import horovod.torch as hvd; assert hvd.gloo_built() and hvd.mpi_built()'
  install -D -m 0644 "$images_dir/horovod/elastic_train.py" "$root/opt/horovod/elastic_train.py"
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/*
}

# Prints the path of the cached Horovod wheel for the root in $1, building it there first when missing.
horovod_wheel() {
  local root=$1 key dir
  # (the build packages come from the same Debian release as these, so the suite's name covers them)
  key=$( { echo "$horovod_version $suite $horovod_flags"
           in_root "$root" dpkg-query -W python3.11 python3-torch libtorch1.13 libopenmpi3; } | sha256sum | cut -c1-16)
  dir=$image_cache/wheels/horovod-$key
  if ! ls "$dir"/horovod-*.whl >/dev/null 2>&1; then
    local start=$SECONDS
    mkdir -p "$image_cache/wheels/src"
    # The host's pip fetches the source (it has the host's CA bundle); the build itself needs no network.
    python3 -m pip download -q --no-deps --no-binary :all: -d "$image_cache/wheels/src" "horovod==$horovod_version" >&2
    cp "$image_cache/wheels/src/horovod-$horovod_version.tar.gz" "$root/tmp/"
    in_root "$root" sh -ec "
      apt-get install -y -qq $horovod_build_packages >/dev/null
      # Two compile jobs at most: the machine is shared (build.sh runs under nice from the callers that care).
      env $horovod_flags MAKEFLAGS=-j2 pip wheel -q --no-deps --no-build-isolation -w /tmp/wheels \
        /tmp/horovod-$horovod_version.tar.gz
      apt-get purge -y -qq --auto-remove $horovod_build_packages >/dev/null
    " >&2
    mkdir -p "$dir.partial"
    cp "$root"/tmp/wheels/horovod-*.whl "$dir.partial/"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
    rm -rf "$root/tmp/wheels" "$root/tmp/horovod-$horovod_version.tar.gz"
    log "built the Horovod $horovod_version wheel in $((SECONDS - start)) s"
  fi
  ls "$dir"/horovod-*.whl | head -n 1
}
