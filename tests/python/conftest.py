"""Every test here runs JAX with anvil as the default backend and JAX's own CPU backend
beside it (for differential checks). x64 is on so 64-bit dtypes are exercised."""

import os

os.environ.setdefault("JAX_PLATFORMS", "anvil,cpu")
os.environ.setdefault("ANVIL_DEVICE_COUNT", "1")

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)


@pytest.fixture(scope="session")
def anvil_device():
    devices = jax.devices("anvil")
    assert devices, "anvil backend has no devices"
    return devices[0]


@pytest.fixture(scope="session")
def cpu_device():
    return jax.devices("cpu")[0]
