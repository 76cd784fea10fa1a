#!/usr/bin/env bash
# Builds the Kubeflow MPI Operator (the peer of the differential test and the bench) from the Go module proxy into
# the cache, once; prints the binary's path. Prints nothing and exits 0 when there is no Go toolchain (callers skip).
# The first build is long, so hack/make/test.sh runs it before pytest, outside any test timeout.
#   hack/build/kubeflow.sh --e2e   the peer's own e2e suite instead (test/e2e of the same module source, compiled unchanged by
#                            `go test -c`; hack/experiments/peer_e2e/peer_e2e.py runs it), built once too; prints the test binary's path
set -euo pipefail
version=${KUBEFLOW_MPI_OPERATOR_VERSION:-v0.8.2}
out=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}/kubeflow-mpi-operator/$version
binary=$out/mpi-operator
package=github.com/kubeflow/mpi-operator/cmd/mpi-operator
if [ "${1:-}" = --e2e ]; then binary=$out/e2e.test package=github.com/kubeflow/mpi-operator/test/e2e; fi
if [ ! -x "$binary" ]; then
  command -v go >/dev/null || { echo "no Go toolchain: the Kubeflow MPI Operator cannot be built" >&2; exit 0; }
  mkdir -p "$out/src"
  # One build at a time (hack/make/test.sh's background build and a test's fixture may both ask): the second waits.
  exec 9>"$out/.build.lock"
  flock 9
fi
if [ ! -x "$binary" ]; then
  cd "$out/src"
  # A wrapper module: `go install pkg@version` asks the proxy for a version list it does not serve.
  if [ ! -f go.sum ]; then
    printf 'module kubeflowbuild\n\ngo 1.26.0\n\nrequire github.com/kubeflow/mpi-operator %s\n' "$version" >go.mod
    printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/kubeflow/mpi-operator/cmd/mpi-operator"\n' >tools.go
    GOFLAGS=-mod=mod go mod tidy >&2
  fi
  echo "building ${package#github.com/kubeflow/} of the Kubeflow MPI Operator $version (cached in $out; the first build of the two about 20 min)" >&2
  # Pure Go, -trimpath and no DWARF, as hack/worlds/cluster/build.sh builds Kubernetes: the standard library and the
  # dependencies at the same versions compile once for both (the Go build cache keys on these flags). cgo off changes
  # only which DNS resolver the net package uses (Go's own, as in Kubernetes' binaries).
  export CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath -gcflags=all=-dwarf=false"
  if [ "$package" = github.com/kubeflow/mpi-operator/test/e2e ]; then
    # A package of another module's tests: -mod=mod adds what its _test.go files import to the wrapper's go.mod.
    go test -c -ldflags="-s -w" -o "$binary.tmp" "$package" >&2
  else
    go build -ldflags="-s -w" -o "$binary.tmp" "$package" >&2
  fi
  mv -f "$binary.tmp" "$binary"
fi
echo "$binary"
