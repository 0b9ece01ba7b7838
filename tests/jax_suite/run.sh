#!/usr/bin/env bash
# Runs a sampled slice of JAX's own test suite (tests/ of the jax source release
# matching the installed jax) on anvil and on JAX's CPU backend, one junit xml
# per (platform, file), then summarizes them. Not part of CI: it is slow and the
# JAX tests are read from outside this repo, never copied into it.
#
# usage: tests/jax_suite/run.sh JAX_SRC_DIR [OUT_DIR]
#   JAX_SRC_DIR  a jax source tree of the installed version (holds tests/,
#                conftest.py and pyproject.toml, whose pytest settings apply)
#   OUT_DIR      where junit xml + logs go (default /tmp/jax_suite_out)
# env knobs (defaults in brackets):
#   PLATFORMS  ["anvil cpu"]         which JAX_PLATFORMS to run ("anvil,cpu": anvil
#                                    first, with JAX's CPU backend beside it)
#   FILES      [the list below]      test files, without .py; "wider" for callbacks,
#                                    export, layouts, memories, compilation cache
#   JAX_NUM_GENERATED_CASES [2]      sampled cases per parameterized test
#   TEST_TIMEOUT [60]                seconds per test (pytest-timeout)
#   FILE_TIMEOUT [600]               seconds per file; pytest stops cleanly
#                                    after the running test and still writes
#                                    its junit xml (pytest-timeout session-timeout)
#   PYTHON     [/work/main/.venv/bin/python]
#   PYTEST_EXTRA                     more pytest args (e.g. "-k 'not Grad'")
#   RESUME     [0]                   1: deselect the tests already recorded in
#                                    OUT_DIR/LABEL.FILE*.xml (a run cut short by
#                                    FILE_TIMEOUT) and write LABEL.FILE.partN.xml
#   TEST_DUT                         set jax's jax_test_dut flag (e.g. cpu: the
#                                    tests treat the backend as the CPU one:
#                                    run_on_devices("cpu") tests run); files are
#                                    then labelled PLATFORM_as_DUT
set -u
SRC=${1:?usage: run.sh JAX_SRC_DIR [OUT_DIR]}
OUT=${2:-/tmp/jax_suite_out}
PY=${PYTHON:-/work/main/.venv/bin/python}
PLATFORMS=${PLATFORMS:-"anvil cpu"}
FILES=${FILES:-"lax_test lax_numpy_test lax_control_flow_test lax_autodiff_test random_test api_test pmap_test shard_map_test"}
# FILES=wider: the files beyond the numeric core (host callbacks, export, layouts, memory kinds,
# the compilation cache; issue 19)
[ "$FILES" = wider ] && FILES="python_callback_test debugging_primitives_test export_test layout_test memories_test compilation_cache_test"
export JAX_NUM_GENERATED_CASES=${JAX_NUM_GENERATED_CASES:-2}
TEST_TIMEOUT=${TEST_TIMEOUT:-60}
FILE_TIMEOUT=${FILE_TIMEOUT:-600}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"

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
    label=$p
    [ -n "${TEST_DUT:-}" ] && label=${p}_as_${TEST_DUT}
    name=$label.$f
    deselect=()
    if [ "${RESUME:-0}" = 1 ] && ls "$OUT/$label.$f".*xml >/dev/null 2>&1; then
      n=1; while [ -e "$OUT/$label.$f.part$n.xml" ]; do n=$((n+1)); done
      name=$label.$f.part$n
      mapfile -t deselect < <("$PY" "$HERE/summarize.py" --ran "$OUT" "$label" "$f")
    fi
    echo "== $label $f $(date -u +%H:%M:%S) (${#deselect[@]} deselect args)"
    # TEST_DUT is set by pytest_with_dut.py while pytest captures output (see there).
    # shellcheck disable=SC2086
    (cd "$SRC" && env JAX_PLATFORMS="$p" "${extra_env[@]}" \
      "$PY" "$HERE/pytest_with_dut.py" "${TEST_DUT:-}" \
        "tests/$f.py" -q -p no:cacheprovider \
        --timeout="$TEST_TIMEOUT" --session-timeout="$FILE_TIMEOUT" \
        --junitxml="$OUT/$name.xml" -o junit_family=xunit1 \
        "${deselect[@]}" ${PYTEST_EXTRA:-} > "$OUT/$name.log" 2>&1)
    tail -n 1 "$OUT/$name.log"
  done
done
"$PY" "$HERE/summarize.py" "$OUT"
