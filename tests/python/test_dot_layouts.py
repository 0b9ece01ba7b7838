"""Batched products whose operands are transposed matrices (kernels/dot.c reads them in place
on the GEMM path) and transposes folded into dot_general (compiler/fold.c: attention's
q @ k^T reads k as it lies). Checked against numpy in float64 and XLA:CPU in this process."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

rng = np.random.default_rng(8)


def run(dev, fn, *args):
    return np.asarray(jax.jit(fn)(*jax.device_put(args, jax.devices(dev)[0])))


def check(fn, ref, *args, rtol=2e-5):
    got = run("anvil", fn, *args)
    want = run("cpu", fn, *args)
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = np.abs(ref).max() + 1
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=rtol, atol=rtol * scale)


# (b, h, t, d): past the small loops (t * t * d > 65536) and below them
@pytest.mark.parametrize("b,h,t,d", [(2, 3, 64, 32), (2, 2, 8, 4), (1, 4, 128, 64)])
def test_q_times_k_transposed(b, h, t, d):
    q = rng.standard_normal((b, h, t, d)).astype(np.float32)
    k = rng.standard_normal((b, h, t, d)).astype(np.float32)
    ref = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64))
    check(lambda q, k: q @ k.transpose(0, 1, 3, 2), ref, q, k)
    check(lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k), ref, q, k)
    # transposed on the left: (q^T)^T k^T
    check(lambda q, k: q.transpose(0, 1, 3, 2).transpose(0, 1, 3, 2) @ k.transpose(0, 1, 3, 2), ref, q, k)


@pytest.mark.parametrize("b,m,n,k", [(3, 96, 80, 64), (4, 5, 6, 7)])
def test_gradient_forms(b, m, n, k):
    # the contractions a backward pass writes: a^T g and g b^T per batch
    a = rng.standard_normal((b, m, k)).astype(np.float32)
    g = rng.standard_normal((b, m, n)).astype(np.float32)
    w = rng.standard_normal((b, n, k)).astype(np.float32)
    a64, g64, w64 = (x.astype(np.float64) for x in (a, g, w))
    check(lambda a, g: jnp.einsum("bmk,bmn->bkn", a, g), np.einsum("bmk,bmn->bkn", a64, g64), a, g)
    check(lambda g, w: jnp.einsum("bmn,bnk->bmk", g, w), np.einsum("bmn,bnk->bmk", g64, w64), g, w)
    check(lambda a, w: jnp.einsum("bmk,bnk->bmn", a, w), np.einsum("bmk,bnk->bmn", a64, w64), a, w)
    check(lambda a, g: a.transpose(0, 2, 1) @ g, np.einsum("bmk,bmn->bkn", a64, g64), a, g)


def test_transposed_operand_with_another_use():
    # the transpose is read twice: it stays, and the product still reads it right
    q = rng.standard_normal((2, 2, 64, 32)).astype(np.float32)
    k = rng.standard_normal((2, 2, 64, 32)).astype(np.float32)

    def f(q, k):
        kt = k.transpose(0, 1, 3, 2)
        return (q @ kt) + kt.sum()

    ref = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) + k.astype(np.float64).sum()
    check(f, ref, q, k, rtol=5e-5)


@pytest.mark.parametrize("dtype", [np.int32, jnp.bfloat16])
def test_other_types_batched_transposed(dtype):
    a = (rng.standard_normal((3, 40, 50)) * 4).astype(np.float32).astype(dtype)
    c = (rng.standard_normal((3, 60, 50)) * 4).astype(np.float32).astype(dtype)
    got = run("anvil", lambda a, c: a @ c.transpose(0, 2, 1), a, c)
    want = run("cpu", lambda a, c: a @ c.transpose(0, 2, 1), a, c)
    if dtype == np.int32:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=0.5)


# ---------------------------------------------------------------- box copies through a reshape
# (compiler/compose_boxes.c): slice -> reshape -> transpose/slice as one copy when the strides
# land on whole digits, two copies otherwise; copies are exact, so XLA:CPU must match bit for bit


def split_heads(qkv):
    b, t, _ = qkv.shape
    q, k, v = jnp.split(qkv.reshape(b, t, 3, 4, 8), 3, axis=2)
    return tuple(a[:, :, 0].transpose(0, 2, 1, 3) for a in (q, k, v))


COPY_CASES = {
    "attention heads": (lambda x: split_heads(x), (2, 5, 96)),
    "slice, flatten, every third (carries: two copies)": (lambda x: x[:, 0:4].reshape(-1)[::3], (4, 6)),
    "slice, reshape, transpose": (lambda x: x[1:3, 2:8].reshape(2, 3, 2).transpose(2, 0, 1), (4, 9)),
    "strided slice, squeeze, slice": (lambda x: x[::2, 1:2, :].reshape(3, 7)[:, 1:6:2], (6, 3, 7)),
    "transpose, reshape, slice": (lambda x: x.T.reshape(2, 3, 4)[:, 1, :], (4, 6)),
}


@pytest.mark.parametrize("name", list(COPY_CASES))
def test_copies_through_a_reshape(name):
    fn, shape = COPY_CASES[name]
    x = rng.standard_normal(shape).astype(np.float32)
    got = jax.tree_util.tree_leaves(jax.jit(fn)(jax.device_put(x, jax.devices("anvil")[0])))
    want = jax.tree_util.tree_leaves(jax.jit(fn)(jax.device_put(x, jax.devices("cpu")[0])))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


# matrix-vector products past the small loops (kernels/dot.c gemv): rows in blocks of 64 the
# pool shares out, four rows at a time (row counts not multiples of 4 or 64), batched, f64,
# and the vector on the left (a transposed product, oneDNN's path)
@pytest.mark.parametrize("b,m,k,dtype", [(1, 512, 512, np.float32), (3, 301, 700, np.float32),
                                         (1, 2051, 1027, np.float32), (2, 130, 1001, np.float64)])
def test_matrix_vector(b, m, k, dtype):
    a = rng.standard_normal((b, m, k)).astype(dtype)
    v = rng.standard_normal((b, k)).astype(dtype)
    ref = np.einsum("bmk,bk->bm", a.astype(np.float64), v.astype(np.float64))
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    check(lambda a, v: jnp.einsum("bmk,bk->bm", a, v), ref, a, v, rtol=rtol)
    check(lambda a, v: a[0] @ v[0], ref[0], a, v, rtol=rtol)
    check(lambda a, v: v[0] @ a[0].T, ref[0], a, v, rtol=rtol)


# a few rows times a transposed matrix, past the small loops (kernels/dot.c rows_times_bt_f32:
# 4 x 4 blocks of lane sums, reduced 16 at a time by shuffles, columns shared over the pool):
# an LSTM's dg @ W.T, edges in both block directions with K not a multiple of 16, and batches
@pytest.mark.parametrize("b,m,n,k", [(None, 16, 128, 512), (None, 7, 61, 200), (3, 13, 70, 96), (None, 32, 257, 80)])
def test_rows_times_transposed(b, m, n, k):
    lead = () if b is None else (b,)
    a = rng.standard_normal(lead + (m, k)).astype(np.float32)
    w = rng.standard_normal(lead + (n, k)).astype(np.float32)
    ref = np.einsum("...mk,...nk->...mn", a.astype(np.float64), w.astype(np.float64))
    check(lambda a, w: jnp.einsum("...mk,...nk->...mn", a, w), ref, a, w)
    check(lambda a, w: a @ jnp.swapaxes(w, -1, -2), ref, a, w)


@pytest.mark.parametrize("m,k,n", [(1024, 256, 768), (300, 7, 500)])
def test_bf16_product_converted_over_the_pool(m, k, n):
    # bf16 operands widen to f32 and the f32 result narrows back in chunks across the pool
    # (kernels/dot.c convert16_parallel; 1024x256 and 768x1024 outputs are split, the
    # second case's operands are not). Every element: within one bf16 rounding of the f64
    # product of the same bf16 inputs, and as close to XLA:CPU.
    a = jnp.asarray(rng.standard_normal((m, k)), jnp.bfloat16)
    b = jnp.asarray(rng.standard_normal((k, n)), jnp.bfloat16)
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    got = run("anvil", lambda a, b: a @ b, a, b).astype(np.float64)
    want = run("cpu", lambda a, b: a @ b, a, b).astype(np.float64)
    tol = 2.0 ** -8 * np.abs(ref) + 1e-3
    assert np.all(np.abs(got - ref) <= tol)
    assert np.all(np.abs(got - want) <= 2 * tol)


@pytest.mark.parametrize("m,k", [(20, 100), (37, 512), (64, 33)])
def test_matrix_vector_rows_alike(m, k):
    # kernels/dot.c sums sixteen rows at a time (rows16_dots_f32), then four, then one: every
    # row must come out with the bits it has alone (a one-row product takes the one-row loop),
    # and close to the f64 product
    a = rng.standard_normal((m, k)).astype(np.float32)
    v = rng.standard_normal((k,)).astype(np.float32)
    whole = run("anvil", lambda a, v: a @ v, a, v)
    alone = np.concatenate([run("anvil", lambda a, v: a @ v, a[r:r + 1], v) for r in range(m)])
    np.testing.assert_array_equal(whole.view(np.uint32), alone.view(np.uint32))
    ref = a.astype(np.float64) @ v.astype(np.float64)
    np.testing.assert_allclose(whole, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
