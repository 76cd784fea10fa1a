#!/usr/bin/env bash
# The test suite, or one tier of it: `hack/make/test.sh [unit|runner|integration|e2e|kueue|gang] [pytest args]`.
# Without a tier, every tier but kueue and gang's Volcano runs (`make test`, CI). Each tier is named as its folder,
# and tests/conftest.py marks each test with its folder's name (pytest -m TIER):
#   unit         tests/unit         no processes, seconds                                       make test-unit
#   runner       tests/runner       ansible-runner/-playbook/-test, bash processes; no cluster   make test-runner
#   integration  tests/integration  an API server (the local kwok cluster, or $KUBECONFIG)      make test-integration
#   e2e          tests/e2e + the integration tests marked e2e: the real kubelet + containerd node  make test-e2e
#   kueue        tests/kueue        a real Kueue (hack/worlds/kueue/up.sh) in front of the operator; one process, and
#                                   only when asked: Kueue's webhooks see every MPIJob and Job created  make test-kueue
#   gang         the integration tests marked gang (tests/integration/test_gang.py) on every gang scheduler, Volcano's
#                included; `make test` runs them on scheduler-plugins only (the tests marked volcano are left out: its
#                build is 400 CPU-seconds of Go beside the tests on a fresh machine)                   make test-gang
#
# How a full run spends its time (docs/dev/testing.md has the measured numbers):
#   1. the Debian packages the node and the image builds need (seconds when installed);
#   2. everything slow to build, outside pytest's per-test timeout: the local cluster (Kubernetes from source), the
#      real node and its images, the operator image (long on a fresh machine, seconds once cached); the
#      Horovod image and the Kubeflow peer go on building in the background, and the tests that need them wait for
#      them (their locks). Then the unit and runner tiers, which need none of it, in the background beside phases 3
#      and 4 (the cluster tiers wait on pods and timers for a good part of their time);
#   3. the integration and e2e tiers, on one process, or on MPI_TEST_WORKERS workers (pytest-xdist, --dist
#      loadgroup): every test owns its namespace; tests that share fixed names run on one worker (xdist_group);
#   4. the tests marked `serial`: they change what every concurrent test depends on (the CRD, a cluster-wide
#      operator); the image-archive tests last.
# Each phase's pytest output is printed as it runs (the unit and runner tiers' when they end); the last line is the
# total over every phase.
set -euo pipefail
source "$(dirname "$0")/env.sh"

tier=all
case "${1:-}" in unit | runner | integration | e2e | kueue | gang) tier=$1; shift ;; esac
# all: the cluster tiers of `make test` (the unit and runner tiers run beside them, phase 2).
declare -A select=([unit]="unit" [runner]="runner" [integration]="integration and not e2e and not volcano" [e2e]="e2e"
  [kueue]="kueue" [gang]="gang" [all]="(integration or e2e) and not volcano")
# 3 by default: enough to keep this project's 2-core machines busy while tests wait on pods and timers, and more were
# slower (docs/dev/testing.md has the numbers). MPI_TEST_WORKERS=1: one process.
workers=${MPI_TEST_WORKERS:-3}
results=$root/build/test-results
rm -rf "$results"
mkdir -p "$results"
t_start=$SECONDS
timings=()  # "phase seconds" lines for the summary
# children_cpu: sets children_cpu_s to the CPU seconds (user + system) of this shell's children that have ended
# (/proc's cutime + cstime): a phase's or build step's processes and theirs (compilers, pytest workers, playbooks), not
# the cluster's daemons. A variable, not output: $(...) would read the stat of the subshell it runs in.
clk_tck=$(getconf CLK_TCK)
children_cpu() { local f; read -ra f <"/proc/$BASHPID/stat"; children_cpu_s=$(((f[15] + f[16]) / clk_tck)); }

