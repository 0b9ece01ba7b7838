"""Non-default layouts (jax.experimental.layout: Format / Layout(major_to_minor=...)) as on JAX's
CPU backend in the same run: a jit's arguments and results are kept in the layout asked for
(concrete or Layout.AUTO), device_put with a Format stores the array in it, values and the
layouts JAX reports agree with XLA:CPU's, and donating an argument kept in a custom layout
deletes it. Before, every non-default layout was refused ("Unexpected XLA layout override")."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.layout import Format, Layout
from jax.sharding import SingleDeviceSharding


def run_both(fn):
    out = {}
    for p in ("anvil", "cpu"):
        d = jax.devices(p)[0]
        with jax.default_device(d):
            out[p] = fn(d)
    return out


def m2m(a):
    return a.format.layout.major_to_minor


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64])
def test_device_put_and_jit_with_column_major_layouts(dtype):
    def case(d):
        s = SingleDeviceSharding(d)
        col = Format(Layout(major_to_minor=(1, 0)), s)
        x = np.arange(8 * 6, dtype=dtype).reshape(8, 6)
        a = jax.device_put(x, col)  # stored column-major
        f = jax.jit(lambda v: v * 2 + 1, in_shardings=col, out_shardings=col)
        b = f(a)
        g = jax.jit(lambda v: v.T)  # a default-layout jit reading the column-major array
        c = g(b)
        return (m2m(a), np.asarray(a).tolist(), m2m(b), np.asarray(b).tolist(), m2m(c),
                np.asarray(c).tolist())

    out = run_both(case)
    assert out["anvil"][0] == (1, 0)
    assert out["anvil"] == out["cpu"]


def test_three_dimensional_layout_and_auto_result_of_a_transpose():
    def case(d):
        s = SingleDeviceSharding(d)
        x = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2)
        fmt = Format(Layout(major_to_minor=(2, 0, 1)), s)
        a = jax.device_put(x, fmt)
        auto = jax.jit(lambda v: v.T, out_shardings=Format(Layout.AUTO)).lower(x).compile()
        t = auto(x)  # XLA:CPU makes the transpose free: the result's layout is the reverse
        return (m2m(a), np.asarray(a).tolist(), auto.output_formats.layout.major_to_minor,
                m2m(t), np.asarray(t).tolist(), np.asarray(jnp.sum(a, axis=1)).tolist())

    out = run_both(case)
    assert out["anvil"][0] == (2, 0, 1) and out["anvil"][2] == (2, 1, 0)
    assert out["anvil"] == out["cpu"]


def test_donated_argument_in_a_custom_layout_is_deleted():
    def case(d):
        s = SingleDeviceSharding(d)
        col = Format(Layout(major_to_minor=(1, 0)), s)
        a = jax.device_put(np.arange(12.0).reshape(3, 4), col)
        f = jax.jit(lambda v: v * v, in_shardings=col, out_shardings=col, donate_argnums=0)
        b = f(a)
        return a.is_deleted(), m2m(b), np.asarray(b).tolist()

    out = run_both(case)
    assert out["anvil"][0] is True
    assert out["anvil"] == out["cpu"]


def test_tiled_layouts_are_refused_clearly():
    d = jax.devices("anvil")[0]
    tiled = Format(Layout(major_to_minor=(1, 0), tiling=((8, 128),)), SingleDeviceSharding(d))
    with pytest.raises(Exception, match="UNIMPLEMENTED.*(tiles|tiled)"):
        jax.jit(lambda v: v + 1, out_shardings=tiled)(jnp.ones((8, 128), device=d))


SHARDED = r"""
import warnings
warnings.simplefilter("ignore")
import jax, numpy as np
from jax.experimental.layout import Format, Layout
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
s = NamedSharding(mesh, P("x", "y"))
x = np.arange(16 * 8).reshape(16, 8)
col = Format(Layout(major_to_minor=(0, 1)[::-1]), s)
a = jax.device_put(x, col)
print("put", a.format.layout.major_to_minor, [sh.data.format.layout.major_to_minor for sh in a.addressable_shards], np.asarray(a).sum())
f = jax.jit(lambda v: v.T, in_shardings=col, out_shardings=Format(Layout.AUTO))
t = f(a)
print("auto", t.format.layout.major_to_minor, t.sharding.spec, (np.asarray(t) == x.T).all())
g = jax.jit(lambda v: v + 1, in_shardings=col, out_shardings=col, donate_argnums=0)
r = g(a)
print("donate", a.is_deleted(), r.format.layout.major_to_minor, (np.asarray(r) == x + 1).all())
# AUTO on a transpose that partitioning reshards (the layout is decided before partitioning)
h = jax.jit(lambda v: v.T, in_shardings=Format(Layout.AUTO, s),
            out_shardings=Format(Layout.AUTO, s)).lower(x).compile()
print("auto resharded", h.output_formats.layout.major_to_minor, (np.asarray(h(x)) == x.T).all())
"""


def run_sharded(platform):
    env = dict(os.environ, JAX_PLATFORMS=platform, ANVIL_DEVICE_COUNT="8",
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    r = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_sharded_layouts_match_cpu():
    anvil, cpu = run_sharded("anvil"), run_sharded("cpu")
    assert "put (1, 0)" in anvil and "donate True" in anvil
    assert "auto resharded (1, 0) True" in anvil
    assert anvil == cpu
