#!/usr/bin/env bash
# make docsite: the collection's documentation as Ansible users read it on docs.ansible.com (modules, lookup, filters,
# roles), built by antsibull-docs and Sphinx from the collection as ansible-doc sees it, into build/docsite
# ($MPI_DOCSITE_DIR); prints the
# path of its index page. Offline: no intersphinx inventories (Python's, Ansible's own docs), so references into those
# sites stay text (Sphinx's ref.ref warnings are off); any other warning fails the build. The collection's own
# references are checked by `antsibull-docs lint-collection-docs` in make lint.
set -euo pipefail
source "$(dirname "$0")/env.sh" >/dev/null
dest=${MPI_DOCSITE_DIR:-$root/build/docsite}
rm -rf "$dest"
mkdir -p "$dest"
antsibull-docs sphinx-init --use-current --dest-dir "$dest" mpi.operator >/dev/null
cat >>"$dest/conf.py" <<'CONF'

# mpi.operator (hack/make/docsite.sh): offline, no other site's inventory
intersphinx_mapping = {}
suppress_warnings = ["ref.ref"]
project = title = html_short_title = "mpi.operator"
CONF
"$dest/build.sh" >"$dest/build.log" 2>&1 || { tail -40 "$dest/build.log" >&2; exit 1; }
echo "$dest/build/html/collections/mpi/operator/index.html"
