#!/usr/bin/env bash
# Runs every test: C tests (gcc and clang builds, then an ASan+UBSan build) under ctest,
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
run_ctest build/test-clang -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${ANVIL_SKIP_SANITIZERS:-0}" != 1 ]; then
  # ASan's leak checker needs ptrace-free mode in some sandboxes; keep it on otherwise.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build/test-asan -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Debug -DANVIL_SANITIZE=ON
fi

if [ "${ANVIL_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== Fuzzing the readers (bounded)"
  FUZZ_SECONDS=${FUZZ_SECONDS:-30} bash scripts/fuzz.sh
fi

echo "== Python tests"
.venv/bin/pip install -q --no-build-isolation .
# Every program the suites compile is dumped, then must survive print -> parse -> print.
DUMPS=$(mktemp -d)
trap 'rm -rf "$DUMPS"' EXIT
set +e
ANVIL_DUMP_DIR=$DUMPS .venv/bin/python -m pytest -q tests/python "$@"
status=$?
set -e
echo "== Round trip of every program the Python tests compiled (ANVIL_DUMP_DIR)"
find "$DUMPS" -name '*.mlir' -print0 | xargs -0 -r build/test-gcc/anvil-run --roundtrip || status=1
# pytest exits 5 when nothing was collected; that is a failure of this script too.
exit $status
