"""A PyPI library built on CPU FFI handlers, run on anvil: jax-finufft (non-uniform FFTs:
its primitives lower for "cpu" only, to its own XLA FFI targets with 20-odd scalar
attributes each). Its results on anvil are compared with XLA:CPU's in the same process and
with a direct sum. Skipped when jax-finufft is not installed (it is not in setup.sh: a
4.7 MB wheel that also pulls pydantic)."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

finufft = pytest.importorskip("jax_finufft")

N = 16


def _inputs():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-np.pi, np.pi, (2, 60))
    c = rng.normal(size=60) + 1j * rng.normal(size=60)
    f = rng.normal(size=(N, N)) + 1j * rng.normal(size=(N, N))
    s = rng.uniform(-1, 1, 20)
    return x, y, c, f, s


def _run(platform):
    dev = jax.devices(platform)[0]
    x, y, c, f, s = (jax.device_put(a, dev) for a in _inputs())
    eps = 1e-9
    out = {
        "nufft1_1d": jax.jit(lambda c, x: finufft.nufft1(N, c, x, eps=eps))(c, x),
        "nufft1_2d": jax.jit(lambda c, x, y: finufft.nufft1((N, N), c, x, y, eps=eps))(c, x, y),
        "nufft2_2d": jax.jit(lambda f, x, y: finufft.nufft2(f, x, y, eps=eps))(f, x, y),
        "nufft3_1d": jax.jit(lambda c, x, s: finufft.nufft3(c, x, s, eps=eps))(c, x, s),
        "single": jax.jit(lambda c, x: finufft.nufft1(N, c, x, eps=1e-5))(
            c.astype(jnp.complex64), x.astype(jnp.float32)),
        "grad": jax.jit(jax.grad(lambda x: jnp.abs(finufft.nufft1(N, c, x, eps=eps)).sum()))(x),
    }
    return {k: np.asarray(v) for k, v in out.items()}


def test_jax_finufft_matches_xla_cpu():
    a, c = _run("anvil"), _run("cpu")
    for k in a:
        if k == "grad":  # anvil's own abs/sum around the transforms round differently
            np.testing.assert_allclose(a[k], c[k], rtol=1e-12, atol=1e-12)
        else:  # the library's handlers computed the same bits
            np.testing.assert_array_equal(a[k], c[k], err_msg=k)
    x, _, coef, _, _ = _inputs()
    ref = np.array([np.sum(coef * np.exp(1j * k * x)) for k in range(-N // 2, N // 2)])
    np.testing.assert_allclose(a["nufft1_1d"], ref, rtol=0, atol=1e-7 * np.abs(ref).max())
