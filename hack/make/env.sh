# Sourced (never run) by the hack/ entry points: cd to the checkout, create or refresh the virtualenv (hack/build/venv.sh),
# and export what the tools need to find it and the collections: PATH, ANSIBLE_CONFIG, ANSIBLE_COLLECTIONS_PATH and
# PYTHONPATH (the operator package and tests import from the checkout). Sets `root`.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
bash hack/build/venv.sh
export PATH=$root/.venv/bin:$PATH ANSIBLE_CONFIG=$root/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$root/.collections
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
