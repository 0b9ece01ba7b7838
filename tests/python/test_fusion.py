"""Elementwise fusion (src/compiler/fuse_elementwise.c, src/runtime/steps_fused.c), checked
against JAX's CPU backend (XLA) in this process and against numpy doing the same float32
operations one at a time: anvil rounds every op exactly as an unfused step would, so results
must be bit-identical to numpy's; XLA may contract into FMAs, so it gets a tolerance.

Covers the groups that join steps which are not adjacent in the program (an optimizer's
updates of m, v and the parameter: multi-output fusion), values released between a group's
members (the release moves to the fused step), broadcasts that repeat every row (NHWC bias
and batch-norm vectors), shared temporary tiles in long chains, and vectorised sqrt."""

import os
import subprocess
import sys
import json
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

rng = np.random.default_rng(11)
B1, B2, LR, EPS = np.float32(0.9), np.float32(0.999), np.float32(1e-3), np.float32(1e-8)


def on(device, fn, *args):
    out = jax.jit(fn)(*jax.device_put(args, device))
    return jax.tree_util.tree_map(np.asarray, out)


def both(fn, *args):
    return on(jax.devices("anvil")[0], fn, *args), on(jax.devices("cpu")[0], fn, *args)


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = got.view(np.uint32) != want.view(np.uint32)
    assert not bad.any(), f"{bad.sum()} of {bad.size} differ, e.g. {got[bad][:4]} vs {want[bad][:4]}"


def adam(params, m, v, g, t):
    m = jax.tree_util.tree_map(lambda m, g: B1 * m + (1 - B1) * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: B2 * v + (1 - B2) * g * g, v, g)
    c1 = 1 - B1 ** t.astype(jnp.float32)
    c2 = 1 - B2 ** t.astype(jnp.float32)
    params = jax.tree_util.tree_map(
        lambda p, m, v: p - LR * (m / c1) / (jnp.sqrt(v / c2) + EPS), params, m, v)
    return params, m, v


def adam_numpy(params, m, v, g, c1, c2):
    one = np.float32(1)
    m = [B1 * a + (one - B1) * b for a, b in zip(m, g)]
    v = [B2 * a + (one - B2) * b * b for a, b in zip(v, g)]
    p = [a - LR * (b / c1) / (np.sqrt(c / c2) + EPS) for a, b, c in zip(params, m, v)]
    return p, m, v


# sizes: a tile and less, not a multiple of the tile, several threads' chunks, a scalar
SHAPES = [(64, 256), (256,), (300, 301), (3,), (257, 1025), ()]


def tree(scale=1.0, positive=False):
    out = []
    for s in SHAPES:
        a = rng.standard_normal(s).astype(np.float32) * np.float32(scale)
        out.append(np.abs(a) if positive else a)
    return out


def test_adam_over_a_parameter_tree():
    p, m, v, g = tree(), tree(0.1), tree(0.01, positive=True), tree()
    t = np.int32(3)
    got, xla = both(adam, p, m, v, g, t)
    # c1, c2 as anvil computes them (a scalar power; libm and XLA may differ in the last bit)
    c = on(jax.devices("anvil")[0], lambda t: (1 - B1 ** t.astype(jnp.float32),
                                                1 - B2 ** t.astype(jnp.float32)), t)
    want = adam_numpy(p, m, v, g, np.float32(c[0]), np.float32(c[1]))
    for got_k, want_k, xla_k in zip(got, want, xla):
        for a, b, x in zip(got_k, want_k, xla_k):
            assert_same_bits(a, b)
            np.testing.assert_allclose(a, x, rtol=2e-6, atol=1e-7)


