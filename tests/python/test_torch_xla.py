"""PyTorch/XLA on anvil: the DevicePlugin class, device listing through the entry point
(PJRT_DEVICE=ANVIL) and through PJRT_DEVICE=LIBRARY, and tensor arithmetic against torch on
the CPU. torch_xla runs in subprocesses (it initialises its runtime once per process).
Tests needing torch_xla skip when it is not installed."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HAVE_TORCH_XLA = importlib.util.find_spec("torch_xla") is not None
needs_torch_xla = pytest.mark.skipif(not HAVE_TORCH_XLA, reason="torch_xla not installed")


def _env(extra):
    env = dict(os.environ)
    for k in ("PJRT_DEVICE", "PJRT_LIBRARY_PATH", "ANVIL_DEVICE_COUNT", "JAX_PLATFORMS"):
        env.pop(k, None)
    env.update(extra)
    return env


def _library_path():
    import anvil_pjrt

    path = anvil_pjrt.library_path()
    if not os.path.exists(path):
        pytest.skip(f"plugin library not built/installed at {path}")
    return path


def _run(script, extra, timeout=300):
    out = subprocess.run([sys.executable, "-c", script], env=_env(extra), capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, f"stdout:\n{out.stdout}\nstderr:\n{out.stderr[-4000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_anvil_pjrt_does_not_import_torch():
    got = _run("import json, sys, anvil_pjrt\n"
               "print(json.dumps(sorted(m for m in sys.modules "
               "if m.split('.')[0] in ('torch', 'torch_xla'))))", {})
    assert got == []


@needs_torch_xla
def test_plugin_hooks():
    got = _run(
        # torch_xla first: its import discovers and loads this plugin module itself.
        "import json, torch_xla, anvil_pjrt\n"
        "from anvil_pjrt.torch_xla_plugin import AnvilPlugin\n"
        "from torch_xla.experimental import plugins\n"
        "p = AnvilPlugin()\n"
        "p.configure_single_process()\n"
        "print(json.dumps({'is_plugin': isinstance(p, plugins.DevicePlugin),\n"
        "  'lib': p.library_path(), 'want_lib': anvil_pjrt.library_path(),\n"
        "  'chips': p.physical_chip_count(), 'opts': p.client_create_options(),\n"
        "  'coord': p.requires_xla_coordinator()}))",
        {"ANVIL_DEVICE_COUNT": "3"})
    assert got["is_plugin"]
    assert got["lib"] == got["want_lib"]
    assert got["chips"] == 1
    assert got["opts"] == {"device_count": 3}
    assert got["coord"] is False


# The DevicePlugin interface of torch_xla 2.9 (torch_xla/experimental/plugins.py, see
# research notes torch_xla_plugin.md §1), as a stand-in module so the plugin class is
# exercised without torch installed.
STUB_PLUGINS = """
class DevicePlugin:
    def library_path(self):
        raise NotImplementedError()
    def host_index(self):
        return 0
    def configure_single_process(self):
        raise NotImplementedError()
    def configure_multiprocess(self, local_rank, local_world_size):
        pass
    def physical_chip_count(self):
        return 1
    def client_create_options(self):
        return {}
    def requires_xla_coordinator(self):
        return False
"""


def test_plugin_hooks_against_stub_interface(tmp_path):
    pkg = tmp_path / "torch_xla" / "experimental"
    pkg.mkdir(parents=True)
    (tmp_path / "torch_xla" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "plugins.py").write_text(STUB_PLUGINS)
    script = (
        "import json, os, anvil_pjrt\n"
        "from anvil_pjrt.torch_xla_plugin import AnvilPlugin\n"
        "p = AnvilPlugin()\n"
        "p.configure_single_process()\n"
        "single = p.client_create_options()\n"
        "p.configure_multiprocess(0, 1)\n"
        "one_process = p.client_create_options()\n"
        "p.configure_multiprocess(1, 4)\n"
        "print(json.dumps({'lib': p.library_path(), 'want_lib': anvil_pjrt.library_path(),\n"
        "  'chips': p.physical_chip_count(), 'single': single, 'one_process': one_process,\n"
        "  'multi': p.client_create_options(), 'host': p.host_index(),\n"
        "  'coord': p.requires_xla_coordinator()}))")
    env = {"ANVIL_DEVICE_COUNT": "3", "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=_env(env))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["lib"] == got["want_lib"]
    assert got["chips"] == 1
    assert got["single"] == {"device_count": 3}
    # One spawned process keeps every device (a thread per device).
    assert got["one_process"] == {"device_count": 3}
    # Each spawned process gets a one-device client of its own.
    assert got["multi"] == {"device_count": 1}
    assert got["host"] == 0
    assert got["coord"] is False


DEVICES = """
import json, torch_xla
import torch_xla.runtime as xr
devs = torch_xla.devices()
print(json.dumps({"n": len(devs), "type": xr.device_type(), "strs": [str(d) for d in devs]}))
"""


@needs_torch_xla
def test_devices_via_library():
    lib = _library_path()
    got = _run(DEVICES, {"PJRT_DEVICE": "LIBRARY", "PJRT_LIBRARY_PATH": lib,
                         "ANVIL_DEVICE_COUNT": "2"})
    # LIBRARY passes no create options; the plugin itself reads ANVIL_DEVICE_COUNT.
    assert got["type"] == "LIBRARY"
    assert got["n"] == 2


@needs_torch_xla
def test_devices_via_entry_point():
    from importlib.metadata import entry_points

    if not any(ep.name == "anvil" for ep in entry_points(group="torch_xla.plugins")):
        pytest.skip("anvil_pjrt installed without the torch_xla.plugins entry point")
    _library_path()
    got = _run(DEVICES, {"PJRT_DEVICE": "ANVIL", "ANVIL_DEVICE_COUNT": "2"})
    assert got["type"] == "ANVIL"
    assert got["n"] == 2


ARITH = """
import json, torch, torch_xla
torch.manual_seed(0)
a = torch.randn(4, 3); b = torch.randn(3, 5); c = torch.randn(5)
def f(a, b, c):
    y = torch.relu(a @ b + c)
    return (y * 2.0 - 1.0).sum(dim=0), y.max(), torch.exp(-y.abs()).mean(dim=1)
dev = torch_xla.device()
want = f(a, b, c)
got = [t.cpu() for t in f(a.to(dev), b.to(dev), c.to(dev))]
print(json.dumps({"ok": [bool(torch.allclose(g, w, rtol=1e-5, atol=1e-5))
                         for g, w in zip(got, want)],
                  "got": [g.tolist() for g in got], "want": [w.tolist() for w in want]}))
"""


@needs_torch_xla
def test_tensor_arithmetic_matches_torch_cpu():
    lib = _library_path()
    got = _run(ARITH, {"PJRT_DEVICE": "LIBRARY", "PJRT_LIBRARY_PATH": lib})
    assert all(got["ok"]), got
