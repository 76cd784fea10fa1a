#!/usr/bin/env bash
# make sanity-all: `ansible-test sanity` on the collection as users get it (the built tarball, as hack/make/sanity.sh)
# under every ansible-core of hack/build/ansible-test/cores.txt, each in its own cached venv with its controller Python;
# then, under the ansible-core of requirements.txt, the modules' import and compile tests on every Python
# tests/config.yml declares for them (3.9 to 3.13, pyenv's interpreters). Prints one line per run and a table.
#   hack/make/sanity-all.sh [VERSION...]   only these ansible-core versions (e.g. 2.18.19); the Python runs need none
# Offline as hack/make/sanity.sh: each ansible-core's get-pip cache gets the stand-in
# (hack/build/ansible-test/get_pip.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}
bash "$root/hack/build/venv.sh" >/dev/null
pythons=(3.9 3.10 3.11 3.12 3.13)
pinned=$(sed -n 's/^ansible-core==//p' "$root/requirements.txt")

interpreter() { bash "$root/hack/build/venv.sh" --interpreter "$1"; }

# ansible-test finds a Python by its name (pythonX.Y) on PATH: one folder naming each real interpreter.
work=${TMPDIR:-/tmp}/mpi-operator-sanity-all-$(echo "$root" | sha256sum | cut -c1-12)
rm -rf "$work"
mkdir -p "$work/bin" "$work/build"
for v in "${pythons[@]}"; do
  i=$(interpreter "$v")
  ln -s "$i" "$work/bin/python$v"
done
"$root/.venv/bin/ansible-galaxy" collection build --output-path "$work/build" "$root" >/dev/null
tarball=$(echo "$work"/build/mpi-operator-*.tar.gz)

# venv_for VERSION PYTHON: prints a venv holding that ansible-core (the test venv for the pinned one), made once.
venv_for() {
  if [ "$1" = "$pinned" ]; then echo "$root/.venv"; return; fi
  local venv=$cache/venvs/ansible-core-$1-py$2
  exec 7>"$venv.lock"
  flock 7
  if [ ! -x "$venv/bin/ansible-test" ]; then
    rm -rf "$venv"
    "$(interpreter "$2")" -m venv "$venv" >&2
    "$venv/bin/pip" install -q --no-compile --disable-pip-version-check "ansible-core==$1" >&2
  fi
  flock -u 7
  echo "$venv"
}

results=()
failed=0
# run NAME VENV ansible-test-args...: one ansible-test run on a fresh copy of the tarball; its log in $work.
run() {
  local name=$1 venv=$2 dest start rc
  shift 2
  dest=$work/$name/ansible_collections/mpi/operator
  mkdir -p "$dest"
  tar -xzf "$tarball" -C "$dest"
  start=$SECONDS
  ( cd "$dest" && PATH=$venv/bin:$work/bin:$PATH ansible-test sanity --venv --color no "$@" ) >"$work/$name.log" 2>&1 &&
    rc=0 || rc=$?
  results+=("$(printf '%-34s %-6s %5d s' "$name" "$([ $rc = 0 ] && echo passed || echo FAILED)" $((SECONDS - start)))")
  echo "${results[-1]} (log: $work/$name.log)"
  if [ $rc != 0 ]; then failed=1; tail -30 "$work/$name.log" >&2; fi
}

want=("$@")
while read -r core py; do
  case $core in ''|'#'*) continue ;; esac
  if [ ${#want[@]} -gt 0 ] && [[ " ${want[*]} " != *" $core "* ]]; then continue; fi
  venv=$(venv_for "$core" "$py")
  bash "$root/hack/build/ansible-test/stand-ins.sh" "$venv/bin/python"
  run "ansible-core-$core-python-$py" "$venv" --python "$py"
done <"$root/hack/build/ansible-test/cores.txt"

if [ ${#want[@]} -eq 0 ]; then
  bash "$root/hack/build/ansible-test/stand-ins.sh" "$root/.venv/bin/python"
  for v in "${pythons[@]}"; do
    run "import-compile-python-$v" "$root/.venv" --test import --test compile --python "$v"
  done
fi

printf '\n%-34s %-6s %7s\n' run result time
printf '%s\n' "${results[@]}"
exit $failed
