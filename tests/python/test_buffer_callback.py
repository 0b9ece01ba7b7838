"""jax.experimental.buffer_callback on anvil (lowered by the anvil package to its host
callback): the callback sees an execution context and Buffers over the program's memory and
writes its results in place. Each program runs on anvil and on JAX's CPU backend in the same
process; the values must agree, and numpy computes what they should be."""

import os
import subprocess
import sys

import jax
import ml_dtypes
import numpy as np
import pytest
from jax.experimental import buffer_callback as bc

PLATFORMS = ("anvil", "cpu")


def on_each(fn, *args, jit=True):
    """fn(*args) on anvil and on cpu: the two results, as numpy arrays."""
    outs = {}
    for platform in PLATFORMS:
        device = jax.devices(platform)[0]
        with jax.default_device(device):
            placed = jax.device_put(args, device)
            out = (jax.jit(fn) if jit else fn)(*placed)
            outs[platform] = jax.tree_util.tree_map(np.asarray, out)
    return outs["anvil"], outs["cpu"]


def add_one_inplace(ctx, out, x):
    np.asarray(out)[...] = np.asarray(x) + np.asarray(x).dtype.type(1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16, np.float16,
                                   np.int8, np.int64, np.uint32, np.complex128])
@pytest.mark.parametrize("jit", [True, False])
def test_results_written_in_place_match_cpu(dtype, jit):
    data = (np.arange(12).reshape(3, 4) % 7).astype(dtype)
    fun = bc.buffer_callback(add_one_inplace, jax.ShapeDtypeStruct(data.shape, data.dtype))
    got, want = on_each(fun, data, jit=jit)
    np.testing.assert_array_equal(got, data + dtype(1))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype == np.dtype(dtype)


def test_bool_and_scalar_and_empty_buffers():
    def callback(ctx, outs, b, s, e):
        np.asarray(outs[0])[...] = ~np.asarray(b)
        np.asarray(outs[1])[...] = np.asarray(s) * 3
        assert outs[2].shape == e.shape == (0, 5) and np.asarray(e).size == 0

    b = np.array([True, False, True])
    s = np.float32(2.5)
    e = np.zeros((0, 5), np.int32)
    fun = bc.buffer_callback(callback, (jax.ShapeDtypeStruct(b.shape, b.dtype),
                                        jax.ShapeDtypeStruct((), np.float32),
                                        jax.ShapeDtypeStruct(e.shape, e.dtype)))
    got, want = on_each(fun, b, s, e)
    np.testing.assert_array_equal(got[0], ~b)
    assert float(got[1]) == 7.5
    assert got[2].shape == (0, 5)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_context_and_buffer_attributes_match_cpu():
    seen = []

    def callback(ctx, out, x):
        with pytest.raises(jax.errors.JaxRuntimeError, match="GPU context is not available"):
            ctx.stream
        seen.append(
            (ctx.stage, x.shape, x.dtype, x.ndim, x.writeable, out.shape, out.dtype,
             out.writeable, x.__dlpack_device__(), np.from_dlpack(x).flags.writeable,
             np.from_dlpack(out).flags.writeable))
        np.asarray(out)[...] = 0

    x = np.ones((2, 3, 4), np.int16)
    fun = bc.buffer_callback(callback, jax.ShapeDtypeStruct((5,), np.float32))
    for platform in PLATFORMS:
        with jax.default_device(jax.devices(platform)[0]):
            jax.block_until_ready(fun(x))
    assert len(seen) == 2 and seen[0] == seen[1]  # anvil's, then the cpu backend's
    assert seen[0][0] == bc.ExecutionStage.EXECUTE


def test_pytrees_and_keyword_arguments_match_cpu():
    def callback(ctx, out, pair, *, scale):
        a, b = (np.asarray(v) for v in pair)
        np.asarray(out["sum"])[...] = (a + b) * np.asarray(scale)
        np.asarray(out["prod"])[...] = a * b

    shape = jax.ShapeDtypeStruct((4,), np.float32)
    fun = bc.buffer_callback(callback, {"sum": shape, "prod": shape})
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 2, np.float32)
    got, want = on_each(lambda a, b, s: fun((a, b), scale=s), a, b, np.float32(3))
    np.testing.assert_array_equal(got["sum"], (a + b) * 3)
    np.testing.assert_array_equal(got["prod"], a * b)
    for k in got:
        np.testing.assert_array_equal(got[k], want[k])


def test_input_output_alias_is_updated_in_place():
    addresses = []

    def callback(ctx, out, x, y):
        xa, oa = np.asarray(x), np.asarray(out)
        addresses.append(xa.ctypes.data == oa.ctypes.data)
        np.testing.assert_array_equal(oa, xa)  # the aliased result starts as the input
        oa += np.asarray(y)                    # and is updated in place

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 10, np.float32)
    fun = bc.buffer_callback(callback, jax.ShapeDtypeStruct(x.shape, x.dtype),
                             input_output_aliases={0: 0})
    got, want = on_each(fun, x, y)
    np.testing.assert_array_equal(got, x + y)
    np.testing.assert_array_equal(got, want)
    assert addresses == [True, True]


