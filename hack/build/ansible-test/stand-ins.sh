#!/usr/bin/env bash
# hack/build/ansible-test/stand-ins.sh PYTHON: ansible-test (of the ansible-core PYTHON imports) downloads get-pip.py
# from a host this machine cannot reach: its cache gets a stand-in that bootstraps pip with ensurepip (get_pip.py here),
# one per pip version that ansible-core pins. A real cached script is left alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for pip_version in $("${1:?usage: stand-ins.sh PYTHON}" - <<'PY'
import re, pathlib, ansible_test
src = pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py"
print(" ".join(sorted(set(re.findall(r"pip='([0-9.]+)'", src.read_text())))))
PY
); do
  cached=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
  if [ ! -f "$cached" ] || grep -q "Offline stand-in" "$cached"; then
    mkdir -p "$(dirname "$cached")"
    cmp -s "$here/get_pip.py" "$cached" || cp "$here/get_pip.py" "$cached"
  fi
done