# run_pytest NAME SELECTION [pytest args...]: one phase; its junit XML and exit code go to $results/NAME.*.
# pytest's 5 (nothing selected) is recorded as such: the total decides whether anything ran at all.
run_pytest() {
  local name=$1 selection=$2 start=$SECONDS cpu rc; shift 2
  children_cpu; cpu=$children_cpu_s
  echo "=== $name: pytest -m '$selection' $*"
  set +e
  .venv/bin/python -m pytest tests -q --durations=15 --timeout=1200 -p no:cacheprovider -m "$selection" \
    --junitxml="$results/$name.xml" "$@"
  rc=$?
  set -e
  echo "$rc" >"$results/$name.rc"
  timings+=("$name $((SECONDS - start))")
  children_cpu
  echo "=== $name: exit $rc in $((SECONDS - start)) s, $((children_cpu_s - cpu)) CPU-s"
}

# The builds: each step timed into $results/build.log; exit status in $results/build.rc. Go compiles on both cores
# while debootstrap and apt wait on the network and the disk, so the images' tars are made meanwhile; the real node's
# (the MPI images, at full priority: the node waits for them, hack/build/images/build.sh's per-image locks make its own
# build.sh call wait, then import them), and Horovod's (niced: its compile is long and only the e2e tiers' Horovod
# jobs need it), and so is the Kubeflow peer, which only its differential tests need: they wait for it
# (hack/build/kubeflow.sh's lock), the run does not (docs/dev/testing.md: what the other orders cost).
build() {
  local local_kubeconfig=$1 start cpu
  step() {
    children_cpu; start=$SECONDS cpu=$children_cpu_s
    echo "[build] $1 ..."
    "${@:2}" >/dev/null || { echo "[build] $1 failed" >&2; return 1; }
    children_cpu
    echo "[build] $1: $((SECONDS - start)) s, $((children_cpu_s - cpu)) CPU-s"
  }
  if [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then
    (step "image tars (pause, openmpi4, openmpi5, mpich, intel, operator)" bash hack/build/images/build.sh --no-import \
       pause openmpi4 openmpi5 mpich intel operator 2>"$results/image-tars.log" || true) &
    # Horovod's base (Debian 12, debootstrap) at full priority first: the MPI images' tars start from the same base
    # and wait for whichever build.sh makes it (its lock), so niced it would hold the real node back.
    (step "image tar (horovod)" bash -c 'bash hack/build/images/build.sh --no-import debian-bookworm &&
       exec nice bash hack/build/images/build.sh --no-import horovod' 2>"$results/image-horovod.log" || true) &
    echo $! >"$results/building.horovod"
    # The execution environment (ansible-builder, podman; mostly pip's downloads), niced, for test_navigator.py, whose
    # own call to hack/build/ee.sh waits for this one (its lock) and then finds podman's layers cached.
    if [ "$tier" = all ] || [ "$tier" = integration ]; then
      (step "execution environment" nice bash hack/build/ee.sh 2>"$results/ee.log" || true) &
    fi
  fi
  if [ "$tier" = kueue ]; then
    (step "Kueue" nice bash hack/worlds/kueue/build.sh 2>"$results/kueue-build.log" || true) &
  fi
  if [ "$tier" = all ] || [ "$tier" = integration ]; then
    (step "Kubeflow peer" nice bash hack/build/kubeflow.sh 2>"$results/kubeflow.log" || true) &
    echo $! >"$results/building.kubeflow-peer"
  fi
  if [ "$tier" = all ] || [ "$tier" = integration ] || [ "$tier" = gang ]; then
    # The gang scheduler (scheduler-plugins, Go): niced likewise; tests/integration/test_gang.py waits for it (its lock).
    (step "scheduler-plugins" nice bash hack/worlds/gang/build.sh 2>"$results/scheduler-plugins.log" || true) &
    echo $! >"$results/building.scheduler-plugins"
  fi
  if [ "$tier" = gang ]; then
    # Volcano's scheduler only here: in `make test` its build was 413 CPU-seconds of Go beside the tests of a cold run.
    (step "volcano" nice bash hack/worlds/volcano/build.sh 2>"$results/volcano.log" || true) &
  fi
  step "cluster (Kubernetes, the real node, its images)" bash hack/worlds/cluster/up.sh || return 1
  if KUBECONFIG=$local_kubeconfig "$(dirname "$local_kubeconfig")/../bin/kubectl" get node mpi-real-node >/dev/null 2>&1
  then
    # The images every in-cluster install runs (the operator; kubectl-delivery, v1 launchers' init container). Not
    # Horovod's: its tar goes on building (niced, above) into the cluster tiers, and the e2e tests that run it import
    # it through hack/build/images/build.sh, which waits for that tar (its lock): the cluster tiers start when the node
    # is Ready, not when Horovod's compile ends.
    step "images (operator, kubectl-delivery)" bash hack/build/images/build.sh operator kubectl-delivery || return 1
  fi
}

# renice_tree PID: the process and its descendants back to nice 0 (root only; elsewhere they stay niced).
renice_tree() {
  local child
  renice -n 0 -p "$1" >/dev/null 2>&1 || return 0
  for child in $(pgrep -P "$1" || true); do renice_tree "$child"; done
}

cluster_tiers=0
case $tier in all | integration | e2e | kueue | gang) cluster_tiers=1 ;; esac
build_pid=
if [ "$cluster_tiers" = 1 ]; then
  # A reachable $KUBECONFIG of the user's own is used as it is (the fixtures decide the same).
  local_kubeconfig=${MPI_OPERATOR_CACHE:-$HOME/.cache/mpi-operator}/cluster/kubeconfig
  users_cluster_answers() {
    .venv/bin/python -c 'from kubernetes import client, config
client.VersionApi(config.new_client_from_config()).get_code(_request_timeout=5)' >/dev/null 2>&1
  }
  if [ -z "${KUBECONFIG:-}" ] || [ "$(realpath -m "$KUBECONFIG")" = "$(realpath -m "$local_kubeconfig")" ] ||
     ! users_cluster_answers; then
    start=$SECONDS
    # The tools of the image builds first: the runner tier's build tests look for them before the cluster is up.
    bash hack/worlds/node/packages.sh
    timings+=("packages $((SECONDS - start))")
    { build "$local_kubeconfig"; echo $? >"$results/build.rc"; } >"$results/build.log" 2>&1 &
    build_pid=$!
    # Every worker takes this cluster as it is: no worker runs up.sh again (tests/integration/_fixtures/cluster.py).
    export MPI_TEST_CLUSTER_UP=$local_kubeconfig
  else
    (bash hack/build/kubeflow.sh >/dev/null)  # the differential tests' peer, for the user's cluster too
  fi
fi

# Phase 2: the tiers that need no cluster, in the background beside the cluster tiers (its output is printed when it
# ends). It starts when the builds end, not beside them: they keep both cores busy on a cold machine, so there it
# only made the node Ready later, while the cluster tiers leave a fifth of the machine idle (they wait on pods and
# timers). With warm caches the builds take seconds.
phase2_pid=
start_phase2() {
  [ "$tier" = all ] || return 0
  phase2_start=$SECONDS
  { run_pytest unit-runner "unit or runner" -n 2 --dist loadgroup "$@"
    echo "$((SECONDS - phase2_start))" >"$results/unit-runner.seconds"; } >"$results/unit-runner.log" 2>&1 &
  phase2_pid=$!
}
case $tier in
  all) [ -n "$build_pid" ] || start_phase2 "$@" ;;
  unit | runner) run_pytest "$tier" "${select[$tier]}" -n 2 --dist loadgroup "$@" ;;
