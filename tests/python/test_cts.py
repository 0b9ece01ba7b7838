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
    for pattern in ("build/anvil-cts", "build/*/anvil-cts", "build*/anvil-cts"):
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
    libc = next((p for p in glob.glob("/lib/x86_64-linux-gnu/libm.so.6") + glob.glob("/lib*/libm.so.6")), None)
    for path in filter(None, [libc, str(tmp_path / "missing.so")]):
        out, lines, (passed, failed, skipped) = run(cts, path)
        assert (passed, failed, skipped) == (0, 1, 0)
        assert out.returncode == 1
        assert lines[0].startswith("FAIL  api.load")