def test_release_between_members_moves_to_the_fused_step():
    # s is read by the first member, then for the last time by a step outside the group (the
    # reverse), whose result comes before the group's second member; the group runs at its
    # last member, so s must stay alive until then. The concatenations in between allocate
    # blocks of s's size that would take its storage if it were released early.
    def f(s, w, r):
        a = s * 2.0 + 1.0            # members (n = 256*256)
        z = s[::-1]                  # last use of s, outside the group
        q = jnp.concatenate([r, r])  # fresh blocks of s's size
        q2 = jnp.concatenate([z[:128], z[128:]]) + q
        b = a * 3.0 - w              # joins a's group: reads a
        return b, q2

    s, w = rng.standard_normal((2, 256, 256)).astype(np.float32)
    r = rng.standard_normal((128, 256)).astype(np.float32)
    (b, q2), (bx, q2x) = both(f, s, w, r)
    want = (s * np.float32(2) + np.float32(1)) * np.float32(3) - w
    assert_same_bits(b, want)
    assert_same_bits(q2, s[::-1] + np.concatenate([r, r]))
    np.testing.assert_allclose(b, bx, rtol=1e-6, atol=1e-6)  # XLA may use FMAs
    np.testing.assert_allclose(q2, q2x, rtol=1e-6, atol=1e-6)


def test_group_closed_by_an_outside_reader():
    # the dot reads the first chain's result before the sibling chain: the first group must
    # run before the dot, whatever joins later
    def f(x, w):
        h = jnp.maximum(x * 0.5, 0.0)
        y = h @ w
        k = x * 0.25 - 1.0
        return y, k, h * 2.0

    x = rng.standard_normal((64, 64)).astype(np.float32)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    got, xla = both(f, x, w)
    h = np.maximum(x * np.float32(0.5), np.float32(0))
    assert_same_bits(got[0], on(jax.devices("anvil")[0], lambda h, w: h @ w, h, w))
    assert_same_bits(got[1], x * np.float32(0.25) - np.float32(1))
    assert_same_bits(got[2], h * np.float32(2))
    for a, b in zip(got, xla):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("channels", [1, 3, 16, 48, 64, 1000])
def test_row_broadcast_repeating_every_row(channels):
    # NHWC bias add and batch-norm scale: a vector broadcast along the leading axes; 1024 %
    # 48 and % 1000 are not 0 (the tile is gathered per tile then), the others repeat
    def f(x, b, s):
        return (x + b) * s - b

    x = rng.standard_normal((4, 9, 7, channels)).astype(np.float32)
    b = rng.standard_normal(channels).astype(np.float32)
    s = rng.standard_normal(channels).astype(np.float32)
    got, xla = both(f, x, b, s)
    assert_same_bits(got, (x + b) * s - b)
    np.testing.assert_allclose(got, xla, rtol=1e-6, atol=1e-6)


def test_batch_norm_forward_and_backward():
    def bn(x, g, b):
        m = x.mean((0, 1, 2))
        v = ((x - m) ** 2).mean((0, 1, 2))
        return ((x - m) * jax.lax.rsqrt(v + 1e-5) * g + b).sum() * 1e-3

    x = rng.standard_normal((8, 16, 16, 32)).astype(np.float32)
    g, b = rng.standard_normal((2, 32)).astype(np.float32)
    fn = jax.value_and_grad(bn, argnums=(0, 1, 2))
    got, xla = both(fn, x, g, b)
    for a, c in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(xla)):
        np.testing.assert_allclose(a, c, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("axis", [(0, 1, 2), (0,), (3,)])
def test_sums_over_leading_axes(axis):
    x = rng.standard_normal((7, 33, 5, 16)).astype(np.float32)
    got, xla = both(lambda x: x.sum(axis), x)
    want = x.astype(np.float64).sum(axis)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(got, xla, rtol=1e-5, atol=1e-4)


def test_long_chain_shares_temporary_tiles():
    # 40 ops: more temporaries than registers live at once; results as numpy's
    def f(x, y):
        a = x
        for k in range(10):
            a = jnp.tanh(a * 1.1 + y) - a * 0.5
        return a

    x, y = rng.standard_normal((2, 300, 70)).astype(np.float32)
    got, xla = both(f, x, y)
    a = x
    for _ in range(10):
        a = np.tanh(a * np.float32(1.1) + y) - a * np.float32(0.5)
    np.testing.assert_allclose(got, a, rtol=1e-5, atol=1e-6)  # tanh: anvil's own, not libm's
    np.testing.assert_allclose(got, xla, rtol=1e-5, atol=1e-6)


def test_sqrt_is_correctly_rounded_everywhere():
    # normal numbers only: denormals are flushed to zero, as on XLA:CPU
    special = np.array([0.0, -0.0, np.finfo(np.float32).tiny, 1e-30, 2.0, 3.0, np.inf, -1.0, -np.inf, np.nan],
                       np.float32)
    x = np.concatenate([special, np.abs(rng.standard_normal(1000).astype(np.float32)) * 1e3])
    got, xla = both(lambda x: jnp.sqrt(x * 1.0), x)
    with np.errstate(invalid="ignore"):
        want = np.sqrt(x)
    assert_same_bits(np.where(np.isnan(got), np.float32(np.nan), got),
                     np.where(np.isnan(want), np.float32(np.nan), want))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(xla))


