#!/usr/bin/env bash
# The JAX compatibility matrix: anvil's wheel against every supported JAX release.
#
#   scripts/compat.sh [VERSION...]        (default: every supported version, oldest first)
#
# Builds the wheel once, then for each JAX version makes (or reuses) a venv under
# $ANVIL_COMPAT_VENVS (default /work/venvs if it exists, else build/compat-venvs) named
# jax-VERSION with jax==VERSION jaxlib==VERSION numpy pytest, installs the wheel into it and runs
# tests/compat/test_compat.py there with JAX_PLATFORMS=anvil,cpu ANVIL_DEVICE_COUNT=4. Prints a
# table (version, the PJRT C API the caller speaks, pass/fail counts); exits non-zero if any
# version failed a check. Environment: PYTHON (interpreter for new venvs, default the project
# venv's),
# ANVIL_COMPAT_FRESH=1 (remake the venvs), ANVIL_COMPAT_WHEEL=FILE (use this wheel, skip the build).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(0.4.35 0.4.38 0.5.3 0.6.2 0.7.2 0.8.3 0.9.2 0.10.2)
if [ -n "${ANVIL_COMPAT_VENVS:-}" ]; then VENVS=$ANVIL_COMPAT_VENVS
elif [ -d /work/venvs ]; then VENVS=/work/venvs
else VENVS=$ROOT/build/compat-venvs; fi
# New venvs use the interpreter behind the project venv (the wheel is built for its version).
if [ -z "${PYTHON:-}" ] && [ -x .venv/bin/python ]; then
  PYTHON=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
fi
PYTHON=${PYTHON:-python3}
OUT=$ROOT/build/compat
mkdir -p "$VENVS" "$OUT"

# The wheel, built once with the project venv's build tools (or any python with pip).
WHEEL=${ANVIL_COMPAT_WHEEL:-}
if [ -z "$WHEEL" ]; then
  echo "== building the wheel"
  rm -rf "$OUT/wheel"
  BUILDPY=$PYTHON
  [ -x .venv/bin/python ] && BUILDPY=.venv/bin/python
  "$BUILDPY" -m pip wheel -q --no-deps --no-build-isolation -w "$OUT/wheel" . \
    || "$BUILDPY" -m pip wheel -q --no-deps -w "$OUT/wheel" .
  WHEEL=$(ls "$OUT"/wheel/anvil_pjrt-*.whl)
fi

declare -A API PASSED FAILED SKIPPED
status=0
for v in "${VERSIONS[@]}"; do
  venv=$VENVS/jax-$v
  echo "== JAX $v ($venv)"
  if [ "${ANVIL_COMPAT_FRESH:-0}" = 1 ]; then rm -rf "$venv"; fi
  if ! "$venv/bin/python" -c "import jax, pytest" 2>/dev/null; then
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install -q "jax==$v" "jaxlib==$v" numpy pytest
  fi
  "$venv/bin/pip" install -q --force-reinstall --no-deps "$WHEEL"
  report=$OUT/jax-$v.json log=$OUT/jax-$v.log
  rm -f "$report"
  set +e
  (cd "$OUT" && env -u ANVIL_LIBRARY_PATH -u PJRT_NAMES_AND_LIBRARY_PATHS \
     JAX_PLATFORMS=anvil,cpu ANVIL_DEVICE_COUNT=4 ANVIL_COMPAT_REPORT="$report" \
     "$venv/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/tests/compat/test_compat.py" \
     >"$log" 2>&1)
  rc=$?
  set -e
  tail -n 15 "$log"
  summary=$(grep -E '^[=]* ?[0-9]+ (passed|failed)' "$log" | tail -n 1 || true)
  PASSED[$v]=$(echo "$summary" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || echo 0)
  FAILED[$v]=$(( $(echo "$summary" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+' || echo 0) + \
                 $(echo "$summary" | grep -oE '[0-9]+ errors?' | grep -oE '[0-9]+' || echo 0) ))
  SKIPPED[$v]=$(echo "$summary" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+' || echo 0)
  API[$v]=$("$venv/bin/python" -c "import json,sys; r=json.load(open(sys.argv[1])); \
m=r['measured_api']; print('0.%s' % r['caller_api'] if r['caller_api'] else \
'0.%d-0.%d' % tuple(m) if m else '?')" "$report" 2>/dev/null || echo "?")
  if [ $rc -ne 0 ] || [ "${FAILED[$v]}" != 0 ] || [ "${PASSED[$v]}" = 0 ]; then status=1; fi
done

echo
echo "| jax / jaxlib | caller's PJRT C API | passed | failed | skipped |"
echo "|---|---|---|---|---|"
for v in "${VERSIONS[@]}"; do
  echo "| $v | ${API[$v]} | ${PASSED[$v]} | ${FAILED[$v]} | ${SKIPPED[$v]} |"
done
# One closing line in the plain form CI reads.
total_p=0 total_f=0
for v in "${VERSIONS[@]}"; do
  total_p=$((total_p + ${PASSED[$v]})) total_f=$((total_f + ${FAILED[$v]}))
done
echo "compat: $total_p passed, $total_f failed"
exit $status