@pytest.mark.parametrize("vmap_method",
                         ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"])
def test_vmap_matches_cpu(vmap_method):
    def callback(ctx, out, x, y):
        np.asarray(out)[...] = np.asarray(x) * 2 + np.asarray(y)

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.arange(4, dtype=np.float32)
    fun = bc.buffer_callback(callback, jax.ShapeDtypeStruct((4,), np.float32),
                             vmap_method=vmap_method)
    got, want = on_each(jax.vmap(fun, in_axes=(0, None)), x, y)
    np.testing.assert_array_equal(got, x * 2 + y)
    np.testing.assert_array_equal(got, want)


def test_inside_scan_matches_cpu():
    fun = bc.buffer_callback(add_one_inplace, jax.ShapeDtypeStruct((3,), np.int32))

    def f(x):
        return jax.lax.scan(lambda c, _: (fun(c) * 2, c.sum()), x, None, length=4)

    got, want = on_each(f, np.array([1, 2, 3], np.int32))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[0], [46, 62, 78])


def test_side_effect_runs_even_when_the_result_is_unused():
    calls = []

    def callback(ctx, out):
        calls.append(ctx.stage)
        np.asarray(out)[...] = 1

    fun = bc.buffer_callback(callback, jax.ShapeDtypeStruct((), np.float32),
                             has_side_effect=True)

    @jax.jit
    def f(x):
        fun()
        return x + 1

    for platform in PLATFORMS:
        with jax.default_device(jax.devices(platform)[0]):
            assert float(f(np.float32(1))) == 2
    assert len(calls) == 2


@pytest.mark.parametrize("bad, message", [
    (lambda ctx, out, x: 1 / 0, "ZeroDivisionError"),
    (lambda ctx, out, x: 5, "must not return any values"),
    (lambda ctx, out, x: np.asarray(out).__setitem__(Ellipsis, np.zeros((7, 7))),
     "could not broadcast"),
    (lambda ctx, out, x: np.asarray(x).__setitem__(0, 1), "read-only"),
])
def test_errors_in_the_callback_fail_the_call_cleanly(bad, message):
    fun = jax.jit(bc.buffer_callback(bad, jax.ShapeDtypeStruct((3,), np.float32)))
    with jax.default_device(jax.devices("anvil")[0]):
        with pytest.raises(jax.errors.JaxRuntimeError, match=message):
            jax.block_until_ready(fun(np.ones(3, np.float32)))
        # the backend keeps working
        good = bc.buffer_callback(add_one_inplace, jax.ShapeDtypeStruct((3,), np.float32))
        np.testing.assert_array_equal(good(np.ones(3, np.float32)), [2, 2, 2])


def test_a_buffer_kept_past_its_call_refuses_access():
    kept = []

    def callback(ctx, out, x):
        kept.append(x)
        np.asarray(out)[...] = np.asarray(x)

    fun = bc.buffer_callback(callback, jax.ShapeDtypeStruct((3,), np.float32))
    with jax.default_device(jax.devices("anvil")[0]):
        jax.block_until_ready(fun(np.ones(3, np.float32)))
    assert kept[0].shape == (3,)
    with pytest.raises(RuntimeError, match="after its callback returned"):
        np.asarray(kept[0])
    with pytest.raises(RuntimeError, match="after its callback returned"):
        kept[0].__dlpack__()


ALONE_AND_SHARDED = r"""
import jax, numpy as np
from jax.experimental import buffer_callback as bc
from jax.sharding import NamedSharding, PartitionSpec as P
shapes = []
def callback(ctx, out, x):
    shapes.append(x.shape)
    np.asarray(out)[...] = np.asarray(x) * 2
f = bc.buffer_callback(callback, jax.ShapeDtypeStruct((8, 4), np.float32))
x = np.arange(32, dtype=np.float32).reshape(8, 4)
print("eager", np.asarray(f(x)).sum(), shapes)
mesh = jax.make_mesh((4,), ("a",))
xs = jax.device_put(x, NamedSharding(mesh, P("a")))
y = jax.jit(lambda v: f(v + 1) + 1)(xs)
print("sharded", y.sharding.spec, np.asarray(y).tolist(), sorted(shapes))
"""


def test_alone_and_in_a_sharded_jit_as_on_cpu():
    """With JAX_PLATFORMS=anvil alone (4 devices), and the same program on JAX's CPU backend
    with 4 devices: same values, and the callback sees the same (replicated) shapes."""
    outs = []
    for platform, extra in (("anvil", {"ANVIL_DEVICE_COUNT": "4"}),
                            ("cpu", {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})):
        env = {**os.environ, "JAX_PLATFORMS": platform, **extra}
        run = subprocess.run([sys.executable, "-c", ALONE_AND_SHARDED], env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        outs.append(run.stdout)
    assert "sharded" in outs[0] and outs[0] == outs[1]
