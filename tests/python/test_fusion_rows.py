"""Row groups (src/compiler/fuse_rows.c, src/runtime/steps_rows.c): a reduction over the last
axis and the elementwise steps around it run block of rows by block of rows (layer-norm,
softmax, log-softmax). Every member keeps its own kernel, so the grouped program must give
the same bits as the same ops run as separate programs (where nothing can be grouped); XLA:CPU
in this process gives the values to a tolerance (it fuses and rounds differently)."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

rng = np.random.default_rng(5)


def on(device, fn, *args):
    out = jax.jit(fn)(*jax.device_put(args, device))
    return jax.tree_util.tree_map(np.asarray, out)


def anvil(fn, *args):
    return on(jax.devices("anvil")[0], fn, *args)


def xla(fn, *args):
    return on(jax.devices("cpu")[0], fn, *args)


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = got.view(np.uint32) != want.view(np.uint32)
    assert not bad.any(), f"{bad.sum()} of {bad.size} differ, e.g. {got[bad][:4]} vs {want[bad][:4]}"


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def layer_norm_pieces(x, g, b):
    """The same ops, each reduction in a program of its own: nothing to group."""
    s = anvil(lambda x: x.sum(-1, keepdims=True), x)
    d = anvil(lambda x, s: (x - s / x.shape[-1]) ** 2, x, s)
    v = anvil(lambda d: d.sum(-1, keepdims=True), d)
    return anvil(lambda x, s, v, g, b: (x - s / x.shape[-1]) * lax.rsqrt(v / x.shape[-1] + 1e-5) * g + b,
                 x, s, v, g, b)


# rows x length: one block, odd sizes, rows longer than a block, several threads' chunks
SHAPES = [(3, 5, 7), (64, 33), (3, 20000), (8, 128, 256), (4096, 96)]


@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm(shape):
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    g = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    got = anvil(layer_norm, x, g, b)
    assert_same_bits(got, layer_norm_pieces(x, g, b))
    np.testing.assert_allclose(got, xla(layer_norm, x, g, b), rtol=2e-5, atol=2e-5)


def softmax_pieces(s):
    m = anvil(lambda s: s.max(-1, keepdims=True), s)
    e = anvil(lambda s, m: jnp.exp(s - m), s, m)
    z = anvil(lambda e: e.sum(-1, keepdims=True), e)
    return anvil(lambda e, z: e / z, e, z)


@pytest.mark.parametrize("shape", SHAPES)
def test_masked_softmax(shape):
    s = rng.standard_normal(shape).astype(np.float32) * 4
    mask = rng.random(shape) < 0.7

    def f(s):
        s = jnp.where(mask, s, jnp.float32(-1e9))
        m = s.max(-1, keepdims=True)
        e = jnp.exp(s - m)
        return e / e.sum(-1, keepdims=True)

    got = anvil(f, s)
    assert_same_bits(got, softmax_pieces(np.where(mask, s, np.float32(-1e9))))
    np.testing.assert_allclose(got, xla(f, s), rtol=1e-5, atol=1e-7)


def test_softmax_rows_with_nan_and_infinities():
    s = rng.standard_normal((64, 40)).astype(np.float32)
    s[3, 7] = np.nan
    s[5, :] = -np.inf
    s[6, 2] = np.inf
    s[7, :] = 0.0
    s[8, ::2] = -0.0

    def f(s):
        m = s.max(-1, keepdims=True)
        e = jnp.exp(s - m)
        return e / e.sum(-1, keepdims=True)

    got = anvil(f, s)
    assert_same_bits(got, softmax_pieces(s))
    want = xla(f, s)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5, atol=1e-7)


def test_log_softmax_and_min():
    x = rng.standard_normal((128, 512)).astype(np.float32) * 5

    def f(x):
        lo = x.min(-1, keepdims=True)
        return jax.nn.log_softmax(x) + (x - lo) * 0.5

    np.testing.assert_allclose(anvil(f, x), xla(f, x), rtol=1e-5, atol=1e-5)


def test_broadcast_read_blocks_in_place_reuse():
    # b (one value per row, as many as the row length) is read along the rows by t for every
    # row, and its last use, r, may write over it in place: run in blocks of rows, r must not
    # overwrite b while later blocks of t still read all of it
    n = 2048
    x = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)

    def f(x, b):
        s = x.sum(-1)
        t = x * 2 + b[None, :]
        r = s * 3 + b
        return t.sum(-1) + r

    got = anvil(f, x, b)
    np.testing.assert_allclose(got, xla(f, x, b), rtol=1e-4, atol=1e-2)
    s = x.astype(np.float64).sum(-1)
    want = (x.astype(np.float64) * 2 + b[None, :]).sum(-1) + s * 3 + b
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-2)


def test_reduction_read_elsewhere_keeps_its_value():
    # the row sums are a result too, and the normalised rows are transposed afterwards
    x = rng.standard_normal((300, 70)).astype(np.float32)

    def f(x):
        s = x.sum(-1, keepdims=True)
        y = x / s
        return s, y.T, (y * y).sum(-1)

    got = anvil(f, x)
    want = xla(f, x)
    for a, w in zip(got, want):
        np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-4)


PROFILE = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp, numpy as np
    from jax import lax
    x = np.ones((256, 512), np.float32)
    g = np.ones(512, np.float32)
    def ln(x, g):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5) * g
    def sm(x):
        return jax.nn.softmax(x * 0.5, axis=-1)
    jax.block_until_ready(jax.jit(ln)(x, g))
    jax.block_until_ready(jax.jit(sm)(x))
    """
)


def test_layer_norm_and_softmax_are_one_step_each(tmp_path):
    path = str(tmp_path / "trace.json")
    env = dict(os.environ, ANVIL_PROFILE=path, JAX_PLATFORMS="anvil")
    r = subprocess.run([sys.executable, "-c", PROFILE], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(path) as fh:
        steps = [e for e in json.load(fh) if e.get("cat") == "step"]
    big = [e["name"] for e in steps if e["args"].get("bytes", 0) >= 256 * 512 * 4]
    assert len(big) == 2, big
    assert all(n.startswith("rows[") for n in big), big
    assert all(n.split(" ")[0].count("reduce") == 2 for n in big), big
