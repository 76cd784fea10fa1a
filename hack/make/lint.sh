#!/usr/bin/env bash
# make lint: ruff (lint and format), the import contracts, mypy, the generated CRDs' staleness (python -m crd --check), yamllint, ansible-lint (production profile),
# antsibull-changelog's checks, `ansible-doc` for every module, antsibull-docs' lint, and ansible-test sanity on the built collection
# (hack/make/sanity.sh).
set -uo pipefail
source "$(dirname "$0")/env.sh" >/dev/null
failed=()
step() { local name=$1; echo "== $name"; shift; "$@" || failed+=("$name"); }

py_dirs=()
for d in plugins tests hack mpijob_operator crd; do [ -d "$d" ] && py_dirs+=("$d"); done
step ruff ruff check "${py_dirs[@]}"
step ruff-format ruff format --check "${py_dirs[@]}"
# The layering rules (.importlinter): the core imports only the standard library, modules over the shell over the core,
# the operator never imports the modules, the product never imports hack/ or tests/.
step import-contracts lint-imports --no-cache
step mypy mypy --python-executable "$root/.venv/bin/python"
# The generated CRDs match their sources (crd/; `make crd` writes them).
step crd python -m crd --check
step yamllint yamllint -s .
step ansible-lint ansible-lint --offline -q --nocolor
# The changelog fragments and the released changelog (CHANGELOG.rst is made from them by `antsibull-changelog release`).
step changelog antsibull-changelog lint
step changelog-yaml antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
# Every module must document itself well enough for ansible-doc to render it.
modules=()
for f in plugins/modules/*.py; do [ -e "$f" ] && modules+=("mpi.operator.$(basename "$f" .py)"); done
if [ ${#modules[@]} -gt 0 ]; then
  step ansible-doc bash -c 'for m in "$@"; do out=$(ansible-doc "$m" 2>&1) && [ -n "$out" ] || { echo "ansible-doc $m failed: $out"; exit 1; }; done' _ "${modules[@]}"
fi
# The collection's documentation as antsibull-docs reads it: markup, references between its plugins and roles.
step antsibull-docs antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck .collections/ansible_collections/mpi/operator
step ansible-test-sanity bash hack/make/sanity.sh
if [ ${#failed[@]} -gt 0 ]; then echo "lint failed: ${failed[*]}" >&2; exit 1; fi
echo "lint passed"
