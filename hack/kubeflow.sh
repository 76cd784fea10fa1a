#!/usr/bin/env bash
# Builds the Kubeflow MPI Operator (the peer of the differential test and the bench) from the Go module proxy into
# the cache, once; prints the binary's path. Prints nothing and exits 0 when there is no Go toolchain (callers skip).
# The first build takes about 20 minutes on 2 cores, so hack/test.sh runs it before pytest, outside any test timeout.
set -euo pipefail
version=${KUBEFLOW_MPI_OPERATOR_VERSION:-v0.8.2}
out=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}/kubeflow-mpi-operator/$version
binary=$out/mpi-operator
if [ ! -x "$binary" ]; then
  command -v go >/dev/null || { echo "no Go toolchain: the Kubeflow MPI Operator cannot be built" >&2; exit 0; }
  mkdir -p "$out/src"
  # One build at a time (hack/test.sh's background build and a test's fixture may both ask): the second waits.
  exec 9>"$out/.build.lock"
  flock 9
fi
if [ ! -x "$binary" ]; then
  cd "$out/src"
  # A wrapper module: `go install pkg@version` asks the proxy for a version list it does not serve.
  printf 'module kubeflowbuild\n\ngo 1.26.0\n\nrequire github.com/kubeflow/mpi-operator %s\n' "$version" >go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/kubeflow/mpi-operator/cmd/mpi-operator"\n' >tools.go
  echo "building the Kubeflow MPI Operator $version (cached in $out; about 20 min the first time)" >&2
  GOFLAGS=-mod=mod go mod tidy >&2
  GOFLAGS=-mod=mod go build -o "$binary.tmp" github.com/kubeflow/mpi-operator/cmd/mpi-operator >&2
  mv -f "$binary.tmp" "$binary"
fi
echo "$binary"
