"""Calls spliced into their caller (src/compiler/lower_control.c, splice_call): a nested jit
without effects (jnp.where, tril, softmax are such calls in JAX) runs as the caller's own
steps, so its elementwise ops fuse with the caller's. Results are checked against XLA:CPU in
the same process and numpy, for the cases where the callee's results are its arguments,
the same value twice, unused, or come from a callee that calls another."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

rng = np.random.default_rng(3)


def both(fn, *args):
    out = []
    for dev in (jax.devices("anvil")[0], jax.devices("cpu")[0]):
        r = jax.jit(fn)(*jax.device_put(args, dev))
        out.append(jax.tree_util.tree_map(np.asarray, r))
    return out


def check(fn, *args, rtol=1e-6):
    got, want = both(fn, *args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)
    return got


x = rng.standard_normal((16, 33)).astype(np.float32)
y = rng.standard_normal((16, 33)).astype(np.float32)


def test_where_and_tril_fuse_with_the_caller():
    def f(x, y):
        m = jnp.tril(jnp.ones((16, 33), bool))
        return jnp.where(m, x * 2, y - 1) + 1

    got = check(f, x, y)
    np.testing.assert_array_equal(got, np.where(np.tri(16, 33, dtype=bool), x * 2, y - 1) + 1)


@jax.jit
def passthrough(a, b):
    return b, a, a  # arguments returned, one of them twice


@jax.jit
def twice(a):
    s = a * 3
    return s, s  # one value returned twice


@jax.jit
def inner(a):
    return jnp.exp(a) - 1


@jax.jit
def outer(a, b):
    return inner(a) * inner(b), a.sum()


def test_results_that_are_arguments_or_repeated():
    def f(x, y):
        b, a, a2 = passthrough(x, y)
        s, s2 = twice(a + b)
        return a * 2, a2 - b, s + s2, s * 0.5

    check(f, x, y)


def test_unused_results_and_nested_calls():
    def f(x, y):
        p, _ = outer(x, y)  # the sum is dropped
        q, r = outer(y, x)
        return p + q, r

    check(f, x, y, rtol=1e-5)


def test_callee_inside_a_loop_body():
    def f(x):
        def body(i, c):
            return jnp.where(c > 0, c * 0.5, c + 1.0) + inner(c) * 0
        return jax.lax.fori_loop(0, 5, body, x)

    check(f, x, rtol=1e-5)


def test_argument_read_after_the_call():
    # the operand stays the caller's: released by the caller after its own last use
    def f(x):
        a = inner(x)
        return a + x, x * 2

    check(f, x, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.float64, np.complex64, np.bool_])
def test_select_over_whole_arrays(dtype):
    a = (rng.standard_normal((7, 9)) * 10).astype(dtype)
    b = (rng.standard_normal((7, 9)) * 10).astype(dtype)
    m = rng.random((7, 9)) < 0.5

    def f(m, a, b):
        return jnp.where(m, a, b), jax.lax.select(~m, a, b)

    got = check(f, m, a, b)
    np.testing.assert_array_equal(got[0], np.where(m, a, b))
    np.testing.assert_array_equal(got[1], np.where(~m, a, b))


def test_random_values_match_xla():
    # jax.random nests jit-ed functions (_normal -> _normal_real -> _uniform -> threefry2x32)
    # and bitcasts the bits to floats between elementwise chains: all of it is spliced and
    # fused through the bitcast now. The integer and float steps of bits and uniform are exact;
    # normal goes through log1p, whose last bit may differ from XLA's.
    key = jax.random.PRNGKey(11)
    for fn, exact in ((lambda k: jax.random.bits(k, (4099,), jnp.uint32), True),
                      (lambda k: jax.random.uniform(k, (4099,), jnp.float32), True),
                      (lambda k: jax.random.normal(k, (4099,), jnp.float32), False)):
        got, want = both(fn, key)
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_bitcast_between_elementwise_chains():
    def f(x):
        u = jax.lax.bitcast_convert_type(x * 2.0, jnp.uint32) ^ jnp.uint32(0x80000000)
        v = jax.lax.bitcast_convert_type(u >> 1, jnp.float32) + 1.0
        return v.reshape(4, -1) * 3.0, u

    xs = rng.standard_normal(4096).astype(np.float32)
    got, want = both(f, xs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


PROFILED = r"""
import jax, jax.numpy as jnp, numpy as np
key = jax.random.PRNGKey(0)
print(float(jax.jit(lambda k: jax.random.normal(k, (1 << 16,), jnp.float32).sum())(key)))
"""


def test_normal_is_one_fused_step(tmp_path):
    import os
    import subprocess
    import sys

    e = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    e.update(JAX_PLATFORMS="anvil", ANVIL_PROFILE=str(tmp_path / "trace.json"))
    r = subprocess.run([sys.executable, "-c", PROFILED], env=e, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    steps = [ln for ln in r.stderr.splitlines() if "%" in ln and " ms" not in ln]
    fused = [ln for ln in steps if "fused[" in ln or "rows[" in ln]
    # the bits, the uniform floats, erf_inv and the sum: one fused step (a row reduction), no
    # function left as a call
    assert len(fused) == 1, "\n".join(steps)
    assert not [ln for ln in steps if "[call]" in ln], "\n".join(steps)