esac

# print_phase2: waits for the background phase 2 and prints its output (once).
print_phase2() {
  [ -n "$phase2_pid" ] || return 0
  wait "$phase2_pid" || true
  cat "$results/unit-runner.log"
  timings+=("unit-runner $(cat "$results/unit-runner.seconds" 2>/dev/null || echo '?')")
  phase2_pid=
}

if [ -n "$build_pid" ]; then
  start=$SECONDS
  wait "$build_pid" || true
  cat "$results/build.log"
  timings+=("builds $((SECONDS - start))")
  if [ "$(cat "$results/build.rc" 2>/dev/null)" != 0 ]; then
    start_phase2 "$@"
    print_phase2
    echo "the builds failed (above)" >&2
    exit 1
  fi
  # The builds still going (Horovod's image, the Kubeflow peer: niced so far, the cluster came first) are now what
  # some tests wait for: back to normal priority, and named to pytest (MPI_TEST_BUILDING), whose order then puts
  # the groups that need them after most other tests (tests/conftest.py).
  building=()
  for f in "$results"/building.*; do
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null || continue
    building+=("${f##*/building.}")
    renice_tree "$(cat "$f")"
  done
  export MPI_TEST_BUILDING="${building[*]}"
  [ -z "$MPI_TEST_BUILDING" ] || echo "still building, beside the tests: $MPI_TEST_BUILDING"
  start_phase2 "$@"
