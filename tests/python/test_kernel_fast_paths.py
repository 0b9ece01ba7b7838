"""Differential tests for the kernels' fast paths (bf16/f16 dot through f32 GEMM, radix
sort for key comparators, row gather / scatter-add): each runs on anvil and on JAX's own CPU
backend (XLA) in this process, and where rounding can differ, against a numpy reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

rng = np.random.default_rng(7)


def on(device, fn, *args):
    return jax.jit(fn)(*[jax.device_put(a, device) for a in args])


def both(fn, *args):
    return on(jax.devices("anvil")[0], fn, *args), on(jax.devices("cpu")[0], fn, *args)


def bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


# ---------------------------------------------------------------- bf16 / f16 dot


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
@pytest.mark.parametrize("m,k,n", [(8, 8, 8), (64, 64, 64), (96, 200, 130)])
@pytest.mark.parametrize("form", ["ab", "aTb", "abT", "batched"])
def test_narrow_float_dot(dtype, m, k, n, form):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    fns = {
        "ab": (lambda x, y: x @ y, a, b),
        "aTb": (lambda x, y: x.T @ y, a.T.copy(), b),
        "abT": (lambda x, y: x @ y.T, a, b.T.copy()),
        "batched": (lambda x, y: jnp.einsum("bij,bjk->bik", x, y),
                    np.stack([a, a[::-1]]), np.stack([b, -b])),
    }
    fn, x, y = fns[form]
    x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
    got, xla = both(fn, x, y)
    assert got.dtype == dtype and got.shape == xla.shape
    # reference: exact products of the rounded inputs, summed in f64, rounded once
    ref = np.asarray(on(jax.devices("cpu")[0], fn, np.asarray(x, np.float64), np.asarray(y, np.float64)))
    ulp = 2.0 ** -8 if dtype == jnp.bfloat16 else 2.0 ** -11
    g = np.asarray(got, np.float64)
    # one rounding of an f32-accumulated value: within one ulp of the exact sum (plus f32
    # accumulation error, far below that at these sizes)
    np.testing.assert_allclose(g, ref, rtol=ulp, atol=ulp * np.sqrt(k) * 1e-2)
    np.testing.assert_allclose(g, np.asarray(xla, np.float64), rtol=2 * ulp, atol=ulp * np.sqrt(k) * 1e-2)


def test_bf16_dot_f32_result():
    a = jnp.asarray(rng.standard_normal((70, 90)), jnp.bfloat16)
    b = jnp.asarray(rng.standard_normal((90, 50)), jnp.bfloat16)
    fn = lambda x, y: lax.dot(x, y, preferred_element_type=jnp.float32)
    got, xla = both(fn, a, b)
    assert got.dtype == jnp.float32
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got), np.asarray(xla), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- sort


def special_floats(n, dtype):
    x = rng.standard_normal(n).astype(np.float32)
    x[rng.integers(0, n, n // 8)] = 0.0
    x[rng.integers(0, n, n // 8)] = -0.0
    x[rng.integers(0, n, n // 16)] = np.nan
    x[rng.integers(0, n, n // 16)] = -np.nan
    x[rng.integers(0, n, n // 16)] = np.inf
    x[rng.integers(0, n, n // 16)] = -np.inf
    x[rng.integers(0, n, n // 8)] = 1.5  # duplicates
    return np.asarray(jnp.asarray(x, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, jnp.bfloat16, np.float16])
@pytest.mark.parametrize("n", [5, 33, 5000])
def test_sort_and_argsort_special_values(dtype, n):
    x = special_floats(n, dtype)
    fn = lambda v: (jnp.sort(v), jnp.argsort(v), jnp.argsort(v, descending=True),
                    jnp.sort(v, descending=True), lax.sort(v, is_stable=True),
                    lax.sort_key_val(v, jnp.arange(v.shape[0], dtype=jnp.int32)))
    got, xla = both(fn, x)
    for g, c in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(xla)):
        np.testing.assert_array_equal(bits(g), bits(c))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.bool_])
def test_sort_integers(dtype):
    if dtype == np.bool_:
        x = rng.integers(0, 2, 3000).astype(np.bool_)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, 3000, dtype=dtype, endpoint=True)
        x[:10] = info.min
        x[10:20] = info.max
    fn = lambda v: (jnp.sort(v), jnp.argsort(v), jnp.argsort(v, descending=True))
    got, xla = both(fn, x)
    for g, c in zip(got, xla):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(c))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_2d_axes_and_payloads(axis):
    x = special_floats(40 * 37, np.float32).reshape(40, 37)
    y = rng.standard_normal((40, 37)).astype(np.float32)
    fn = lambda a, b: (jnp.sort(a, axis=axis), jnp.argsort(a, axis=axis),
                       lax.sort((a, b), dimension=axis % 2, num_keys=1))
    got, xla = both(fn, x, y)
    for g, c in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(xla)):
        np.testing.assert_array_equal(bits(g), bits(c))


def test_sort_multi_key():
    # a lexicographic comparator over two keys is not a single-key compare: the body decides
    k1 = rng.integers(0, 4, 500).astype(np.int32)
    k2 = special_floats(500, np.float32)
    got, xla = both(lambda a, b: (lax.sort((a, b), num_keys=2), jnp.lexsort((b, a))), k1, k2)
    for g, c in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(xla)):
        np.testing.assert_array_equal(bits(g), bits(c))


def test_sort_1m_matches_numpy():
    x = rng.standard_normal(1 << 20).astype(np.float32)
    anvil = jax.devices("anvil")[0]
    s, i = on(anvil, lambda v: (jnp.sort(v), jnp.argsort(v)), x)
    np.testing.assert_array_equal(np.asarray(s), np.sort(x, kind="stable"))
    np.testing.assert_array_equal(np.asarray(i), np.argsort(x, kind="stable"))


def test_sort_many_rows_split_over_threads():
    # enough rows and elements that the rows are shared out over the client's thread pool
    x = rng.standard_normal((64, 4096)).astype(np.float32)
    x[:, 1::7] = x[:, ::7][:, : x[:, 1::7].shape[1]]  # ties
    k = rng.integers(-5, 5, (48, 3000)).astype(np.int64)
    anvil = jax.devices("anvil")[0]
    s, i, d = on(anvil, lambda v: (jnp.sort(v, axis=1), jnp.argsort(v, axis=1),
                                   jnp.argsort(v, axis=1, descending=True)), x)
    np.testing.assert_array_equal(np.asarray(s), np.sort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(np.asarray(i), np.argsort(x, axis=1, kind="stable"))
    _, xla_d = both(lambda v: jnp.argsort(v, axis=1, descending=True), x)
    np.testing.assert_array_equal(np.asarray(d), np.asarray(xla_d))
    ki = on(anvil, lambda v: jnp.argsort(v, axis=1), k)
    np.testing.assert_array_equal(np.asarray(ki), np.argsort(k, axis=1, kind="stable"))


# ---------------------------------------------------------------- gather / scatter


@pytest.mark.parametrize("dtype", [np.float32, np.int32, jnp.bfloat16, np.float64])
def test_row_gather_and_scatter_add(dtype):
    x = np.asarray(jnp.asarray(rng.standard_normal((300, 7)) * 10, dtype))
    idx = rng.integers(-300, 300, 1000).astype(np.int32)  # negatives wrap (jnp semantics)
    fn = lambda a, i: (a[i], a.at[i].add(a[i[::-1]]), a.at[i].set(a[i] * 2), a.at[i].max(a[i]),
                       jnp.take(a, i, axis=0, mode="clip"), a.at[i].get(mode="fill", fill_value=-1))
    got, xla = both(fn, x, idx)
    for g, c in zip(got, xla):
        if np.asarray(g).dtype.kind == "f" and dtype != np.int32:
            # scatter-add order of duplicate indices may round differently
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(c, np.float64),
                                       rtol=1e-2 if dtype == jnp.bfloat16 else 1e-5, atol=1e-2)
        else:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(c))


def test_gather_scatter_out_of_bounds_and_1d():
    x = rng.standard_normal(50).astype(np.float32)
    idx = np.array([0, 49, 50, 1000, -1, -51, 7, 7], np.int32)
    fn = lambda a, i: (a[i], a.at[i].add(1.0), a.at[i].add(2.0, mode="drop"),
                       a.at[i].get(mode="fill", fill_value=np.nan))
    got, xla = both(fn, x, idx)
    for g, c in zip(got, xla):
        np.testing.assert_allclose(np.asarray(g), np.asarray(c), rtol=1e-6, equal_nan=True)


def test_gather_rows_of_3d_and_bench_case():
    x = rng.standard_normal((64, 5, 6)).astype(np.float32)
    idx = rng.integers(0, 64, (3, 11)).astype(np.int32)
    got, xla = both(lambda a, i: (a[i], a.at[i].add(1.0), a[:, i[0]]), x, idx)
    for g, c in zip(got, xla):
        np.testing.assert_allclose(np.asarray(g), np.asarray(c), rtol=1e-6)
    x = rng.standard_normal((1 << 12, 16)).astype(np.float32)
    i = rng.integers(0, 1 << 12, 1 << 10).astype(np.int32)
    fn = lambda x, i: x.at[i].add(x[i[::-1]] * 2.0)
    got, xla = both(fn, x, i)
    np.testing.assert_allclose(np.asarray(got), np.asarray(xla), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64])
def test_batched_index_gather_scatter(dtype, idx_dtype):
    """Per-row indices (batching dims: x[arange(n), i], vmapped takes and updates, what
    jnp.linalg.inv's pivot loop does), indices out of range included, against XLA and numpy."""
    x = np.asarray(rng.integers(-100, 100, (37, 5, 6)), dtype)
    i = rng.integers(-2, 8, (37, 5)).astype(idx_dtype)
    rows = np.arange(37)[:, None]
    cols = np.arange(5)[None, :]
    fn = lambda a, k: (a[rows, cols, k], jax.vmap(lambda r, j: r[j])(a, k),
                       a.at[rows, cols, k].set(a[rows, cols, k] * 2, mode="drop"),
                       a.at[rows, cols, k].add(1, mode="drop"),
                       jax.vmap(jax.vmap(lambda r, j: r.at[j].set(0)))(a, k),
                       jnp.swapaxes(a, 1, 2)[rows, k])
    got, xla = both(fn, x, i)
    for g, c in zip(got, xla):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(c))
    # the first against numpy: clamped indices
    k = np.clip(np.where(i < 0, i + 6, i), 0, 5)
    np.testing.assert_array_equal(np.asarray(got[0]), x[rows, cols, k])


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.float64, np.uint8])
@pytest.mark.parametrize("shape,perm", [((4096, 4, 4), (0, 2, 1)), ((33, 3, 7), (0, 2, 1)),
                                        ((5, 2, 17, 16), (0, 1, 3, 2)), ((64, 18, 17), (0, 2, 1))])
