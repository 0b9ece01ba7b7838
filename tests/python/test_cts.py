"""anvil-cts (the PJRT conformance suite in tools/cts) run against the installed plugin.

The binary is taken from $ANVIL_CTS_BIN, else from the usual build folders; the test skips
when it has not been built. The suite must report 0 failures, and its --json report must be
valid and agree with the summary line."""

import glob
import json
import os
import re
import subprocess

import pytest

import anvil_pjrt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$")
STATUSES = {"PASS", "FAIL", "UNSUPPORTED", "SKIPPED"}


def find_cts():
    env = os.environ.get("ANVIL_CTS_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    # Plain builds first: under ASan a crash in a check is reported as an exit, not a signal.
    for pattern in ("build/anvil-cts", "build/test-gcc/anvil-cts", "build/test-clang/anvil-cts",
                    "build/*/anvil-cts", "build*/anvil-cts"):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            if os.access(path, os.X_OK):
                return path
    return None


@pytest.fixture(scope="module")
def cts():
    path = find_cts()
    if not path:
        pytest.skip("anvil-cts is not built (set ANVIL_CTS_BIN or build into build/)")
    return path


@pytest.fixture(scope="module")
def plugin():
    path = anvil_pjrt.library_path()
    if not os.path.exists(path):
        pytest.skip(f"plugin library not found at {path}")
    return path


def run(cts, *args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    out = subprocess.run([cts, *args], capture_output=True, text=True, timeout=600, env=env)
    lines = out.stdout.strip().splitlines()
    assert lines, f"no output; stderr: {out.stderr[-2000:]}"
    m = SUMMARY.match(lines[-1])
    assert m, f"last line is not the summary: {lines[-1]!r}"
    return out, lines, tuple(int(x) for x in m.groups())


def failures(lines):
    return [line for line in lines if line.startswith("FAIL")]


@pytest.mark.parametrize("devices", ["1", "4"])
def test_suite_passes_on_anvil(cts, plugin, tmp_path, devices):
    report = tmp_path / "cts.json"
    out, lines, (passed, failed, skipped) = run(
        cts, plugin, "--json", str(report), env_extra={"ANVIL_DEVICE_COUNT": devices})
    assert failed == 0, "\n".join(failures(lines))
    assert out.returncode == 0
    assert passed > 0
    data = json.loads(report.read_text())
    assert data["summary"] == {"passed": passed, "failed": failed, "skipped": skipped}
    checks = data["checks"]
    assert len(checks) == passed + failed + skipped
    assert len({c["name"] for c in checks}) == len(checks)
    for c in checks:
        assert c["status"] in STATUSES
        assert isinstance(c["message"], str)
        assert c["duration_ms"] >= 0
    counted = sum(c["status"] == "PASS" for c in checks)
    assert counted == passed


def test_list_and_filter(cts, plugin):
    listed = subprocess.run([cts, "--list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    assert len(names) >= 50 and len(set(names)) == len(names)
    _, lines, (passed, failed, skipped) = run(cts, plugin, "--filter", "buffer.roundtrip")
    assert passed + failed + skipped == 1
    assert any("buffer.roundtrip" in line for line in lines)


def test_reports_a_library_that_is_not_a_plugin(cts, tmp_path):
    """A .so without GetPjrtApi, and a missing file, are one clean FAIL each, not a crash."""
    libm = next(iter(glob.glob("/lib/x86_64-linux-gnu/libm.so.6") + glob.glob("/lib*/libm.so.6")),
                None)
    for path in filter(None, [libm, str(tmp_path / "missing.so")]):
        out, lines, (passed, failed, skipped) = run(cts, path)
        assert (passed, failed, skipped) == (0, 1, 0)
        assert out.returncode == 1
        assert lines[0].startswith("FAIL  api.load")


# A plugin that wraps the real one and breaks a few functions in known ways: the suite must
# report exactly those as FAIL (crash, hang, NULL slot, wrong answer) and carry on.
MUTANT_SOURCE = r"""
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "anvil/pjrt_c_api.h"

static PJRT_Api api;
static const PJRT_Api *real;

static PJRT_Error *crash_lookup(PJRT_Client_LookupDevice_Args *a) {
  (void)a;
  raise(SIGSEGV);
  return NULL;
}
static PJRT_Error *hang_stats(PJRT_Device_MemoryStats_Args *a) {
  (void)a;
  for (;;) pause();
}
static PJRT_Error *wrong_type(PJRT_Buffer_ElementType_Args *a) {
  PJRT_Error *e = real->PJRT_Buffer_ElementType(a);
  if (!e && a->type == PJRT_Buffer_Type_S16) a->type = PJRT_Buffer_Type_U16;
  return e;
}

const PJRT_Api *GetPjrtApi(void) {
  if (!real) {
    void *h = dlopen(getenv("CTS_REAL_PLUGIN"), RTLD_NOW | RTLD_LOCAL);
    if (!h) return NULL;
    real = ((const PJRT_Api *(*)(void))dlsym(h, "GetPjrtApi"))();
    memcpy(&api, real, real->struct_size < sizeof api ? real->struct_size : sizeof api);
    api.PJRT_Client_LookupDevice = crash_lookup;
    api.PJRT_Device_MemoryStats = hang_stats;
    api.PJRT_Buffer_ElementType = wrong_type;
    api.PJRT_Buffer_OnDeviceSizeInBytes = NULL;
  }
  return &api;
}
"""


def test_suite_detects_a_broken_plugin(cts, plugin, tmp_path):
    cc = next((c for c in ("cc", "gcc", "clang") if subprocess.run(
        ["which", c], capture_output=True).returncode == 0), None)
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "mutant.c"
    src.write_text(MUTANT_SOURCE)
    lib = tmp_path / "libmutant.so"
    subprocess.run([cc, "-shared", "-fPIC", "-I", os.path.join(ROOT, "include"), str(src),
                    "-o", str(lib), "-ldl"], check=True)
    report = tmp_path / "mutant.json"
    out, lines, (passed, failed, skipped) = run(
        cts, str(lib), "--timeout", "3", "--json", str(report),
        env_extra={"CTS_REAL_PLUGIN": plugin, "ASAN_OPTIONS": "handle_segv=0:handle_abort=0"})
    assert out.returncode == 1
    checks = {c["name"]: c for c in json.loads(report.read_text())["checks"]}
    assert "SIGSEGV" in checks["client.lookup_device"]["message"]
    assert checks["client.lookup_device"]["status"] == "FAIL"
    assert checks["error.lookup_bad_ids"]["status"] == "FAIL"
    assert checks["device.memory_stats"]["status"] == "FAIL"
    assert "timed out" in checks["device.memory_stats"]["message"]
    assert checks["api.core_slots"]["status"] == "FAIL"
    assert "PJRT_Buffer_OnDeviceSizeInBytes" in checks["api.core_slots"]["message"]
    assert checks["buffer.roundtrip"]["status"] == "FAIL"
    assert checks["buffer.uninitialized"]["status"] in ("FAIL", "UNSUPPORTED")
    assert checks["buffer.standard_types"]["status"] == "FAIL"
    assert "s16" in checks["buffer.standard_types"]["message"]
    # Everything untouched by the mutations still passes: the suite carried on.
    for name in ("client.devices", "buffer.delete", "event.on_ready", "buffer.strides"):
        assert checks[name]["status"] in ("PASS", "UNSUPPORTED"), checks[name]
    assert passed > 20