elif [ "$cluster_tiers" = 0 ]; then
  print_phase2
fi

# Phases 3 and 4: the tiers that need the cluster, in parallel, then the serial tests alone.
if [ "$cluster_tiers" = 1 ]; then
  tiers=${select[$tier]}
  if [ "$tier" = kueue ] || [ "$tier" = gang ]; then
    run_pytest "$tier" "$tiers" -p no:xdist "$@"
  else
    if [ "$workers" -gt 1 ]; then
      run_pytest parallel "($tiers) and not serial" -n "$workers" --dist loadgroup --no-loadscope-reorder "$@"
    else
      run_pytest cluster "($tiers) and not serial" -p no:xdist "$@"
    fi
    run_pytest serial "($tiers) and serial" -p no:xdist "$@"
  fi
fi
print_phase2

# What was still building after the builds' main chain (the Kubeflow peer, its tests waited for it).
[ ! -f "$results/build.log" ] || grep "^\[build\] Kubeflow peer:" "$results/build.log" || true
# The CPU the cluster's daemons used since they started (in a run that started them: the whole run), which no
# phase's count includes.
daemons=()
for d in etcd kube-apiserver kube-controller kube-scheduler kwok kubelet containerd coredns; do  # comm: 15 characters
  for pid in $(pgrep -x "$d" || true); do
    read -ra f 2>/dev/null <"/proc/$pid/stat" || continue
    daemons+=("$d $(((f[13] + f[14]) / clk_tck))")
  done
done
[ ${#daemons[@]} -eq 0 ] || echo "the cluster's daemons, CPU-s since they started: $(IFS=,; echo "${daemons[*]}" | sed 's/,/, /g')"

# The total over every phase, from their junit XML; any phase that failed fails the run, and so does a run in
# which no test ran at all (pytest's 5 in every phase).
.venv/bin/python - "$results" "$((SECONDS - t_start))" "${timings[@]}" <<'PY'
import pathlib, sys
import xml.etree.ElementTree as ET

results, total_s, timings = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
failed_phases = []
failed_tests = []  # named again here: a log's tail (all CI shows) must say which tests failed, not only how many
for rc_file in sorted(results.glob("*.rc")):
    if rc_file.stem == "build":
        continue
    rc = int(rc_file.read_text())
    if rc not in (0, 5):
        failed_phases.append(f"{rc_file.stem} (exit {rc})")
    xml = rc_file.with_suffix(".xml")
    if xml.exists():
        for suite in ET.parse(xml).getroot().iter("testsuite"):
            for key in counts:
                counts[key] += int(suite.get(key, 0))
            for case in suite.iter("testcase"):
                for bad in (*case.findall("failure"), *case.findall("error")):
                    first = (bad.get("message") or "").strip().splitlines()[:1]
                    failed_tests.append(f"  {rc_file.stem}: {case.get('classname')}::{case.get('name')}: {' '.join(first)[:200]}")
passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
print("time by phase: " + ", ".join(f"{name} {s} s" for name, s in (t.split() for t in timings)) + f"; total {total_s} s")
if failed_phases:
    print("failed phases: " + ", ".join(failed_phases))
if failed_tests:
    print("failed tests:", *failed_tests, sep="\n")
if counts["tests"] == 0:
    print("no test ran: failing")
print(f"total: {passed} passed, {counts['failures'] + counts['errors']} failed, {counts['skipped']} skipped")
sys.exit(1 if failed_phases or counts["tests"] == 0 or passed == 0 else 0)
PY
