#!/usr/bin/env bash
# Creates .venv with everything the tests need, and a collections path that holds this
# collection (as a symlink) and kubernetes.core (taken from the `ansible` wheel: no Galaxy here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
venv=$root/.venv
stamp=$venv/.stamp
want=$(cat "$root/requirements.txt" "$root/requirements-test.txt" "$0" | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/requirements-test.txt"
  echo "$want" > "$stamp"
fi
# kubernetes.core from the ansible wheel, cached by version.
kc_version=12.3.0
kc=$cache/kubernetes.core-from-ansible-$kc_version
if [ ! -f "$kc/ansible_collections/kubernetes/core/MANIFEST.json" ]; then
  tmp=$(mktemp -d)
  "$venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$tmp" "ansible==$kc_version"
  mkdir -p "$kc"
  "$venv/bin/python" - "$tmp"/ansible-*.whl "$kc" <<'PY'
import sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    members = [n for n in z.namelist() if n.startswith("ansible_collections/kubernetes/core/")]
    z.extractall(dest, members)
PY
  rm -rf "$tmp"
fi
cols=$root/.collections/ansible_collections
mkdir -p "$cols/mpi" "$cols/kubernetes"
ln -sfn "$root" "$cols/mpi/operator"
ln -sfn "$kc/ansible_collections/kubernetes/core" "$cols/kubernetes/core"
