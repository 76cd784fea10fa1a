# mpi.operator — one entry point for every workflow. Targets are thin: the logic lives in hack/.
SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(ROOT)/.collections
export PATH := $(VENV)/bin:$(PATH)

.PHONY: docsite ee image image-archive images cluster-status venv demo test test-unit test-runner test-integration test-e2e test-kueue test-gang lint crd sanity-all run cluster-up cluster-down kubeconfig bench bench-scale chaos restarts e2e peer-e2e migrate-scale kind-up kind-down

venv:
	@bash hack/build/venv.sh

cluster-up:
	@bash hack/worlds/cluster/up.sh

cluster-down:
	@bash hack/worlds/cluster/down.sh

kubeconfig:
	@bash hack/worlds/cluster/kubeconfig.sh

# A kind cluster on podman, its images built here (hack/worlds/kind/up.sh; molecule/kind/README.md). KIND_CLUSTER=NAME.
kind-up:
	@bash hack/worlds/kind/up.sh

kind-down:
	@bash hack/worlds/kind/down.sh

images:
	@bash hack/build/images/build.sh

# The operator image with podman, buildah or docker, else the project's own builder; IMAGE=NAME:TAG,
# IMAGE_BUILDER=auto|podman|buildah|docker|local, IMAGE_ARCHIVE=PATH (docs/install.md#image).
image: venv
	@bash hack/build/images/image.sh build

image-archive: venv
	@bash hack/build/images/image.sh archive

cluster-status:
	@bash hack/worlds/cluster/status.sh

# The test tiers, each alone (hack/make/test.sh), each named as its folder under tests/ and its pytest marker: unit
# (seconds), runner (real ansible-runner/-playbook/-test processes, no cluster), integration (the API server), e2e
# (the real kubelet + containerd node), kueue (a real Kueue in front of the operator: alone, never beside the
# others; not part of `make test`), gang (the gang-scheduling tests on every gang scheduler: `make test` runs them on
# scheduler-plugins only, this one on Volcano's too).
test-unit: venv
	$(PY) -m pytest tests/unit -q

test-runner: venv
	bash hack/make/test.sh runner

test-integration: venv
	bash hack/make/test.sh integration

test-e2e: venv
	bash hack/make/test.sh e2e

test-kueue: venv
	bash hack/make/test.sh kueue

test-gang: venv
	bash hack/make/test.sh gang

test: venv
	bash hack/make/test.sh

lint: venv
	bash hack/make/lint.sh

# The CRDs of roles/crds/files, written from crd/ (the core's API registry); make lint fails when they are stale.
crd: venv
	bash hack/make/env.sh python -m crd

sanity-all: venv
	bash hack/make/sanity-all.sh

run: venv
	bash hack/make/run.sh

bench: venv
	bash hack/experiments/bench/bench.sh

# make bench at several sizes, ours and Kubeflow tuned side by side: a table, a JSON and a plot (docs/dev/benchmarks.md).
bench-scale: venv
	bash hack/experiments/bench/bench.sh --scale

# What each kind of failure does to a job: ours with a failure policy, without, Kubeflow v0.8.2 (docs/dev/restarts.md).
restarts: venv
	bash hack/experiments/restarts/restarts.sh

# Faults at scale (docs/dev/chaos.md): restarts the API server and etcd, so it runs alone.
chaos: venv
	bash hack/experiments/chaos/chaos.sh

e2e: venv
	bash hack/make/e2e.sh

# The Kubeflow MPI Operator's own e2e suite (v0.8.2, unchanged) against ours and against Kubeflow's, on the real node
# (hack/experiments/peer_e2e/peer_e2e.py; docs/dev/peer-e2e.md). PEER_E2E_OPERATORS="kubeflow ours" (default), or one of
# them.
peer-e2e: venv
	bash hack/make/env.sh python -m hack.experiments.peer_e2e.peer_e2e

# The switch from the Kubeflow MPI Operator (its own manifest, its pod on the real node) to ours and back under 100 kwok
# jobs and 2 real mpirun jobs (hack/experiments/migrate/scale.py; docs/dev/migrate-scale.md): alone, it replaces the CRD.
migrate-scale: venv
	bash hack/make/env.sh python -m hack.experiments.migrate.scale

# The collection's docsite (antsibull-docs, Sphinx) in build/docsite, as docs.ansible.com shows collections.
docsite: venv
	bash hack/make/docsite.sh

# The execution environment of examples/ee, built by ansible-builder with podman (docs/install.md); root.
ee: venv
	@bash hack/build/ee.sh

demo: venv
	bash hack/make/demo.sh
