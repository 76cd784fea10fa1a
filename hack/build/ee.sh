#!/usr/bin/env bash
# make ee: the execution environment of examples/ee (docs/install.md), built by ansible-builder with podman from this
# checkout's tarball, as a user builds it. Prints the image's name (MPI_EE_IMAGE, default
# localhost/mpi-operator-ee:<the collection's version>). What differs from a user's build, each a stand-in of the same
# shape, because this machine has no registry and no Galaxy:
#   - the base python:3.11-slim-bookworm is localhost/mpi-python-base (hack/build/images/python: Debian 12's Python
#     3.11, pip, venv), loaded into podman;
#   - kubernetes.core from Galaxy is the artifact of the one in .collections (hack/build/collection_artifact.py),
#     installed with --offline;
#   - pip's RUN steps use the host's network and its CA bundle ($PIP_CERT: a TLS-intercepting proxy here).
# Also makes /dev/mqueue, which ansible-navigator asks for before it runs podman.
set -euo pipefail
source "$(dirname "$0")/../make/env.sh" >/dev/null
source "$root/hack/worlds/kind/lib.sh"  # ensure_podman: podman and its containers.conf drop-in (rlimits)
log() { printf '[ee %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
[ "$(id -u)" = 0 ] || die "needs root (podman, the base image's debootstrap)"
version=$(sed -n 's/^version: *//p' galaxy.yml)
image=${MPI_EE_IMAGE:-localhost/mpi-operator-ee:$version}
ctx=$root/build/ee
mkdir -p "$cache"
exec 8>"$cache/.ee.lock"  # one build at a time (the test suite's background build and a test's)
flock 8
ensure_podman
mkdir -p /dev/mqueue
start=$SECONDS
read -r _ base_tar base_key < <(bash hack/build/images/build.sh --no-import --print python)
base=localhost/mpi-python-base:$base_key
podman image exists "$base" || podman load -q -i "$base_tar" >/dev/null
rm -rf "$ctx"
mkdir -p "$ctx"
ansible-galaxy collection build --output-path "$ctx" . >/dev/null
kc_tar=$(python hack/build/collection_artifact.py .collections/ansible_collections/kubernetes/core "$ctx")
python - "$ctx" "$base" "$(basename "$kc_tar")" <<'PY'
import pathlib, sys
import yaml
ctx, base, kc = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
ee = yaml.safe_load(pathlib.Path("examples/ee/execution-environment.yml").read_text())
ee["images"]["base_image"]["name"] = base
ee["additional_build_files"].append({"src": kc, "dest": "."})
reqs = yaml.safe_load(pathlib.Path("examples/ee/requirements.yml").read_text())
for entry in reqs["collections"]:
    if entry["name"] == "kubernetes.core":
        entry.clear()
        entry.update(name=f"./{kc}", type="file")
(ctx / "execution-environment.yml").write_text(yaml.safe_dump(ee, sort_keys=False))
(ctx / "requirements.yml").write_text(yaml.safe_dump(reqs, sort_keys=False))
PY
extra="--network=host"
ca=${PIP_CERT:-}
[ -z "$ca" ] || [ ! -f "$ca" ] || extra+=" --volume=$(realpath "$ca"):/etc/ssl/certs/ca-certificates.crt:ro"
ansible-builder build -f "$ctx/execution-environment.yml" -c "$ctx/context" -t "$image" --container-runtime podman \
  --build-arg ANSIBLE_GALAXY_CLI_COLLECTION_OPTS=--offline --extra-build-cli-args="$extra" -v 2 \
  >"$ctx/build.log" 2>&1 || { tail -40 "$ctx/build.log" >&2; die "ansible-builder failed (log: $ctx/build.log)"; }
log "built $image in $((SECONDS - start)) s"
echo "$image"
