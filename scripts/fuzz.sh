#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time (FUZZ_SECONDS each, default 20) seeded with
# real inputs: golden/JAX artifacts for the bytecode reader, conformance .mlir files for the
# text reader and for the compiler behind it (fuzz_compile: legalization and lowering),
# JAX-made HloModuleProtos for the HLO reader, plus what long runs found beyond those
# (tests/fuzz/corpus/NAME, grown by hand and folded in with scripts/fuzz_merge.sh). fuzz_pjrt
# drives the PJRT C API from random call sequences. Any crash, leak, hang or sanitizer report
# fails the run. The seed corpora come from ../shared when present (else the local ones).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-20}
SHARED=${ANVIL_SHARED_DIR:-../shared}
BUILD=build/fuzz
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
      -DANVIL_FUZZ=ON -DANVIL_BUILD_TESTS=OFF -DANVIL_BUILD_TOOLS=OFF >/dev/null
ninja -C "$BUILD" -j"${JOBS:-$(nproc)}" fuzz_bytecode fuzz_text fuzz_compile fuzz_hlo fuzz_pjrt >/dev/null

seed_dir() { # name files...
  local dir="$BUILD/corpus-$1"; shift
  rm -rf "$dir"; mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/"; done
  echo "$dir"
}
shopt -s nullglob
bc=$(seed_dir bytecode "$SHARED"/conformance/stablehlo/tests/vhlo/*.mlir.bc "$SHARED"/conformance/jax-export/*.mlirbc)
tx=$(seed_dir text $(ls "$SHARED"/conformance/stablehlo/testdata/*.mlir 2>/dev/null | head -300) \
     $(ls "$SHARED"/conformance/stablehlo/testdata-quantized/*.mlir 2>/dev/null | head -40) tests/data/*.mlir)
hl=$(seed_dir hlo tests/data/hlo/*.pb)
pj=$(seed_dir pjrt)

# New inputs go to the first directory (under build/); the committed corpus is only read.
for t in bytecode:"$bc" text:"$tx" compile:"$tx" hlo:"$hl" pjrt:"$pj"; do
  name=${t%%:*}; corpus=${t#*:}
  grown=()
  for g in tests/fuzz/corpus/"$name" $( [ "$name" = compile ] && echo tests/fuzz/corpus/text ); do
    [ -d "$g" ] && grown+=("$g")
  done
  echo "== fuzz_$name for ${SECONDS_EACH}s ($(ls "$corpus" | wc -l) seeds, plus ${grown[*]:-nothing})"
  "$BUILD/fuzz_$name" -max_total_time="$SECONDS_EACH" -max_len=1048576 -rss_limit_mb=4096 \
      -timeout=60 -print_final_stats=0 "$corpus" "${grown[@]}" 2>&1 | tail -3
done
echo "fuzz: no crashes"
