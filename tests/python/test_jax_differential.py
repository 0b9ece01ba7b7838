"""Differential tests: the same JAX function runs on anvil and on JAX's own CPU backend (XLA)
in this process; results must agree within dtype-appropriate tolerances.

XLA:CPU is an independent implementation, so agreement is evidence of correctness; cases where
the two may legitimately differ (e.g. last-ulp transcendental differences) use tolerances.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

rng = np.random.default_rng(42)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return rng.standard_normal(shape)


def i32(*shape, lo=-100, hi=100):
    return rng.integers(lo, hi, size=shape, dtype=np.int32)


def run_both(fn, *args):
    anvil = jax.devices("anvil")[0]
    cpu = jax.devices("cpu")[0]
    # Committed inputs decide where a jitted function runs.
    out_a = jax.jit(fn)(*[jax.device_put(a, anvil) for a in args])
    out_c = jax.jit(fn)(*[jax.device_put(a, cpu) for a in args])
    return out_a, out_c


def tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float64 or dtype == np.complex128:
        return dict(rtol=1e-10, atol=1e-12)
    if dtype == np.float32 or dtype == np.complex64:
        return dict(rtol=2e-5, atol=1e-6)
    if dtype.kind == "f":  # f16 / bf16
        return dict(rtol=1e-2, atol=1e-2)
    return dict(rtol=0, atol=0)


def assert_close(a, c):
    a_leaves, a_tree = jax.tree_util.tree_flatten(a)
    c_leaves, c_tree = jax.tree_util.tree_flatten(c)
    assert a_tree == c_tree
    for x, y in zip(a_leaves, c_leaves):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, x.dtype, y.shape, y.dtype)
        if x.dtype.kind in "fc":
            np.testing.assert_allclose(x, y, equal_nan=True, **tolerance(x.dtype))
        else:
            np.testing.assert_array_equal(x, y)


CASES = {
    # elementwise math and logic
    "add_mul": (lambda x, y: x * y + x - y / 3.0, f32(5, 7), f32(5, 7)),
    "transcendental": (lambda x: (jnp.exp(x), jnp.log1p(jnp.abs(x)), jnp.tanh(x), jnp.sin(x),
                                  jnp.cos(x), jnp.sqrt(jnp.abs(x)), lax.rsqrt(jnp.abs(x) + 1)),
                       f32(64)),
    "erf_logistic": (lambda x: (lax.erf(x), jax.nn.sigmoid(x), jax.nn.gelu(x), jax.nn.softplus(x)),
                     f32(33)),
    "int_ops": (lambda a, b: (a // jnp.where(b == 0, 1, b), a % jnp.where(b == 0, 1, b), a & b,
                              a | b, a ^ b, a << 3, a >> 2, jnp.maximum(a, b)),
                i32(40), i32(40)),
    "compare_select": (lambda x, y: jnp.where(x > y, x, y * 2), f32(4, 4), f32(4, 4)),
    "f64": (lambda x: jnp.exp(x) * jnp.cos(x) - x ** 3, f64(17)),
    "convert": (lambda x: (x.astype(jnp.int32), x.astype(jnp.float16), x.astype(jnp.bfloat16),
                           (x * 100).astype(jnp.uint8)), f32(50)),
    # shapes
    "reshape_transpose": (lambda x: x.reshape(6, 20).T[::2, 1:5], f32(4, 5, 6)),
    "concat_pad": (lambda x, y: jnp.pad(jnp.concatenate([x, y], axis=1), ((1, 2), (0, 3))),
                   f32(3, 4), f32(3, 2)),
    "broadcast": (lambda x, y: x[:, None, :] + y[None, :, None], f32(3, 5), f32(4)),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, np.int32(2)), (3, 3)), f32(8, 8), np.int32(6)),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, i)),
                             f32(6, 6), f32(2, 2), np.int32(3)),
    "iota_rev": (lambda x: jnp.flip(x, 0) + jnp.arange(x.shape[1], dtype=x.dtype), f32(3, 5)),
    # reductions
    "reductions": (lambda x: (x.sum(0), x.max(1), x.min(), jnp.prod(x[:2], axis=1), x.mean()),
                   f32(6, 7)),
    "argmax": (lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)), f32(5, 9)),
    "cumsum": (lambda x: (jnp.cumsum(x, axis=0), jnp.cumprod(x[:4], axis=1)), f32(9, 4)),
    "logsumexp_softmax": (lambda x: (jax.nn.logsumexp(x, axis=-1), jax.nn.softmax(x)), f32(4, 10)),
    # linear algebra
    "matmul": (lambda a, b: a @ b, f32(33, 17), f32(17, 9)),
    "batched_matmul": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), f32(3, 5, 7), f32(3, 7, 2)),
    "matmul_f64": (lambda a, b: a @ b, f64(16, 16), f64(16, 4)),
    "conv2d": (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                       dimension_numbers=("NHWC", "HWIO", "NHWC")),
               f32(2, 8, 8, 3), f32(3, 3, 3, 4)),
    "conv_strided_dilated": (lambda x, w: lax.conv_general_dilated(
        x, w, (2, 2), ((1, 0), (2, 1)), rhs_dilation=(2, 1)), f32(1, 2, 9, 9), f32(3, 2, 3, 2)),
    # indexing
    "gather": (lambda x, i: x[i], f32(10, 3), np.array([0, 9, 3, 3, -1], np.int32)),
    "scatter_add": (lambda x, i, u: x.at[i].add(u), f32(6, 2), np.array([1, 1, 5], np.int32),
                    f32(3, 2)),
    "scatter_set_oob": (lambda x, i: x.at[i].set(7.0, mode="drop"), f32(5),
                        np.array([0, 7, 2], np.int32)),
    "take_along": (lambda x, i: jnp.take_along_axis(x, i, axis=1), f32(4, 6), i32(4, 2, lo=0, hi=6)),
    # sorting
    "sort": (lambda x: (jnp.sort(x, axis=0), jnp.argsort(x, axis=1)), f32(7, 5)),
    "top_k": (lambda x: lax.top_k(x, 3), f32(4, 10)),
    # control flow
    "while": (lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.1),
                                       (0, x)), f32(3)),
    "fori": (lambda x: lax.fori_loop(0, 7, lambda i, v: v + i * v.sum(), x), f32(4)),
    "scan": (lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs), f32(12)),
    "cond": (lambda p, x: lax.cond(p > 0, lambda v: v * 2, lambda v: v - 1, x), np.float32(1.0),
             f32(3)),
    "switch": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x), np.int32(2), f32(3)),
    # autodiff and vmap
    "grad_mlp": (lambda w, x: jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w),
                 f32(4, 3), f32(5, 4)),
    "jvp": (lambda x: jax.jvp(jnp.sin, (x,), (jnp.ones_like(x),)), f32(6)),
    "vmap": (lambda x, y: jax.vmap(lambda a, b: jnp.dot(a, b))(x, y), f32(5, 3), f32(5, 3)),
    "hessian": (lambda x: jax.hessian(lambda v: jnp.sum(v ** 3))(x), f32(3)),
    # random
    "random_threefry": (lambda k: (jax.random.uniform(jax.random.wrap_key_data(k), (5,)),
                                   jax.random.normal(jax.random.wrap_key_data(k), (3, 2))),
                        np.array([0, 42], np.uint32)),
    # threefry as generated code (a region of 4099 counters, two copies per loop iteration
    # and a tail: codegen/cg_lower.c's 32-bit index, cg_ir.c's regrouped key additions)
    "random_threefry_generated": (lambda k: (jax.random.bits(jax.random.wrap_key_data(k), (4099,)),
                                             jax.random.uniform(jax.random.wrap_key_data(k), (4099,))),
                                  np.array([7, 1234567], np.uint32)),
    # reduce_window / pooling
    "max_pool": (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                             "VALID"), f32(2, 6, 6, 3)),
    "avg_pool_grad": (lambda x: jax.grad(lambda v: lax.reduce_window(
        v, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME").sum())(x), f32(5, 5)),
    "fft": (lambda x: jnp.fft.rfft(x), f32(16)),
    # a splat constant of an empty tensor (one value for no elements) in the bytecode
    "empty_spacing_f16": (jnp.spacing, np.zeros((0,), np.float16)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_xla_cpu(name):
    fn, *args = CASES[name]
    out_a, out_c = run_both(fn, *args)
    assert_close(out_a, out_c)


def conv_vjp(x, w, g, **kw):
    """The convolution, and its input and weight gradients for cotangent g: each one
    convolution (as JAX emits them), not amplified by a nonlinear loss."""
    y, pull = jax.vjp(lambda x, w: lax.conv_general_dilated(x, w, **kw), x, w)
    return (y, *pull(g.astype(y.dtype)))


# Convolutions large enough for oneDNN (kernels/conv_dnnl.c): forward, transposed (input
# gradient) and weight-gradient forms, NHWC and NCHW, strides, padding, dilation, feature
# groups, 1-3 spatial dimensions, bf16 with bf16 or f32 results.
CONV_CASES = {
    "nhwc_strided": ((4, 16, 16, 16), (3, 3, 16, 32), (4, 8, 8, 32), dict(
        window_strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "nhwc_1x1_strided": ((8, 16, 16, 32), (1, 1, 32, 64), (8, 8, 8, 64), dict(
        window_strides=(2, 2), padding="VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "nchw_groups_dilated": ((3, 16, 12, 12), (32, 8, 3, 3), (3, 32, 12, 14), dict(
        window_strides=(1, 1), padding=((2, 2), (1, 3)), rhs_dilation=(2, 1),
        feature_group_count=2)),
    "depthwise_nhwc": ((4, 16, 16, 32), (3, 3, 1, 32), (4, 16, 16, 32), dict(
        window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=32)),
    "conv1d": ((4, 40, 16), (5, 16, 32), (4, 40, 32), dict(
        window_strides=(1,), padding="SAME", dimension_numbers=("NWC", "WIO", "NWC"))),
    "conv3d": ((2, 6, 8, 6, 8), (3, 3, 3, 8, 16), (2, 4, 3, 4, 16), dict(
        window_strides=(1, 2, 1), padding="VALID",
        dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
    "lhs_dilated": ((4, 8, 8, 16), (3, 3, 16, 16), (4, 15, 15, 16), dict(
        window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(2, 2),
        dimension_numbers=("NHWC", "HWIO", "NHWC"))),
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bfloat16->float32"])
@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_convolution_forms_match_xla_cpu(name, dtype):
    xs, ws, ys, kw = CONV_CASES[name]
    x, w, g = f32(*xs), f32(*ws), f32(*ys)
    if dtype.startswith("bfloat16"):
        x, w = x.astype(jnp.bfloat16), w.astype(jnp.bfloat16)
    if dtype == "bfloat16->float32":
        kw = dict(kw, preferred_element_type=jnp.float32)
    out_a, out_c = run_both(functools.partial(conv_vjp, **kw), x, w, g)
    for a, c in zip(out_a, out_c):
        assert a.shape == c.shape and a.dtype == c.dtype
        # f32 sums of up to a few thousand terms in another order, then a bf16 result's one
        # rounding (8 significant bits) where the result is bf16
        rtol = 1e-2 if c.dtype == jnp.bfloat16 else 0
        a, c = np.asarray(a).astype(np.float64), np.asarray(c).astype(np.float64)
        np.testing.assert_allclose(a, c, rtol=rtol, atol=3e-5 * np.abs(c).max())


def test_switch_jvp_every_branch():
    """lax.switch under jvp with values forwarded between branches (JAX's
    testSwitchGradWithForwarding, seed 0, one exp output): lowering the branch regions grows
    the compiler's slot table while the case op is half lowered; every index must select its
    own branch (indices 1..3 once all ran branch 0)."""
    in_perm, out_perm = [2, 1, 0], [1, 0, 2]

    def branch(s, inputs):
        inputs = [inputs[i] for i in in_perm]
        outputs = [s * jnp.exp(inputs[0]), jnp.sin(inputs[1]), jnp.sin(inputs[2])]
        return [outputs[i] for i in out_perm]

    @jax.jit
    def f(idx, inputs):
        idx = lax.convert_element_type(idx // 1, np.int32)
        return lax.switch(idx, [functools.partial(branch, s) for s in range(4)], inputs)

    x, t = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    with jax.enable_x64(False):  # the failing slot layout came from 32-bit mode
        for i in range(4):
            outs = []
            for dev in (jax.devices("anvil")[0], jax.devices("cpu")[0]):
                with jax.default_device(dev):
                    outs.append(jax.jvp(functools.partial(f, i), (jnp.asarray(x),),
                                        (jnp.asarray(t),)))
            assert_close(outs[0], outs[1])
            assert float(outs[0][0][1]) == pytest.approx(i * np.exp(2.0), rel=1e-5)


def test_seed_checks_single_device():
    assert int(jnp.add(1, 1)) == 2
    assert float(jax.jit(lambda x: x * 2)(1.0)) == 2.0


def test_outputs_live_on_anvil():
    anvil = jax.devices("anvil")[0]
    y = jax.jit(lambda x: x + 1)(jax.device_put(np.ones(3, np.float32), anvil))
    assert y.devices() == {anvil}


def test_compiled_text_and_repeated_calls():
    fn = jax.jit(functools.partial(jnp.sum, axis=0))
    x = jax.device_put(f32(4, 3), jax.devices("anvil")[0])
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(fn(x)), np.asarray(x).sum(0), rtol=1e-6)


def test_compiled_as_text_parses():
    # JAX parses PJRT_Executable_OptimizedProgram's answer; anvil returns the program it got.
    x = jax.device_put(f32(2, 3), jax.devices("anvil")[0])
    y = jax.device_put(f32(3, 4), jax.devices("anvil")[0])
    text = jax.jit(lambda a, b: a @ b).lower(x, y).compile().as_text()
    assert "dot" in text and "f32[2,3]" in text


def test_cost_and_memory_analysis():
    anvil = jax.devices("anvil")[0]
    a = jax.device_put(np.ones((64, 32), np.float32), anvil)
    b = jax.device_put(np.ones((32, 16), np.float32), anvil)
    compiled = jax.jit(lambda a, b: jnp.tanh(a @ b)).lower(a, b).compile()
    cost = compiled.cost_analysis()
    assert cost["flops"] == 2 * 64 * 32 * 16  # the matmul
    assert cost["transcendentals"] == 64 * 16  # tanh of each result element
    # dot reads 64x32 + 32x16 and writes 64x16; tanh reads and writes 64x16 (f32)
    assert cost["bytes accessed"] == 4 * (64 * 32 + 32 * 16 + 64 * 16 + 2 * 64 * 16)
    mem = compiled.memory_analysis()
    assert mem.argument_size_in_bytes == 4 * (64 * 32 + 32 * 16)
    assert mem.output_size_in_bytes == 4 * 64 * 16


def aligned_array(values, align=64):
    """A float32 numpy array whose data is `align`-byte aligned (JAX may then pass it zero-copy)."""
    raw = np.empty(len(values) * 4 + align, np.uint8)
    start = (-raw.ctypes.data) % align
    a = raw[start:start + len(values) * 4].view(np.float32)
    a[:] = values
    return a


def test_donation_consumes_the_input():
    anvil = jax.devices("anvil")[0]
    double = jax.jit(lambda v: v * 2, donate_argnums=0)
    inputs = {
        "device-computed": jax.jit(lambda v: v + 0.0)(
            jax.device_put(np.arange(4.0, dtype=np.float32), anvil)),
        "zero-copy host memory": jax.device_put(aligned_array([0.0, 1.0, 2.0, 3.0]), anvil),
    }
    for kind, x in inputs.items():
        y = double(x)
        np.testing.assert_array_equal(np.asarray(y), [0.0, 2.0, 4.0, 6.0], err_msg=kind)
        assert x.is_deleted(), kind  # anvil is listed among JAX's donation platforms


def test_executable_serialize_round_trip():
    from jax.experimental import serialize_executable as se

    anvil = jax.devices("anvil")[0]
    x = jax.device_put(np.linspace(0, 1, 5, dtype=np.float32), anvil)
    compiled = jax.jit(lambda a: jnp.sin(a) + 1).lower(x).compile()
    payload, in_tree, out_tree = se.serialize(compiled)
    loaded = se.deserialize_and_load(payload, in_tree, out_tree)
    np.testing.assert_allclose(np.asarray(loaded(x)), np.sin(np.asarray(x)) + 1, rtol=1e-6)
    # A damaged blob is refused cleanly, not crashed on.
    bad = bytearray(payload)
    bad[len(bad) // 2] ^= 0xFF
    bad[len(bad) // 3] ^= 0xFF
    try:
        se.deserialize_and_load(bytes(bad), in_tree, out_tree)
    except Exception:  # noqa: BLE001 - any clean error is acceptable
        pass


def test_complex_expm1_of_reals_stays_real():
    """expm1 of a complex number with zero imaginary part is real: exp(re) * sin(0) must not
    turn into inf * 0 = NaN when exp(re) overflows (jax's complex-plane test found it)."""
    re = np.array([1e30, 100.0, 88.0, 1.0, -5.0, -1e30], np.float32)
    z = (re + 0j).astype(np.complex64)
    got = np.asarray(jax.jit(jnp.expm1)(jax.device_put(z, jax.devices("anvil")[0])))
    np.testing.assert_array_equal(got.imag, np.zeros(6, np.float32))
    with np.errstate(over="ignore"):
        want = np.expm1(re.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got.real, want, rtol=1e-6)
