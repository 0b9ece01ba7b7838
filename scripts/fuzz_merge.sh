#!/usr/bin/env bash
# Folds what a long fuzzing run grew into the committed corpus tests/fuzz/corpus/NAME, kept
# small: libFuzzer's -merge=1 with edge coverage only (-use_counters=0), files up to 64 KiB,
# and only inputs that add edges beyond the seeds scripts/fuzz.sh already gets from ../shared
# and tests/data (those are not copied). Run by hand after a long run, e.g.:
#   build/fuzz/fuzz_text -max_total_time=3600 build/fuzz/grown-text build/fuzz/corpus-text
#   scripts/fuzz_merge.sh text build/fuzz/grown-text
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: fuzz_merge.sh NAME GROWN_DIR...}; shift
BUILD=${BUILD:-build/fuzz}
seeds="$BUILD/corpus-$name" # what scripts/fuzz.sh seeds the run with (it makes this)
[ -d "$seeds" ] || { echo "run scripts/fuzz.sh first (it makes $seeds)"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp "$seeds"/. "$out"/ -r
ls "$seeds" > "$out.seeds"
mkdir -p tests/fuzz/corpus/"$name"
"$BUILD/fuzz_$name" -merge=1 -use_counters=0 -max_len=65536 -rss_limit_mb=4096 "$out" \
    tests/fuzz/corpus/"$name" "$@" 2>&1 | grep -E '^MERGE-OUTER: [0-9]+ new files'
[ "${PIPESTATUS[0]}" = 0 ] || { echo "fuzz_merge: the merge failed"; exit 1; }
(cd "$out" && xargs -r rm -f < "$out.seeds")
rm -f "$out.seeds"
rm -rf tests/fuzz/corpus/"$name"
mkdir -p tests/fuzz/corpus/"$name"
cp "$out"/* tests/fuzz/corpus/"$name"/ 2>/dev/null || true
echo "tests/fuzz/corpus/$name: $(ls tests/fuzz/corpus/"$name" | wc -l) files, $(cat tests/fuzz/corpus/"$name"/* 2>/dev/null | wc -c) bytes"
