"""The plugin loads through JAX's plugin discovery and exposes the requested devices."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import json, jax
devs = jax.devices()
print(json.dumps({"platform": devs[0].platform, "n": len(devs),
                  "ids": [d.id for d in devs], "reprs": [repr(d) for d in devs],
                  "kinds": [d.device_kind for d in devs],
                  "backend_platform": jax.default_backend()}))
"""


def run_jax(env_extra):
    env = dict(os.environ)
    env.pop("ANVIL_DEVICE_COUNT", None)
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("n", [1, 4])
def test_device_count_from_env(n):
    info = run_jax({"JAX_PLATFORMS": "anvil", "ANVIL_DEVICE_COUNT": str(n)})
    assert info["platform"] == "anvil"
    assert info["backend_platform"] == "anvil"
    assert info["n"] == n
    assert info["ids"] == list(range(n))
    assert len(set(info["reprs"])) == n


def test_default_is_one_device():
    info = run_jax({"JAX_PLATFORMS": "anvil"})
    assert info["n"] == 1


def test_device_count_from_jax_create_options():
    # jax_pjrt_client_create_options reaches PJRT_Client_Create as named values.
    env = {"JAX_PLATFORMS": "anvil", "JAX_PJRT_CLIENT_CREATE_OPTIONS": "device_count:3"}
    info = run_jax(env)
    assert info["n"] == 3


def test_bad_option_fails_cleanly():
    env = dict(os.environ, JAX_PLATFORMS="anvil", ANVIL_DEVICE_COUNT="0")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "device_count" in out.stderr.lower()


def test_plugin_attributes(anvil_device):
    from jax.extend import backend as jex_backend

    backend = jex_backend.get_backend("anvil")
    assert backend.platform == "anvil"
    assert "PJRT C API" in backend.platform_version
    version = tuple(backend.stablehlo_current_version)
    assert len(version) == 3 and version >= (1, 0, 0)
    assert backend.xla_version >= 1


def test_dump_dir_writes_every_compiled_program(tmp_path):
    script = ("import jax, jax.numpy as jnp\n"
              "print(float(jax.jit(lambda x: jnp.sin(x).sum())(jnp.ones(3))))")
    env = dict(os.environ, JAX_PLATFORMS="anvil", ANVIL_DUMP_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout.strip().splitlines()[-1]) - 3 * 0.8414709848) < 1e-5
    dumps = [p for p in tmp_path.iterdir() if p.name.startswith("jit__lambda")]
    assert len(dumps) == 1, list(tmp_path.iterdir())
    text = dumps[0].read_text()
    assert "stablehlo.sine" in text and "func.func public @main" in text