ADAM_PROFILE = textwrap.dedent(
    """
    import os, sys
    os.environ["JAX_PLATFORMS"] = "anvil"
    import jax, jax.numpy as jnp, numpy as np
    sys.path.insert(0, sys.argv[1])
    import test_fusion as t
    p = [np.ones((300, 301), np.float32), np.ones(256, np.float32)]
    jax.block_until_ready(jax.jit(t.adam)(p, p, p, p, np.int32(1)))
    """
)


def test_adam_update_of_one_parameter_is_one_step(tmp_path):
    # m, v and the parameter's update (three chains, each reading the gradient) run as one
    # fused step per parameter: one pass over the arrays instead of three
    path = str(tmp_path / "trace.json")
    env = dict(os.environ, ANVIL_PROFILE=path)
    r = subprocess.run([sys.executable, "-c", ADAM_PROFILE, os.path.dirname(__file__)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(path) as fh:
        steps = [e for e in json.load(fh) if e.get("cat") == "step"]
    big = [e for e in steps if e["args"].get("bytes", 0) >= 300 * 301 * 4]
    names = [e["name"] for e in big]
    assert len(big) == 1, names
    assert names[0].startswith("fused[") and "sqrt" in names[0] and names[0].count(",") >= 10


# ---------------------------------------------------------------- pads folded into windows


@pytest.mark.parametrize("window,stride,padding", [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME"),
                                                    ((2, 3), (1, 2), "VALID"), ((3, 3), (1, 1), "SAME")])
def test_pooling_gradients(window, stride, padding):
    # JAX writes these gradients as pad (interior zeros) + a stride-1 window sum; the pad is
    # folded into the window (base dilation), and padding positions are skipped
    x = rng.standard_normal((3, 11, 10, 5)).astype(np.float32)
    x[0, 0, 0, :] = -0.0

    def pool(x):
        s = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1,) + window + (1,), (1,) + stride + (1,),
                                  padding)
        m = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1,) + window + (1,),
                                  (1,) + stride + (1,), padding)
        return (s * 0.25).sum() + (m * m).sum()

    got, xla = both(jax.grad(pool), x)
    np.testing.assert_allclose(got, xla, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", ["other_pad_value", "crop", "nonidentity_init", "own_padding"])
def test_pad_then_window(case):
    # reference: XLA's window over the pad it materialised (in one program, XLA:CPU gives 2.0,
    # not 12.0, for the first element of "nonidentity_init": init + five padding 2s + -0)
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    x[0, 0, 0, 0] = -0.0
    pad_value, cfg, init = 0.0, [(0, 0, 0), (1, 1, 1), (2, 0, 1), (0, 0, 0)], 0.0
    window_pad = [(0, 0)] * 4
    if case == "other_pad_value":
        pad_value = 1.5
    elif case == "crop":
        cfg[1] = (-1, 2, 1)
    elif case == "nonidentity_init":
        pad_value = init = 2.0
    elif case == "own_padding":
        window_pad = [(0, 0), (1, 2), (0, 1), (0, 0)]

    def pad(x):
        return jax.lax.pad(x, jnp.float32(pad_value), cfg)

    def window(p):
        return jax.lax.reduce_window(p, jnp.float32(init), jax.lax.add, (1, 2, 3, 1), (1, 1, 2, 1),
                                     window_pad)

    got = on(jax.devices("anvil")[0], lambda x: window(pad(x)), x)
    cpu = jax.devices("cpu")[0]
    want = on(cpu, window, on(cpu, pad, x))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    if case == "nonidentity_init":
        assert got[0, 0, 0, 0] == 12.0


# ---------------------------------------------------------------- transposed products


@pytest.mark.parametrize("shape", [(64, 32, 48), (1, 7, 5), (33, 1, 65)])
def test_transposed_product_is_the_swapped_product(shape):
    # JAX writes a dense layer's weight gradient as transpose(dot_general(g, x)); anvil
    # computes it as dot_general(x, g). A second use of the product keeps it as it is.
    m, k, n = shape
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    hp = jax.lax.Precision.HIGHEST

    def f(x, w):
        return jax.grad(lambda w: jnp.tanh(jnp.dot(x, w, precision=hp)).sum())(w)

    def g(a, b):
        p = jax.lax.dot_general(a, b, (((0,), (0,)), ((), ())))
        return p.T, p.T * 2.0, p.sum()

    def h(a, b):
        return jax.lax.dot_general(a, b, (((0,), (0,)), ((), ()))).T

    got, xla = both(f, x, w)
    np.testing.assert_allclose(got, xla, rtol=1e-5, atol=1e-5)
    b = rng.standard_normal((m, n)).astype(np.float32)
    got, xla = both(g, x, b)
    for a, c in zip(got, xla):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-4)
    got, xla = both(h, x, b)
    np.testing.assert_allclose(got, (x.T.astype(np.float64) @ b).T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got, xla, rtol=1e-5, atol=1e-4)


