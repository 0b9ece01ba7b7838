#!/usr/bin/env bash
# Runs the test suites of JAX libraries (their own tests, with their own pytest settings) on anvil
# and on JAX's CPU backend, one junit xml per (platform, library), then summarizes them. Not part
# of CI: slow, and the libraries' tests are read from outside this repo, never copied into it.
#
# usage: tests/lib_suites/run.sh SRC_DIR [OUT_DIR]
#   SRC_DIR  holds one folder per library whose tests do not ship in its wheel, at the
#            installed version (see README.md: equinox/, diffrax/, numpyro/); optax's and
#            chex's tests are run from the installed package, as their wheels hold them
#   OUT_DIR  where junit xml, logs and progress logs go (default /tmp/lib_suites_out)
# env knobs (defaults in brackets):
#   LIBS       ["optax chex equinox diffrax"]  which libraries
#   PLATFORMS  ["cpu anvil"]                   JAX_PLATFORMS values, run one after the other
#   TEST_TIMEOUT [300]                         seconds per test (pytest-timeout, thread method:
#                                              a test past it ends the process: a hang)
#   PYTHON     [/work/main/.venv/bin/python]
#   PYTEST_EXTRA                               more pytest args (e.g. "-k 'not slow'")
#   TESTS                                      test paths instead of the library's own (for
#                                              one library; relative to where it runs from)
#   ASAN_PLUGIN                                an ASan+UBSan build of libanvil_pjrt.so: loaded
#                                              instead of the installed one, libasan and
#                                              libstdc++ preloaded; labels get "_asan"
#
# A file that fails to import (equinox's test_pmap asks for jax.devices("cpu") at import) does
# not stop the others (--continue-on-collection-errors); its tests count as not run.
# As in tests/jax_suite/run.sh, a process that dies in a test (crash, sanitizer report, hang)
# is recorded in OUT_DIR/LABEL.LIB.died and the suite goes on without the tests already run.
set -u
SRC=${1:?usage: run.sh SRC_DIR [OUT_DIR]}
OUT=${2:-/tmp/lib_suites_out}
PY=${PYTHON:-/work/main/.venv/bin/python}
LIBS=${LIBS:-"optax chex equinox diffrax"}
PLATFORMS=${PLATFORMS:-"cpu anvil"}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
MAX_RESTARTS=${MAX_RESTARTS:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
RUNNER=$HERE/../jax_suite/pytest_with_dut.py
mkdir -p "$OUT"

# Where each library's tests run from and which paths its developers run; the tests shipped in a
# wheel run from site-packages (a source copy beside the installed package is a second module of
# the same name to pytest).
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
lib_dir() {
  case $1 in
    optax|chex) echo "$site" ;;
    *) echo "$SRC/$1" ;;
  esac
}
lib_tests() {
  case $1 in
    optax|chex) echo "$1" ;;          # *_test.py beside the code, in the wheel
    equinox) echo "tests" ;;          # repository at the release tag
    diffrax) echo "test" ;;
    numpyro) echo "test" ;;           # sdist: test/ (the repository's test/infer, contrib not in it)
    *) return 1 ;;
  esac
}
lib_devices() {
  case $1 in
    optax) echo 8 ;;    # _src/sharding_test.py forces 8 host devices through XLA_FLAGS
    chex) echo 4 ;;     # variants_test and fake_set_n_cpu_devices_test ask for several devices
    equinox) echo 2 ;;  # tests/conftest.py: jax_num_cpu_devices = 2
    *) echo 1 ;;
  esac
}

sanitizer_env=()
if [ -n "${ASAN_PLUGIN:-}" ]; then
  sanitizer_env=(ANVIL_LIBRARY_PATH="$ASAN_PLUGIN"
                 LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
                 ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1
                 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
fi

ran_tests() { [ -f "$1" ] && sed -n 's/^start \(.*\)$/--deselect=\1/p' "$1" | sort -u; }
died_in() {
  [ -f "$1" ] && awk '$1 == "start" {open[$2] = 1; last = $2} $1 == "done" {delete open[$2]}
                      END {if (last in open) print last}' "$1"
}

for lib in $LIBS; do
  tests=$(lib_tests "$lib") || { echo "unknown library $lib" >&2; continue; }
  tests=${TESTS:-$tests}
  dir=$(lib_dir "$lib")
  [ -d "$dir" ] || { echo "missing $dir" >&2; continue; }
  ndev=$(lib_devices "$lib")
  for p in $PLATFORMS; do
    extra_env=()
    [[ "$p" == anvil* ]] && extra_env=(ANVIL_DEVICE_COUNT="$ndev" "${sanitizer_env[@]}")
    label=$p
    [ -n "${ASAN_PLUGIN:-}" ] && [[ "$p" == anvil* ]] && label=${label}_asan
    progress=$OUT/$label.$lib.progress
    rm -f "$OUT/$label.$lib".*xml "$OUT/$label.$lib".*log "$OUT/$label.$lib.died" "$progress"
    restarts=0
    while :; do
      name=$label.$lib
      n=1
      if ls "$OUT/$label.$lib".*xml >/dev/null 2>&1; then
        while [ -e "$OUT/$label.$lib.part$n.xml" ]; do n=$((n+1)); done
        name=$label.$lib.part$n
      fi
      mapfile -t deselect < <(ran_tests "$progress")
      echo "== $label $lib $(date -u +%H:%M:%S) (${#deselect[@]} already run)"
      # shellcheck disable=SC2086
      (cd "$dir" && env JAX_PLATFORMS="$p" "${extra_env[@]}" \
        "$PY" "$RUNNER" "" "$progress" $tests -q -p no:cacheprovider --continue-on-collection-errors \
          --timeout="$TEST_TIMEOUT" --timeout-method=thread \
          --junitxml="$OUT/$name.xml" -o junit_family=xunit1 \
          "${deselect[@]}" ${PYTEST_EXTRA:-} > "$OUT/$name.log" 2>&1)
      rc=$?
      tail -n 1 "$OUT/$name.log"
      dead=$(died_in "$progress")
      [ -z "$dead" ] && break
      echo "$dead rc=$rc" >> "$OUT/$label.$lib.died"
      echo "   died in $dead (exit status $rc)"
      restarts=$((restarts + 1))
      if [ $restarts -ge "$MAX_RESTARTS" ]; then echo "   giving up on $lib"; break; fi
    done
  done
done
"$PY" "$HERE/summarize.py" "$OUT"
