#!/usr/bin/env bash
# Runs test files from tests/ of the jax source release matching the installed jax on anvil and
# on JAX's CPU backend, one junit xml per (platform, file), then summarizes them. Not part of CI:
# it is slow and the JAX tests are read from outside this repo, never copied into it.
#
# usage: tests/jax_suite/run.sh JAX_SRC_DIR [OUT_DIR]
#   JAX_SRC_DIR  a jax source tree of the installed version (holds tests/,
#                conftest.py and pyproject.toml, whose pytest settings apply)
#   OUT_DIR      where junit xml + logs go (default /tmp/jax_suite_out)
# env knobs (defaults in brackets):
#   PLATFORMS  ["anvil cpu"]         which JAX_PLATFORMS to run ("anvil,cpu": anvil
#                                    first, with JAX's CPU backend beside it)
#   FILES      [the list below]      test files, without .py; "wider" for callbacks,
#                                    export, layouts, memories, compilation cache;
#                                    "all" for every tests/*_test.py of JAX_SRC_DIR
#   JAX_NUM_GENERATED_CASES [2]      sampled cases per parameterized test
#   TEST_TIMEOUT [300]               seconds per test (pytest-timeout, thread method: a
#                                    test past it ends the process and counts as a hang)
#   FILE_TIMEOUT [3600]              seconds per file; pytest stops cleanly
#                                    after the running test and still writes
#                                    its junit xml (pytest-timeout session-timeout)
#   PYTHON     [/work/main/.venv/bin/python]
#   PYTEST_EXTRA                     more pytest args (e.g. "-k 'not Grad'")
#   RESUME     [0]                   1: keep what OUT_DIR holds for a file and run only the
#                                    tests its progress log does not list yet
#   TEST_DUT                         set jax's jax_test_dut flag (e.g. cpu: the
#                                    tests treat the backend as the CPU one:
#                                    run_on_devices("cpu") tests run); files are
#                                    then labelled PLATFORM_as_DUT
#   ASAN_PLUGIN                      an ASan+UBSan build of libanvil_pjrt.so (cmake
#                                    -DANVIL_SANITIZE=ON): loaded instead of the installed
#                                    one, with libasan preloaded (and libstdc++, whose
#                                    __cxa_throw ASan must see at start); labels get "_asan"
#
# A process that dies (a crash, an ASan/UBSan report, a hang ended by TEST_TIMEOUT) does not
# end the file: the test it died in is recorded in OUT_DIR/LABEL.FILE.died (with the exit
# status), and the file starts again without the tests already run (LABEL.FILE.partN.xml).
# LABEL.FILE.progress holds every test's outcome as it ends (pytest_with_dut.py), also of the
# tests run before a process died, which no junit xml holds.
set -u
SRC=${1:?usage: run.sh JAX_SRC_DIR [OUT_DIR]}
OUT=${2:-/tmp/jax_suite_out}
PY=${PYTHON:-/work/main/.venv/bin/python}
PLATFORMS=${PLATFORMS:-"anvil cpu"}
FILES=${FILES:-"lax_test lax_numpy_test lax_control_flow_test lax_autodiff_test random_test api_test pmap_test shard_map_test"}
# FILES=wider: the files beyond the numeric core (host callbacks, export, layouts, memory kinds,
# the compilation cache; issue 19)
[ "$FILES" = wider ] && FILES="python_callback_test debugging_primitives_test export_test layout_test memories_test compilation_cache_test"
if [ "$FILES" = all ]; then
  FILES=$(cd "$SRC/tests" && ls ./*_test.py | sed 's|^\./||; s|\.py$||' | tr '\n' ' ')
fi
export JAX_NUM_GENERATED_CASES=${JAX_NUM_GENERATED_CASES:-2}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
FILE_TIMEOUT=${FILE_TIMEOUT:-3600}
MAX_RESTARTS=${MAX_RESTARTS:-40}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
sanitizer_env=()
if [ -n "${ASAN_PLUGIN:-}" ]; then
  # ASan's reports go to files (OUT/LABEL.FILE.sanitizer.PID): pytest captures fd 2, and what
  # a test writes there is lost when the process dies; abort_on_error makes each a SIGABRT.
  # UBSan (gcc 12) ignores log_path and writes to fd 2: pytest then captures nothing (-s; not
  # --capture=sys, whose sys.stdout has no fileno for jtu.capture_stdout), so its reports reach
  # the attempt's log (summarize.py greps them there).
  sanitizer_capture=--capture=no
  sanitizer_env=(ANVIL_LIBRARY_PATH="$ASAN_PLUGIN"
                 LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)")
fi

# The tests a progress log lists (started, finished or not), as --deselect arguments.
ran_tests() {
  [ -f "$1" ] && sed -n 's/^start \(.*\)$/--deselect=\1/p' "$1" | sort -u
}

# The test a progress log shows started and not finished, if any.
died_in() {
  [ -f "$1" ] && awk '$1 == "start" {open[$2] = 1; last = $2} $1 == "done" {delete open[$2]}
                      END {if (last in open) print last}' "$1"
}

for f in $FILES; do
  if [ ! -f "$SRC/tests/$f.py" ]; then
    echo "missing $SRC/tests/$f.py" >&2; continue
  fi
  for p in $PLATFORMS; do
    # Multi-device files get 8 devices on both backends (pmap_test, pjit_test
    # and shard_map_test call jtu.request_cpu_devices(8), so cpu has 8 anyway;
    # with PLATFORMS="anvil,cpu" the cpu backend gets 8 from XLA_FLAGS too).
    extra_env=()
    case $f in
      pmap_test|shard_map_test|pjit_test|array_test|*multi*)
        if [[ "$p" == anvil* ]]; then
          extra_env=(ANVIL_DEVICE_COUNT=8 XLA_FLAGS=--xla_force_host_platform_device_count=8)
        else extra_env=(XLA_FLAGS=--xla_force_host_platform_device_count=8); fi ;;
      *)  # other files ask for N cpu devices with jtu.request_cpu_devices(N): anvil gets as many
        n=$(sed -n 's/^jtu\.request_cpu_devices(\([0-9]*\)).*/\1/p' "$SRC/tests/$f.py" | head -n 1)
        if [ -n "$n" ] && [[ "$p" == anvil* ]]; then extra_env=(ANVIL_DEVICE_COUNT="$n"); fi ;;
    esac
    [[ "$p" == anvil* ]] && extra_env+=("${sanitizer_env[@]}")
    label=$p
    [ -n "${TEST_DUT:-}" ] && label=${p}_as_${TEST_DUT}
    if [ -n "${ASAN_PLUGIN:-}" ] && [[ "$p" == anvil* ]]; then
      label=${label}_asan
      # the sanitizers split their options at commas too: anvil,cpu's comma becomes a '+'
      log="$OUT/${label//,/+}.$f.sanitizer"
      extra_env+=(ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:log_path="$log"
                  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1:log_path="$log")
    fi
    progress=$OUT/$label.$f.progress
    if [ "${RESUME:-0}" != 1 ]; then
      rm -f "$OUT/$label.$f".*xml "$OUT/$label.$f".*log "$OUT/$label.$f.died" "$progress" \
            "$OUT/${label//,/+}.$f.sanitizer".*
    fi
    restarts=0
    while :; do
      # each attempt its own xml and log (one that died wrote no xml, but its log tells why)
      name=$label.$f
      n=1
      if ls "$OUT/$label.$f".*log >/dev/null 2>&1; then
        while [ -e "$OUT/$label.$f.part$n.log" ]; do n=$((n+1)); done
        name=$label.$f.part$n
      fi
      mapfile -t deselect < <(ran_tests "$progress")
      echo "== $label $f $(date -u +%H:%M:%S) (${#deselect[@]} already run)"
      # TEST_DUT is set by pytest_with_dut.py while pytest captures output (see there).
      # shellcheck disable=SC2086
      (cd "$SRC" && env JAX_PLATFORMS="$p" "${extra_env[@]}" \
        timeout -k 30 $((FILE_TIMEOUT + 2 * TEST_TIMEOUT)) \
        "$PY" "$HERE/pytest_with_dut.py" "${TEST_DUT:-}" "$progress" \
          "tests/$f.py" -q -p no:cacheprovider \
          --timeout="$TEST_TIMEOUT" --timeout-method=thread --session-timeout="$FILE_TIMEOUT" \
          --junitxml="$OUT/$name.xml" -o junit_family=xunit1 \
          ${sanitizer_capture:-} "${deselect[@]}" ${PYTEST_EXTRA:-} > "$OUT/$name.log" 2>&1)
      rc=$?
      tail -n 1 "$OUT/$name.log"
      dead=$(died_in "$progress")
      [ -z "$dead" ] && break
      # a rerun that started no test (all deselected: the dead one was the file's last)
      if grep -qF "$dead rc=" "$OUT/$label.$f.died" 2>/dev/null; then break; fi
      # the process died inside a test: record it, then run the rest of the file
      echo "$dead rc=$rc" >> "$OUT/$label.$f.died"
      echo "   died in $dead (exit status $rc)"
      restarts=$((restarts + 1))
      if [ $restarts -ge "$MAX_RESTARTS" ]; then echo "   giving up on $f"; break; fi
    done
  done
done
"$PY" "$HERE/summarize.py" "$OUT"