def test_streamed_chain_gives_the_bits_of_cached_chunks():
    # a fused chain over 32 MiB of inputs and outputs runs in short tiles
    # (steps_fused.c, FUSED_STREAM_BYTES), in-cache pieces in long ones: the same bits
    x = rng.standard_normal(1 << 22).astype(np.float32) * 4
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-42, 90.0, -90.0]

    def chain(x):
        return jnp.tanh(x * 1.5 + 0.5) * jnp.exp(-x * x) + x / 3.0

    dev = jax.devices("anvil")[0]
    whole = np.asarray(jax.jit(chain)(jax.device_put(x, dev)))
    f = jax.jit(chain)
    parts = np.concatenate([np.asarray(f(jax.device_put(x[i:i + 65536], dev)))
                            for i in range(0, x.size, 65536)])
    assert_same_bits(whole, parts)


# ------------------------------------------- small calls spliced into the caller (relu)

RELU_PROFILE = textwrap.dedent(
    """
    import sys, jax, jax.numpy as jnp, numpy as np
    x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(300).astype(np.float32)
    def f(x, b, g):
        h, back = jax.vjp(lambda x: jax.nn.relu(x + b), x)  # relu is a jit: a call
        return h, back(g)[0]
    jax.block_until_ready(jax.jit(f)(x, b, x))
    """
)


def test_relu_call_fuses_with_its_neighbours(tmp_path):
    # jax.nn.relu arrives as a call of a private function; spliced into the caller, the bias
    # add, relu's max, the gradient mask's compare and the gradient's select are one fused
    # step (flax_cnn_optax's and mlp_adam's layers), with no broadcast of zeros materialised
    path = str(tmp_path / "trace.json")
    env = dict(os.environ, ANVIL_PROFILE=path, JAX_PLATFORMS="anvil")
    r = subprocess.run([sys.executable, "-c", RELU_PROFILE], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(path) as fh:
        steps = [e for e in json.load(fh) if e.get("cat") == "step"]
    ops = [e["args"].get("op", "") for e in steps]
    assert "func.call" not in ops, ops
    assert any(o.startswith("fused[") and "add" in o and "maximum" in o and "compare" in o
               for o in ops), ops
    assert any(o.startswith("fused[") and "select" in o for o in ops), ops
    big = [o for e, o in zip(steps, ops) if e["args"].get("bytes", 0) >= 64 * 300 * 4]
    assert big == ["fused[add,maximum,compare,select]"], big  # all of it: one pass
