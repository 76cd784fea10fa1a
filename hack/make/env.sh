# The one environment of the checkout's tools: cd to the checkout, create or refresh the virtualenv
# (hack/build/venv.sh), and export what the tools need to find it and the collection: PATH, ANSIBLE_CONFIG,
# ANSIBLE_COLLECTIONS_PATH and PYTHONPATH, the checkout and its .collections: the one way Python finds the tools'
# packages (hack.lib, crd, mpijob_operator) and the collection as ansible_collections.mpi.operator (pytest's own is
# pytest.ini's pythonpath). Sourced by the hack/ entry points (sets `root`); run, `bash hack/make/env.sh CMD [ARG...]`
# runs CMD in it (the Makefile's Python targets).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
bash hack/build/venv.sh || exit
export PATH=$root/.venv/bin:$PATH ANSIBLE_CONFIG=$root/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$root/.collections
export PYTHONPATH=$root:$root/.collections${PYTHONPATH:+:$PYTHONPATH}
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ $# -gt 0 ]; then exec "$@"; fi