def test_batched_small_transposes(dtype, shape, perm):
    x = np.asarray(rng.integers(0, 100, shape), dtype)
    got = on(jax.devices("anvil")[0], lambda a: jnp.transpose(a, perm), x)
    np.testing.assert_array_equal(np.asarray(got), np.transpose(x, perm))


@pytest.mark.parametrize("m,n,k", [(16, 128, 512), (7, 130, 100), (32, 5, 640), (1, 300, 257)])
def test_few_rows_times_transposed(m, n, k):
    """x @ w.T with few rows (an RNN's backward): 4x4 blocks of row dot products, edges and a
    k that is no multiple of 16 included, against an f64 reference and XLA:CPU."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    got, xla = both(lambda x, y: x @ y.T, a, w)
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    bound = 4 * k * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64).T)
    assert np.all(np.abs(np.asarray(got, np.float64) - ref) <= bound)
    np.testing.assert_allclose(np.asarray(got), np.asarray(xla), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- top_k


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16, np.int32, np.uint8, np.float64])
@pytest.mark.parametrize("k", [1, 3, 40])
def test_top_k_selection_with_ties(dtype, k):
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(0, 20, (6, 500)).astype(dtype)  # many ties: lower index first
    else:
        x = special_floats(6 * 500, dtype).reshape(6, 500)
        x = np.where(np.isnan(np.asarray(x, np.float32)), np.asarray(1.0, dtype), x).astype(dtype)
    got, xla = both(lambda v: lax.top_k(v, k), x)
    np.testing.assert_array_equal(bits(got[0]), bits(xla[0]))
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(xla[1]))
    if np.dtype(dtype).kind in "iu":
        # and independently: numpy's stable descending order (floats hold -0/+0 ties, which
        # total order tells apart and numpy does not)
        order = np.argsort(-np.asarray(x, np.float64), axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(np.asarray(got[1]), order)


def test_top_k_3d_and_k_equal_n():
    # lax.top_k's composite runs as the top_k kernel: every row of a 3-D input, k = n sorts
    x = special_floats(3 * 4 * 9, np.float32).reshape(3, 4, 9)
    for k in (9, 2):
        got, xla = both(lambda v: lax.top_k(v, k), x)
        np.testing.assert_array_equal(bits(got[0]), bits(xla[0]))
        np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(xla[1]))


# ------------------------------------------------- whole loops as register programs
# Loops over small arrays whose bodies are elementwise run as one register program
# (runtime/loop_prog.c). Exact operations (integer, select, add/mul by exact constants) must
# match XLA bit for bit; transcendental ones within a few ulp (the kernels differ).


def test_loop_program_integer_and_select():
    def f(x, n):
        def body(i, c):
            v, w, k = c
            v = jnp.where(v % 3 == 0, v // 3, v * 2 + i)  # select on an array predicate
            w = w ^ (v << 1)
            k = lax.select(i < 5, k + 1, k - 1)  # scalar predicate over scalars
            return v, w, k
        return lax.fori_loop(0, n, body, (x, x * 7, jnp.int32(0)))
    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    got, xla = both(f, x, np.int32(37))
    for g, e in zip(got, xla):
        np.testing.assert_array_equal(g, e)


def test_loop_program_swaps_and_converts():
    def f(a, b):
        def body(c):
            i, a, b, h = c
            # swap a and b, keep a copy of the new a, convert through int and back
            na = b * 0.5 + a.astype(jnp.int32).astype(jnp.float32)
            return i + 1, na, a, na
        return lax.while_loop(lambda c: c[0] < 9, body, (0, a, b, a))
    a = np.linspace(-3, 3, 48).astype(np.float32)
    b = np.linspace(5, -5, 48).astype(np.float32)
    got, xla = both(f, a, b)
    for g, e in zip(got, xla):
        np.testing.assert_array_equal(bits(g), bits(e))


def test_loop_program_transcendental_and_captures():
    w = rng.standard_normal(64).astype(np.float32)

    def f(x, s):
        # captured array w and scalar s, a sin per iteration, 200 iterations
        return lax.fori_loop(0, 200, lambda i, v: v * 0.999 + jnp.sin(v * s + w) * 1e-3, x)
    got, xla = both(f, rng.standard_normal(64).astype(np.float32), np.float32(0.7))
    np.testing.assert_allclose(np.asarray(got), np.asarray(xla), rtol=1e-5, atol=1e-6)


def test_loop_program_scalar_pairs():
    # two inline scalar ops in a row run as one instruction (loop_prog.c's pairs): operand
    # order (the intermediate on either side of -, /), f32, wrapping i32 and i64, and an
    # intermediate read twice (not paired), against the same arithmetic in numpy's types
    def f(x, k):
        def body(c):
            i, s, u, k, j, q, w = c
            m = w * np.float32(1.5)
            return (i + 1, x - s * np.float32(0.75), (u - np.float32(0.5)) / np.float32(1.25),
                    np.int32(7) - k * np.int32(3), (j + np.int32(11)) * np.int32(5),
                    q * np.int64(3) - np.int64(1), m - m * np.float32(0.25))
        init = (0, x, x, k, k, k.astype(jnp.int64) * 1000003, x)
        return lax.while_loop(lambda c: c[0] < 100, body, init)[1:]
    x, k = np.float32(0.3), np.int32(12345)
    got, xla = both(f, x, k)

    def wrap(v, bits):
        return (v + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
    s = u = w = x
    kk = jj = int(k)
    q = int(k) * 1000003
    for _ in range(100):
        m = np.float32(w * np.float32(1.5))
        s, u, w = np.float32(x - np.float32(s * np.float32(0.75))), np.float32(np.float32(u - np.float32(0.5)) / np.float32(1.25)), np.float32(m - np.float32(m * np.float32(0.25)))
        kk, jj, q = wrap(7 - wrap(kk * 3, 32), 32), wrap(wrap(jj + 11, 32) * 5, 32), wrap(wrap(q * 3, 64) - 1, 64)
    want = [s, u, kk, jj, q, w]
    # bit for bit the per-op arithmetic; XLA:CPU may contract a multiply and an add
    for g, e, ref in zip(got, xla, want):
        assert np.asarray(g).item() == ref, (g, ref)
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)


def test_loop_program_f64_scalars():
    # f64 (conftest.py turns jax_enable_x64 on for every test)
    def f(x):
        def body(c):
            i, s, t = c
            return i + 1, s * 0.999 + x, t + s / (i + 1).astype(jnp.float64)
        return lax.while_loop(lambda c: c[0] < 500, body, (0, x, x * 0))[1:]
    got, xla = both(f, np.float64(0.25))
    assert got[0].dtype == jnp.float64
    # the same IEEE double operations in Python (XLA may fuse s * 0.999 + x into an FMA)
    s, t = 0.25, 0.0
    for i in range(500):
        s, t = s * 0.999 + 0.25, t + s / float(i + 1)
    assert float(got[0]) == s and float(got[1]) == t
    np.testing.assert_allclose([float(v) for v in got], [float(v) for v in xla], rtol=1e-13)


# a counted loop whose body is one pair of + - * / updating one carried array from loop
# invariants runs all its iterations in registers (kernels/elementwise_pair.c, iterated
# pairs): the carried array as each of the three operands, both nestings, f32 and f64, sizes
# of whole blocks, a partial block and less than one, a pass-through carried value; numpy
# doing the same IEEE ops one at a time gives the bits. n = 0: scalars, whose inline pair
# (loop_prog.c, iterate_scalar_pair) keeps the carried value in a machine register
PAIR_BODIES = {
    "x*a+b": (lambda v, a, b: v * a + b),
    "a*x-b": (lambda v, a, b: a * v - b),
    "b/(x+a)": (lambda v, a, b: b / (v + a)),
    "x-(a*b)": (lambda v, a, b: v - a * b),
    "(a/b)+x": (lambda v, a, b: a / b + v),
    "(x-a)*b": (lambda v, a, b: (v - a) * b),
}


@pytest.mark.parametrize("body", list(PAIR_BODIES))
@pytest.mark.parametrize("dtype,n", [(np.float32, 64), (np.float32, 70), (np.float32, 5),
                                     (np.float64, 96), (np.float32, 0), (np.float64, 0)])
def test_loop_program_iterated_pair(body, dtype, n):
    fn = PAIR_BODIES[body]
    shape = (n,) if n else ()
    x = np.asarray(rng.standard_normal(shape), dtype)
    a = np.asarray(0.9 + 0.1 * rng.random(shape), dtype)
    b = np.asarray(rng.standard_normal(shape) * 1e-2, dtype)

    def f(x, a, b):
        def step(i, c):
            v, keep = c
            return fn(v, a, b), keep
        return lax.fori_loop(0, 37, step, (x, b))
    got = on(jax.devices("anvil")[0], f, x, a, b)
    v = x.copy()
    with np.errstate(all="ignore"):
        for _ in range(37):  # few enough that no body reaches its fixed point
            v = fn(v, a, b).astype(dtype)
    np.testing.assert_array_equal(bits(got[0]), bits(v))
    np.testing.assert_array_equal(bits(got[1]), bits(b))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
@pytest.mark.parametrize("form", ["x*a+b", "b-x*a"])
def test_loop_program_iterated_integer_scalar_pair(dtype, form):
    # on integer scalars the pair wraps, as the kernels do
    step = {"x*a+b": lambda v, a, b: v * a + b, "b-x*a": lambda v, a, b: b - v * a}[form]
    x, a, b = (np.asarray(v, dtype) for v in (12345, 1103515245, 12345))
    got = on(jax.devices("anvil")[0], lambda x, a, b: lax.fori_loop(0, 1000, lambda i, v: step(v, a, b), x), x, a, b)
    mod = 2 ** (8 * np.dtype(dtype).itemsize)
    v = int(x)
    for _ in range(1000):
        v = step(v, int(a), int(b)) % mod
    assert int(np.asarray(got).astype(np.uint64)) % mod == v


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 3])
def test_loop_program_scan(reverse, unroll):
    """lax.scan over rows: xs read with dynamic_slice, ys written in place with
    dynamic_update_slice, a running carry; integer and float outputs bit-identical to XLA."""
    def f(c0, xs, ks):
        def step(c, xk):
            x, k = xk
            c = c * 0.5 + x  # exact: scaling by 1/2 and one add per element
            return c, (c, k * 3 + 1, c - 1.0)
        return lax.scan(step, c0, (xs, ks), reverse=reverse, unroll=unroll)
    xs = rng.standard_normal((37, 16)).astype(np.float32)
    ks = rng.integers(-100, 100, (37, 5)).astype(np.int32)
    got, xla = both(f, np.zeros(16, np.float32), xs, ks)
    for g, e in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(xla)):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_array_equal(bits(g), bits(e))


def test_loop_program_scan_reads_updated_carry():
    """The body reads the array it updates (a cumulative table: row i from row i-1), so the
    update must see exactly the rows written before it."""
    def f(t0):
        def body(i, t):
            prev = lax.dynamic_index_in_dim(t, i - 1, keepdims=False)
            return lax.dynamic_update_index_in_dim(t, prev * 2.0 + i.astype(jnp.float32), i, 0)
        return lax.fori_loop(1, t0.shape[0], body, t0)
    t0 = np.zeros((20, 8), np.float32)
    t0[0] = np.arange(8)
    got, xla = both(f, t0)
    np.testing.assert_array_equal(bits(got), bits(xla))


def test_loop_program_rnn_with_dots():
    """A recurrent scan with matrix-vector products in the body (dot_general inside the loop
    program) against XLA; integer dots in a fori_loop bit-identical."""
    W = (rng.standard_normal((32, 32)) * 0.2).astype(np.float32)
    U = (rng.standard_normal((32, 8)) * 0.2).astype(np.float32)
    xs = rng.standard_normal((50, 8)).astype(np.float32)

    def rnn(W, U, h0, xs):
        return lax.scan(lambda h, x: (jnp.tanh(W @ h + U @ x),) * 2, h0, xs)
    got, xla = both(rnn, W, U, np.zeros(32, np.float32), xs)
    for g, e in zip(got, xla):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-5, atol=2e-6)

    M = rng.integers(-3, 4, (6, 6)).astype(np.int32)

    def power(M, v):
        return lax.fori_loop(0, 7, lambda i, v: (M @ v) % 1000 + i, v)
    got, xla = both(power, M, np.arange(6, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(xla))


def test_loop_program_broadcast_rows_and_columns():
    # broadcasts of arrays inside a loop program (an RNN's bias over the batch): an invariant
    # row (run once before the loop), an invariant column (a size-1 axis), and a carried row
    # (run every iteration); integers, so exact against numpy and XLA
    def f(x, r, b, c):
        def body(i, vr):
            v, r = vr
            return (v * 3 + i) % 1001 + b + c - r, (r * 5 + 1) % 97
        return lax.fori_loop(0, 9, body, (x, r))
    x = rng.integers(-50, 50, (4, 16)).astype(np.int32)
    r = rng.integers(-50, 50, 16).astype(np.int32)
    b = rng.integers(-50, 50, 16).astype(np.int32)
    c = rng.integers(-50, 50, (4, 1)).astype(np.int32)
    got, xla = both(f, x, r, b, c)
    v, w = x.copy(), r.copy()
    for i in range(9):
        v, w = (v * 3 + i) % 1001 + b + c - w, (w * 5 + 1) % 97
    for g, e, want in zip(got, xla, (v, w)):
        np.testing.assert_array_equal(np.asarray(g), want)
        np.testing.assert_array_equal(np.asarray(e), want)


def test_loop_program_column_slices():
    """Dynamic slices and updates of columns (strided, not one run of memory) in a loop."""
    def f(t0):
        def body(i, t):
            prev = lax.dynamic_slice(t, (0, i - 1), (t.shape[0], 1))
            return lax.dynamic_update_slice(t, prev * 3.0 - i.astype(jnp.float32), (0, i))
        return lax.fori_loop(1, t0.shape[1], body, t0)
    t0 = np.zeros((6, 10), np.float32)
    t0[:, 0] = np.arange(6)
    got, xla = both(f, t0)
    np.testing.assert_array_equal(bits(got), bits(xla))
