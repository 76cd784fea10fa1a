#!/usr/bin/env bash
# ansible-test sanity on the collection as users get it: the tarball `ansible-galaxy collection build` makes
# (galaxy.yml's build_ignore leaves out hack/, the test suites, dev config), unpacked at
# .../ansible_collections/mpi/operator where ansible-test needs it. Offline: hack/build/venv.sh gives ansible-test's
# get-pip cache a stand-in. Extra arguments go to ansible-test (e.g. --test validate-modules).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/hack/build/venv.sh" >/dev/null
export PATH=$root/.venv/bin:$PATH
# Outside the worktree: inside it, ansible-test would take git's view of the parent repository.
work=${TMPDIR:-/tmp}/mpi-operator-sanity-$(echo "$root" | sha256sum | cut -c1-12)
dest=$work/ansible_collections/mpi/operator
rm -rf "$work/build" "$dest"
mkdir -p "$work/build" "$dest"
ansible-galaxy collection build --output-path "$work/build" "$root" >/dev/null
tar -xzf "$work"/build/mpi-operator-*.tar.gz -C "$dest"
cd "$dest"
py=$("$root/.venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
exec ansible-test sanity --python "$py" --venv --color no "$@"
