"""Memory kinds: anvil's devices have the memories XLA:CPU's have (device, pinned_host,
unpinned_host; all host RAM), and a result lands in the memory kind its sharding asks for
(jit out_shardings, device_put inside jit), as on JAX's CPU backend in the same run. Before,
results asked for in pinned_host came back in device memory (JAX then refused the
executable's layout: "Unexpected XLA sharding override ... memory_kind=device")."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.compute_on import compute_on
from jax.sharding import SingleDeviceSharding


def kinds(platform):
    return sorted(m.kind for m in jax.devices(platform)[0].addressable_memories())


def test_devices_have_the_memory_kinds_of_cpu():
    assert kinds("anvil") == kinds("cpu") == ["device", "pinned_host", "unpinned_host"]
    assert jax.devices("anvil")[0].default_memory().kind == "device"


def run_both(fn):
    out = {}
    for p in ("anvil", "cpu"):
        d = jax.devices(p)[0]
        with jax.default_device(d):
            out[p] = fn(d)
    return out


@pytest.mark.parametrize("kind", ["pinned_host", "unpinned_host", "device"])
def test_jit_results_land_in_the_memory_kind_asked_for(kind):
    def case(d):
        s = SingleDeviceSharding(d, memory_kind=kind)
        x = jnp.arange(6.0).reshape(2, 3)
        y = jax.jit(lambda a: a * 2, out_shardings=s)(x)
        z = jax.device_put(x, s)  # and back through a jit that keeps it there
        w = jax.jit(lambda a: a + 1)(z)
        return (y.sharding.memory_kind, np.asarray(y).tolist(), z.sharding.memory_kind,
                w.sharding.memory_kind, np.asarray(w).tolist())

    out = run_both(case)
    assert out["anvil"][0] == kind
    assert out["anvil"] == out["cpu"]


def test_device_put_inside_jit_and_compute_on_match_cpu():
    def case(d):
        host = SingleDeviceSharding(d, memory_kind="pinned_host")
        g = jax.jit(lambda a: jax.device_put(a * 2, host))
        r = g(jnp.arange(4.0))

        @jax.jit
        def f(a):
            with compute_on("device_host"):
                b = a * 3
            return b + 1

        c = f(jnp.arange(4.0))
        return (r.sharding.memory_kind, np.asarray(r).tolist(), c.sharding.memory_kind,
                np.asarray(c).tolist())

    out = run_both(case)
    assert out["anvil"][0] == "pinned_host"
    assert out["anvil"] == out["cpu"]


HOST_ON_SECOND_DEVICE = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import SingleDeviceSharding
d = jax.devices()[1]
for kind in ("pinned_host", "unpinned_host"):
    x = jax.device_put(np.arange(6.0), SingleDeviceSharding(d, memory_kind=kind))
    y = jax.jit(lambda a: a * 2)(x)
    print(kind, x.devices() == {d}, x.sharding.memory_kind, y.devices() == {d},
          np.asarray(y).tolist())
"""


def test_host_memory_of_a_second_device_matches_cpu():
    """device_put into pinned_host of device 1 (export_serialization_back_compat_test's
    test_with_memory_space): one host memory shared by all devices gave JAX a buffer on
    device 0, which it refused ("memory space is addressed by device anvil:0 vs sharding is
    on device anvil:1")."""
    import os
    import subprocess
    import sys
    out = {}
    for p in ("anvil", "cpu"):
        env = dict(os.environ, JAX_PLATFORMS=p, ANVIL_DEVICE_COUNT="2",
                   XLA_FLAGS="--xla_force_host_platform_device_count=2")
        r = subprocess.run([sys.executable, "-c", HOST_ON_SECOND_DEVICE], env=env,
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr[-2000:]
        out[p] = r.stdout
    assert "pinned_host True pinned_host True [0.0, 2.0" in out["anvil"]
    assert out["anvil"] == out["cpu"]
