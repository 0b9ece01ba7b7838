"""Subnormal floats: anvil flushes them like XLA:CPU (FTZ + DAZ) by default, in every thread
that computes, and computes them exactly with ANVIL_DENORMALS=ieee. Expected values come from
JAX's CPU backend in this process and from numpy on the caller's thread (which must keep
its own floating-point mode after anvil returns)."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

TINY = np.float32(1e-40)  # subnormal in float32


def run_both(fn, *args):
    anvil, cpu = jax.devices("anvil")[0], jax.devices("cpu")[0]
    a = jax.jit(fn)(*[jax.device_put(x, anvil) for x in args])
    c = jax.jit(fn)(*[jax.device_put(x, cpu) for x in args])
    return np.asarray(a), np.asarray(c)


def test_scaling_a_subnormal_gives_zero_like_xla():
    a, c = run_both(lambda x: x * 1.5, np.full(4, TINY, np.float32))
    assert np.all(c == 0.0)  # XLA:CPU flushes
    np.testing.assert_array_equal(a, c)


def test_exp_underflow_gives_zero_like_xla():
    a, c = run_both(jnp.exp, np.full(8, -95.0, np.float32))
    np.testing.assert_array_equal(a, c)
    assert np.all(a == 0.0)


@pytest.mark.parametrize("n", [1 << 20])
def test_threads_of_the_pool_flush_too(n):
    # large enough to be split over the pool's threads
    x = np.full(n, TINY, np.float32)
    a, c = run_both(lambda v: v * 1.5 + v, x)
    np.testing.assert_array_equal(a, c)
    assert not np.any(a)


def test_gemm_flushes_subnormal_inputs():
    # big enough for BLAS to use its own threads
    m = np.full((384, 384), TINY, np.float32)
    ones = np.ones((384, 384), np.float32)
    a, c = run_both(lambda p, q: p @ q, m, ones)
    np.testing.assert_array_equal(a, c)
    assert not np.any(a)


def test_callers_mode_is_restored():
    # numpy computes on this thread: subnormals must still be exact here after anvil ran
    before = np.float32(TINY) * np.float32(1.5)
    assert before != 0
    run_both(lambda x: x * 1.5, np.full(4, TINY, np.float32))
    jax.jit(lambda x: x * 2.0)(jax.device_put(np.float32(3.0), jax.devices("anvil")[0]))
    assert np.float32(TINY) * np.float32(1.5) == before


def test_ieee_opt_out():
    prog = textwrap.dedent(
        """
        import os
        os.environ["JAX_PLATFORMS"] = "anvil"
        import jax, jax.numpy as jnp, numpy as np
        x = np.full(4, np.float32(1e-40))
        print(repr(float(jax.jit(lambda v: v * 1.5)(x)[0])))
        print(repr(float(jax.jit(jnp.exp)(np.float32(-95.0)))))
        big = np.full(1 << 20, np.float32(1e-40))
        print(int(np.count_nonzero(np.asarray(jax.jit(lambda v: v * 1.5 + v)(big)))))
        m = np.full((384, 384), np.float32(1e-40))
        print(int(np.count_nonzero(np.asarray(jax.jit(lambda p, q: p @ q)(m, np.ones_like(m) * 1e20)))))
        """
    )
    env = dict(os.environ, ANVIL_DENORMALS="ieee")
    r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    scaled, expd, big, gemm = r.stdout.split()[-4:]
    assert float(scaled) == float(np.float32(TINY) * np.float32(1.5))  # 1.5e-40, exact
    assert float(expd) == float(np.exp(np.float32(-95.0)))  # numpy on an IEEE thread
    assert int(big) == 1 << 20
    assert int(gemm) == 384 * 384


def test_bad_mode_is_rejected():
    prog = "import os; os.environ['JAX_PLATFORMS']='anvil'; import jax; jax.devices()"
    env = dict(os.environ, ANVIL_DENORMALS="sometimes")
    r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0
    assert "ANVIL_DENORMALS" in r.stderr
