#!/usr/bin/env bash
# Runs every test: C tests (gcc and clang builds, then an ASan+UBSan build) under ctest, the
# threaded ones again under ThreadSanitizer, then a bounded libFuzzer run of each reader,
# then the Python/JAX tests under pytest against the installed package, and a print/parse
# round trip of every program those tests compiled.
# Expects scripts/setup.sh to have run (it installs the tools and the venv).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

run_ctest() { # build-dir cmake-args...
  local dir=$1; shift
  echo "== C tests: $dir ($*)"
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  ninja -C "$dir" -j"$JOBS"
  (cd "$dir" && ctest --output-on-failure -j"$JOBS")
}

run_ctest build/test-gcc -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo
run_ctest build/test-clang -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${ANVIL_SKIP_SANITIZERS:-0}" != 1 ]; then
  # ASan's leak checker needs ptrace-free mode in some sandboxes; keep it on otherwise.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build/test-asan -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Debug -DANVIL_SANITIZE=ON
fi

if [ "${ANVIL_SKIP_SANITIZERS:-0}" != 1 ]; then
  # ThreadSanitizer (clang) on the C tests that run threads: the soak, the executor, events,
  # the thread pool, multi-device runs. Only those targets are built.
  THREADED="test_soak test_pjrt_execute test_pjrt_event test_thread_pool test_engine_threads
            test_spmd test_hlo_run test_kernels_parallel_paths"
  echo "== C tests under ThreadSanitizer: build/test-tsan"
  cmake -S . -B build/test-tsan -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANVIL_TSAN=ON >/dev/null
  # the XLA FFI handler tests (async handlers, thread pool tasks) when CMake found JAX's headers
  if ninja -C build/test-tsan -t targets all | grep -q '^test_ffi:'; then
    THREADED="$THREADED test_ffi"
  fi
  # shellcheck disable=SC2086
  ninja -C build/test-tsan -j"$JOBS" $THREADED
  (cd build/test-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
     ctest --output-on-failure -j"$JOBS" -R "^($(echo $THREADED | tr ' ' '|'))\$")
fi

if [ "${ANVIL_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== Fuzzing the readers (bounded)"
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} bash scripts/fuzz.sh
fi

echo "== Python tests"
# The wheel is built once: installed here, and tried with other JAX releases below.
rm -rf build/compat/wheel
.venv/bin/pip wheel -q --no-deps --no-build-isolation -w build/compat/wheel .
WHEEL=$(ls build/compat/wheel/anvil_pjrt-*.whl)
.venv/bin/pip install -q --force-reinstall --no-deps "$WHEEL"
# Every program the suites compile is dumped, then must survive print -> parse -> print.
DUMPS=$(mktemp -d)
trap 'rm -rf "$DUMPS"' EXIT
set +e
ANVIL_DUMP_DIR=$DUMPS .venv/bin/python -m pytest -q tests/python "$@"
status=$?
set -e
if [ "${ANVIL_SKIP_SANITIZERS:-0}" != 1 ]; then
  # Programs from JAX's and libraries' suites that once broke anvil, again against the
  # ASan+UBSan plugin of the C tests above (-s: a report reaches the log, not pytest's capture)
  echo "== JAX suite regressions under ASan+UBSan (build/test-asan/libanvil_pjrt.so)"
  ANVIL_LIBRARY_PATH=$PWD/build/test-asan/libanvil_pjrt.so \
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1 \
    .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/python/test_jax_suite_regressions.py || status=1
fi
echo "== Round trip of every program the Python tests compiled (ANVIL_DUMP_DIR)"
find "$DUMPS" -name '*.mlir' -print0 | xargs -0 -r build/test-gcc/anvil-run --roundtrip || status=1
if [ "${ANVIL_SKIP_COMPAT:-0}" != 1 ]; then
  # The oldest and the newest supported JAX (scripts/compat.sh runs them all); in CI in fresh
  # venvs.
  echo "== JAX compatibility: oldest and newest supported releases"
  if [ -n "${CI:-}" ] && [ -z "${ANVIL_COMPAT_VENVS:-}" ]; then
    ANVIL_COMPAT_VENVS=$(mktemp -d)
    export ANVIL_COMPAT_VENVS
    trap 'rm -rf "$DUMPS" "$ANVIL_COMPAT_VENVS"' EXIT
  fi
  ANVIL_COMPAT_WHEEL=$WHEEL bash scripts/compat.sh 0.4.35 0.10.2 || status=1
fi
# pytest exits 5 when nothing was collected; that is a failure of this script too.
exit $status
