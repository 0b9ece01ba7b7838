#!/usr/bin/env bash
# Folds what a long fuzzing run grew into the committed corpus tests/fuzz/corpus/NAME, kept
# small: libFuzzer's -merge=1 with edge coverage only (-use_counters=0), files up to 64 KiB,
# and only inputs that add edges beyond the seeds scripts/fuzz.sh already gets from ../shared
# and tests/data (those are not copied); hand-written seeds in the corpus (hostile_*.mlir)
# are kept. Run by hand after a long run, e.g.:
#   build/fuzz/fuzz_text -max_total_time=3600 build/fuzz/grown-text build/fuzz/corpus-text
#   scripts/fuzz_merge.sh text build/fuzz/grown-text
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: fuzz_merge.sh NAME GROWN_DIR...}; shift
BUILD=${BUILD:-build/fuzz}
# what scripts/fuzz.sh seeds the run with (it makes this); fuzz_compile starts from the text
# reader's seeds and its grown corpus, so what those hold is not copied either
seeds="$BUILD/corpus-$name"
[ "$name" = compile ] && seeds="$BUILD/corpus-text"
[ -d "$seeds" ] || { echo "run scripts/fuzz.sh first (it makes $seeds)"; exit 1; }
out=$(mktemp -d)
keep=$(mktemp -d)
trap 'rm -rf "$out" "$keep" "$out.seeds"' EXIT
cp "$seeds"/. "$out"/ -r
[ "$name" = compile ] && [ -d tests/fuzz/corpus/text ] && cp tests/fuzz/corpus/text/. "$out"/ -r
# Hand-written seeds (names that are not a libFuzzer SHA-1, e.g. hostile_*.mlir) stay as they
# are whatever coverage they add; they count as seeds here.
mkdir -p tests/fuzz/corpus/"$name"
find tests/fuzz/corpus/"$name" -maxdepth 1 -type f ! -regex '.*/[0-9a-f]\{40\}' \
    -exec cp {} "$keep"/ \; -exec cp {} "$out"/ \;
ls "$out" > "$out.seeds"
"$BUILD/fuzz_$name" -merge=1 -use_counters=0 -max_len=65536 -rss_limit_mb=4096 "$out" \
    tests/fuzz/corpus/"$name" "$@" 2>&1 | grep -E '^MERGE-OUTER: [0-9]+ new files'
[ "${PIPESTATUS[0]}" = 0 ] || { echo "fuzz_merge: the merge failed"; exit 1; }
(cd "$out" && xargs -r rm -f < "$out.seeds")
rm -f "$out.seeds"
rm -rf tests/fuzz/corpus/"$name"
mkdir -p tests/fuzz/corpus/"$name"
cp "$out"/* "$keep"/* tests/fuzz/corpus/"$name"/ 2>/dev/null || true
echo "tests/fuzz/corpus/$name: $(ls tests/fuzz/corpus/"$name" | wc -l) files, $(cat tests/fuzz/corpus/"$name"/* 2>/dev/null | wc -c) bytes"
