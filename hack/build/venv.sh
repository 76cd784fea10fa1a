#!/usr/bin/env bash
# Creates .venv with everything the tests need, and a collections path that holds this
# collection (as a symlink) and kubernetes.core (taken from the `ansible` wheel: no Galaxy here).
#   hack/build/venv.sh --python X.Y   a small venv for the unit tier on Python X.Y (prints its python), cached
#   hack/build/venv.sh --python X.Y --ansible-core SPEC   the same with that ansible-core as a controller (its own deps)
#   hack/build/venv.sh --interpreter X.Y   prints a working python X.Y of this machine (pyenv's own binary first)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}

# interpreter X.Y: pyenv's shims may point at a version that does not run: the interpreter itself, checked to run.
interpreter() {
  local candidate
  for candidate in "$HOME"/.pyenv/versions/"$1".*/bin/python"$1" "$(command -v "python$1" || true)"; do
    if [ -x "$candidate" ] && "$candidate" -c 'import ensurepip, venv' 2>/dev/null; then echo "$candidate"; return; fi
  done
  echo "hack/build/venv.sh: no working python$1 on this machine" >&2
  exit 3
}
if [ "${1:-}" = "--interpreter" ]; then
  interpreter "${2:?usage: hack/build/venv.sh --interpreter X.Y}"
  exit 0
fi

if [ "${1:-}" = "--python" ]; then
  ver=${2:?usage: hack/build/venv.sh --python X.Y}
  interp=$(interpreter "$ver")
  # Under .venv's real path: .venv links to a venv in the cache that every clone shares, and pip writes the venv's
  # path into its scripts' #! lines (made through one clone's link, they would break when that clone goes).
  pythons=$(cd "$root/.venv" 2>/dev/null && pwd -P)/pythons || pythons=$root/.venv/pythons
  pvenv=$pythons/$ver
  core=$(grep -E '^ansible-core==' "$root/requirements.txt")
  controller=
  if [ "${3:-}" = "--ansible-core" ]; then
    core="ansible-core${4:?usage: hack/build/venv.sh --python X.Y --ansible-core SPEC}" controller=1
    pvenv=$pythons/$ver-core$(echo "$4" | tr -c 'A-Za-z0-9.\n' '_')
  fi
  want=$( { "$interp" -V; cat "$root/requirements-unit.txt"; echo "$core"; echo "$pvenv"; } | sha256sum | cut -c1-16)
  # One maker per venv (parallel test workers ask for the same one): the others wait, then find it made.
  mkdir -p "$pythons"
  exec 9>"$pvenv.lock"
  flock 9
  if [ ! -f "$pvenv/.stamp" ] || [ "$(cat "$pvenv/.stamp")" != "$want" ]; then
    rm -rf "$pvenv"
    "$interp" -m venv "$pvenv"
    # No byte-compiling at install: Python compiles what a test imports, once, on first import (less work).
    "$pvenv/bin/pip" install -q --no-compile --disable-pip-version-check -r "$root/requirements-unit.txt"
    if [ -n "$controller" ]; then
      "$pvenv/bin/pip" install -q --no-compile --disable-pip-version-check "$core"
    else
      # As on a managed host: ansible-core's module_utils run on older Pythons than its controller does.
      "$pvenv/bin/pip" install -q --no-compile --disable-pip-version-check --no-deps --ignore-requires-python "$core"
    fi
    echo "$want" > "$pvenv/.stamp"
  fi
  echo "$pvenv/bin/python"
  exit 0
fi
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
venv=$root/.venv
want=$( { "$py" -V; cat "$root/requirements.txt" "$root/requirements-test.txt" "$0"; } | sha256sum | cut -c1-16)
# make_venv DIR: DIR holds the requirements (a venv made by an older version of this script is brought up to date).
make_venv() {
  if [ ! -f "$1/.stamp" ] || [ "$(cat "$1/.stamp")" != "$want" ]; then
    [ -x "$1/bin/python" ] || "$py" -m venv "$1"
    "$1/bin/pip" install -q --no-compile --disable-pip-version-check -r "$root/requirements-test.txt"
    echo "$want" > "$1/.stamp"
  fi
}
if [ -d "$venv" ] && [ ! -L "$venv" ]; then
  make_venv "$venv"  # a clone's own venv, from before the cache: kept
else
  # One venv per set of requirements in the cache, shared by every clone on this machine (a fresh clone, as CI's,
  # takes it instead of running pip); .venv links to it. The venvs of the unit tier's other
  # Pythons live inside it (.venv/pythons), so they are cached too.
  mkdir -p "$cache/venvs"
  target=$cache/venvs/main-$want
  exec 8>"$target.lock"
  flock 8
  make_venv "$target"
  touch "$target"  # used now (the pruning below goes by this)
  flock -u 8
  [ "$(readlink "$venv" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$venv"
  # Venvs of other requirements unused for a week go (each is a whole venv).
  find "$cache/venvs" -maxdepth 1 -name 'main-*' -type d ! -name "main-$want" ! -newermt '7 days ago' \
    -exec rm -rf {} + 2>/dev/null || true
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
# ansible-test's get-pip.py, which it would download from a host this machine cannot reach: a stand-in.
bash "$root/hack/build/ansible-test/stand-ins.sh" "$venv/bin/python"
cols=$root/.collections/ansible_collections
mkdir -p "$cols/mpi" "$cols/kubernetes"
# Only when they point elsewhere: `ln -sfn` unlinks before it links, and a concurrent ansible run (another test
# worker) would find no collection in that moment.
link() { [ "$(readlink "$2" 2>/dev/null)" = "$1" ] || ln -sfn "$1" "$2"; }
link "$root" "$cols/mpi/operator"
link "$kc/ansible_collections/kubernetes/core" "$cols/kubernetes/core"
