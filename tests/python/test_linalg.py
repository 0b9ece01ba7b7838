"""Linear algebra that JAX lowers to LAPACK custom calls (lapack_*_ffi) on anvil.

Two parts:
- decompositions run on anvil and are checked by what defines them (Q@R == A with Q
  orthonormal, U@diag(S)@Vh == A, A@v == lambda*v...), with eigen/singular values compared to
  numpy's, for f32/f64/c64/c128 and batched inputs;
- the jax-export artifacts that JAX lowered for "cpu" (LAPACK custom calls) run on anvil and
  their outputs are compared with the expected outputs stored beside them, or, where the
  decomposition is not unique (eigenvectors of repeated eigenvalues), checked by the
  properties those expected outputs also satisfy.
"""

import glob
import json
import os

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from jax import lax
from jax_export_data import EXPORT_DIR, SUFFIX_DTYPE, decode

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [(5, 5), (6, 4), (4, 6), (2, 3, 5, 4)]


def anvil():
    return jax.devices("anvil")[0]


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def hermitian(shape, dtype, seed=0):
    a = rand(shape, dtype, seed)
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dtype)


def tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def ct(x):
    return np.conj(np.swapaxes(x, -1, -2))


def on_anvil(fn, *args):
    out = jax.jit(fn)(*[jax.device_put(a, anvil()) for a in args])
    for leaf in jax.tree_util.tree_leaves(out):
        assert leaf.devices() == {anvil()}
    return jax.tree_util.tree_map(np.asarray, out)


def assert_near(x, y, dtype, scale=None):
    x, y = np.asarray(x, np.complex128), np.asarray(y, np.complex128)
    s = scale if scale is not None else max(1.0, float(np.max(np.abs(y), initial=0)))
    err = float(np.max(np.abs(x - y), initial=0))
    assert err <= tol(dtype) * s, f"max error {err} > {tol(dtype) * s}"


def assert_orthonormal_columns(q, dtype):
    k = q.shape[-1]
    assert_near(ct(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype)


# ------------------------------------------------------------- decompositions


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_qr(dtype, shape):
    a = rand(shape, dtype)
    q, r = on_anvil(jnp.linalg.qr, a)
    assert q.dtype == dtype and r.dtype == dtype
    assert_orthonormal_columns(q, dtype)
    assert np.allclose(np.tril(r, -1), 0)
    assert_near(q @ r, a, dtype)
    qf, rf = on_anvil(lambda x: jnp.linalg.qr(x, mode="complete"), a)
    assert qf.shape[-1] == shape[-2]
    assert_orthonormal_columns(qf, dtype)
    assert_near(qf @ rf, a, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_pivoting(dtype):
    a = rand((6, 4), dtype, seed=3)
    q, r, p = on_anvil(lambda x: jsl.qr(x, pivoting=True, mode="economic"), a)
    assert sorted(p.tolist()) == list(range(4))
    assert_near(q @ r, a[:, p], dtype)
    # column pivoting puts the diagonal of R in non-increasing magnitude
    d = np.abs(np.diag(r))
    assert np.all(d[:-1] >= d[1:] * (1 - 1e-5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 6), (3, 5, 5)])
def test_eigh(dtype, shape):
    a = hermitian(shape, dtype)
    w, v = on_anvil(jnp.linalg.eigh, a)
    assert w.dtype == np.finfo(dtype).dtype
    assert_near(w, np.linalg.eigvalsh(a.astype(np.complex128)), dtype)
    assert_orthonormal_columns(v, dtype)
    assert_near(a @ v, v * w[..., None, :], dtype)
    wu = on_anvil(lambda x: jnp.linalg.eigvalsh(x, UPLO="U"), a)
    assert_near(wu, w, dtype)


def test_eigh_batched_equals_unbatched():
    """A batch of eigh is the eigh of each matrix, signs of the eigenvectors included, as on
    XLA:CPU: linalg_sharding_test compares a sharded (per-shard batch 4) eigh with the whole
    batch of 8. The Jacobi across SIMD lanes served batches of 8 and more, with signs of its
    own (LAPACK served smaller ones); it is now opt-in (ANVIL_BATCHED_EIGH=1)."""
    a = hermitian((8, 6, 6), np.float32)
    w, v = on_anvil(jnp.linalg.eigh, a)
    for i in range(8):
        wi, vi = on_anvil(jnp.linalg.eigh, a[i])
        np.testing.assert_array_equal(v[i], vi)
        np.testing.assert_array_equal(w[i], wi)


_SPLIT_SCRIPT = r"""
import sys, numpy as np, jax, jax.numpy as jnp
rng = np.random.default_rng(5)
out = {}
for dt in (np.float32, np.float64, np.complex64):
    for b, n in ((64, 8), (40, 33), (17, 4)):
        m = rng.standard_normal((b, n, n)).astype(dt)
        if np.iscomplexobj(m):
            m = m + 1j * rng.standard_normal((b, n, n)).astype(dt)
        h = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n, dtype=dt)
        dev = jax.devices("anvil")[0]
        fns = {"eigh": jnp.linalg.eigh, "lu": jax.scipy.linalg.lu_factor, "qr": jnp.linalg.qr,
               "svd": jnp.linalg.svd, "chol": jnp.linalg.cholesky, "inv": jnp.linalg.inv}
        for name, fn in fns.items():
            r = jax.jit(fn)(jax.device_put(h if name in ("eigh", "chol") else m, dev))
            for k, x in enumerate(jax.tree_util.tree_leaves(r)):
                out[f"{name}_{np.dtype(dt).name}_{b}x{n}_{k}"] = np.asarray(x)
np.savez(sys.argv[1], **out)
"""


def test_batched_results_do_not_depend_on_threads(tmp_path):
    """Batches of small matrices are split over the thread pool (whole matrices per chunk, at
    least 8 each): every result is bit for bit what one thread computes."""
    import subprocess
    import sys
    res = {}
    for t in (1, 2, 3):
        env = dict(os.environ, ANVIL_NUM_THREADS=str(t), JAX_PLATFORMS="anvil")
        f = tmp_path / f"t{t}.npz"
        p = subprocess.run([sys.executable, "-c", _SPLIT_SCRIPT, str(f)], env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        res[t] = np.load(f)
    assert len(res[1].files) > 50
    for t in (2, 3):
        for k in res[1].files:
            a, b = res[1][k], res[t][k]
            assert a.dtype == b.dtype and a.shape == b.shape, k
            assert a.tobytes() == b.tobytes(), f"{k} differs with {t} threads"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 6, 6), (9, 32, 32), (20, 3, 3)])
def test_eigh_jacobi_across_lanes(dtype, shape, monkeypatch):
    """ANVIL_BATCHED_EIGH=1 (read at compile time): batches of 8 or more small real matrices
    run as Jacobi across SIMD lanes; a partial last group (9, 20) included."""
    monkeypatch.setenv("ANVIL_BATCHED_EIGH", "1")
    a = hermitian(shape, dtype)
    for uplo in ("L", "U"):
        w, v = on_anvil(jax.jit(lambda x: jnp.linalg.eigh(x, UPLO=uplo)), a)
        assert_near(w, np.linalg.eigvalsh(a.astype(np.float64)), dtype)
        assert_orthonormal_columns(v, dtype)
        assert_near(a @ v, v * w[..., None, :], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_svd(dtype, shape):
    a = rand(shape, dtype)
    u, s, vh = on_anvil(lambda x: jnp.linalg.svd(x, full_matrices=False), a)
    assert_near(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False), dtype)
    assert_near((u * s[..., None, :]) @ vh, a, dtype)
    assert_orthonormal_columns(u, dtype)
    assert_orthonormal_columns(ct(vh), dtype)
    uf, sf, vhf = on_anvil(jnp.linalg.svd, a)
    assert uf.shape[-1] == shape[-2] and vhf.shape[-2] == shape[-1]
    assert_orthonormal_columns(uf, dtype)
    assert_orthonormal_columns(ct(vhf), dtype)
    assert_near(sf, s, dtype)
    sv = on_anvil(lambda x: jnp.linalg.svd(x, compute_uv=False), a)
    assert_near(sv, s, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_qr_algorithm(dtype):
    a = rand((5, 3), dtype, seed=4)
    u, s, vh = on_anvil(
        lambda x: lax.linalg.svd(x, full_matrices=False, algorithm=lax.linalg.SvdAlgorithm.QR), a)
    assert_near(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False), dtype)
    assert_near((u * s[None, :]) @ vh, a, dtype)


def assert_schur_form(t, dtype, scale):
    """Upper triangular (complex), or quasi-upper triangular with 2x2 blocks that never
    touch (real)."""
    t = np.asarray(t)
    assert_near(np.tril(t, -2 if t.dtype.kind == "f" else -1), 0 * t, dtype, scale=scale)
    if t.dtype.kind == "f":
        sub = np.abs(np.diagonal(t, -1)) > tol(dtype) * scale
        assert not np.any(sub[1:] & sub[:-1]), "two adjacent 2x2 blocks overlap"


def schur_eigenvalues(t):
    """Eigenvalues of a Schur form: its diagonal, or those of its 2x2 blocks."""
    t = np.asarray(t)
    n, w, i = t.shape[-1], [], 0
    while i < n:
        if t.dtype.kind == "f" and i + 1 < n and t[i + 1, i] != 0:
            w.extend(np.linalg.eigvals(t[i:i + 2, i:i + 2]))
            i += 2
        else:
            w.append(t[i, i])
            i += 1
    return np.array(w, dtype=np.complex128)


def assert_same_eigenvalues(w, ref, dtype):
    """Multisets equal within tolerance (greedy nearest matching)."""
    for wb, rb in zip(np.reshape(w, (-1, w.shape[-1])), np.reshape(ref, (-1, ref.shape[-1]))):
        left = list(rb)
        for x in wb:
            k = int(np.argmin([abs(x - y) for y in left]))
            assert abs(x - left[k]) <= tol(dtype) * max(1.0, np.max(np.abs(rb))), (wb, rb)
            left.pop(k)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (2, 4, 4)])
def test_eig(dtype, shape):
    a = rand(shape, dtype, seed=1)
    w, v = on_anvil(jnp.linalg.eig, a)
    assert np.issubdtype(w.dtype, np.complexfloating)
    assert_same_eigenvalues(w, np.linalg.eigvals(a.astype(np.complex128)), dtype)
    assert_near(a @ v, v * w[..., None, :], dtype, scale=max(1.0, np.max(np.abs(a)) * 4))
    assert_near(np.linalg.norm(v, axis=-2), np.ones(v.shape[:-2] + v.shape[-1:]), dtype)
    wv = on_anvil(jnp.linalg.eigvals, a)
    assert_same_eigenvalues(wv, w, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_left_vectors(dtype):
    a = rand((4, 4), dtype, seed=2)
    w, vl, vr = on_anvil(
        lambda x: lax.linalg.eig(x, compute_left_eigenvectors=True,
                                 compute_right_eigenvectors=True), a)
    assert_near(ct(vl) @ a, w[:, None] * ct(vl), dtype, scale=8)
    assert_near(a @ vr, vr * w[None, :], dtype, scale=8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 5, 3)])
def test_lstsq_pinv_rank(dtype, shape):
    a = rand(shape, dtype, seed=5)
    b = rand(shape[:-1] + (2,), dtype, seed=6)
    a128, b128 = a.astype(np.complex128), b.astype(np.complex128)
    if len(shape) == 2:
        x = on_anvil(lambda p, q: jnp.linalg.lstsq(p, q)[0], a, b)
        assert_near(x, np.linalg.lstsq(a128, b128, rcond=None)[0], dtype, scale=10)
    p = on_anvil(jnp.linalg.pinv, a)
    assert_near(p, np.linalg.pinv(a128), dtype, scale=10)
    r = on_anvil(jnp.linalg.matrix_rank, a)
    assert np.array_equal(r, np.linalg.matrix_rank(a128))
    low = a[..., :, :1] * np.ones(shape[-1], dtype)  # rank one
    assert np.all(on_anvil(jnp.linalg.matrix_rank, low) == 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_schur(dtype):
    a = rand((5, 5), dtype, seed=7)
    t, z = on_anvil(jsl.schur, a)
    assert_orthonormal_columns(z, dtype)
    assert_near(z @ t @ ct(z), a, dtype, scale=10)
    # (quasi-)upper triangular: nothing below the first subdiagonal
    assert np.allclose(np.tril(t, -2), 0)
    if np.issubdtype(dtype, np.complexfloating):
        assert np.allclose(np.tril(t, -1), 0)
    assert_same_eigenvalues(np.linalg.eigvals(t.astype(np.complex128)),
                            np.linalg.eigvals(a.astype(np.complex128)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessenberg(dtype):
    a = rand((6, 6), dtype, seed=8)
    h, q = on_anvil(lambda x: jsl.hessenberg(x, calc_q=True), a)
    assert np.allclose(np.tril(h, -2), 0)
    assert_orthonormal_columns(q, dtype)
    assert_near(q @ h @ ct(q), a, dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_reduction(dtype):
    a = hermitian((2, 5, 5), dtype, seed=9)
    arr, d, e, taus = on_anvil(lambda x: lax.linalg.tridiagonal(x, lower=True), a)
    assert d.shape == (2, 5) and e.shape == (2, 4) and taus.shape == (2, 4)
    t = np.zeros((2, 5, 5), np.complex128)
    for k in range(2):
        t[k] = np.diag(d[k]) + np.diag(e[k], -1) + np.diag(e[k], 1)
    # similar matrices: same eigenvalues
    assert_near(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a.astype(np.complex128)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_and_solve(dtype):
    a = rand((3, 5, 5), dtype, seed=10)
    lu, piv, perm = on_anvil(lax.linalg.lu, a)
    eye = np.eye(5)
    l_ = np.tril(lu, -1) + eye
    u_ = np.triu(lu)
    assert_near(l_ @ u_, np.take_along_axis(a, perm[..., :, None], axis=-2), dtype, scale=10)
    b = rand((3, 5, 2), dtype, seed=11)
    x = on_anvil(jnp.linalg.solve, a, b)
    assert_near(a @ x, b, dtype, scale=100)
    assert_near(on_anvil(jnp.linalg.det, a), np.linalg.det(a.astype(np.complex128)), dtype,
                scale=100)


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product_and_ormqr(dtype):
    a = rand((6, 4), dtype, seed=12)
    c = rand((6, 3), dtype, seed=13)
    q_ref, _ = np.linalg.qr(a.astype(np.complex128), mode="complete")

    from jax._src.lax import linalg as lax_linalg  # geqrf is not public

    def f(x, y):
        r, taus = lax_linalg.geqrf(x)
        q = lax.linalg.householder_product(r, taus)
        qhc = lax.linalg.ormqr(r, taus, y, left=True, transpose=True)
        return q, qhc

    q, qhc = on_anvil(f, a, c)
    assert q.shape == (6, 4) and qhc.shape == (6, 3)
    assert_orthonormal_columns(q, dtype)
    # the same reflectors as numpy's QR: equal columns up to a unit factor
    assert_near(np.abs(ct(q) @ q_ref[:, :4]), np.eye(4), dtype)
    # Q^H c: its top rows are q^H c, and a unitary map keeps column norms
    assert_near(qhc[:4], ct(q) @ c, dtype, scale=10)
    assert_near(np.linalg.norm(qhc, axis=0), np.linalg.norm(c, axis=0), dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_solve(dtype):
    n = 6
    dl, d, du = (rand((2, n), dtype, seed=s) for s in (14, 15, 16))
    d = d + 4  # diagonally dominant
    dl[:, 0] = 0
    du[:, -1] = 0
    b = rand((2, n, 3), dtype, seed=17)
    x = on_anvil(lax.linalg.tridiagonal_solve, dl, d, du, b)
    dense = np.stack([np.diag(d[k]) + np.diag(dl[k, 1:], -1) + np.diag(du[k, :-1], 1)
                      for k in range(2)])
    assert_near(x, np.linalg.solve(dense.astype(np.complex128), b), dtype, scale=10)


def test_results_match_xla_cpu():
    """Same LAPACK routine, same input: anvil agrees with JAX's own CPU backend."""
    a = rand((2, 5, 4), np.float64, seed=18)
    fn = jax.jit(lambda x: (jnp.linalg.qr(x), jnp.linalg.svd(x, compute_uv=False),
                            jnp.linalg.eigvalsh(x @ jnp.swapaxes(x, -1, -2))))
    ours = fn(jax.device_put(a, anvil()))
    ref = fn(jax.device_put(a, jax.devices("cpu")[0]))
    for x, y in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-12)


GRADS = {
    "eigvalsh": lambda x: jnp.sum(jnp.linalg.eigvalsh(x + x.T) ** 2),
    "svdvals": lambda x: jnp.sum(jnp.linalg.svd(x, compute_uv=False)),
    "qr": lambda x: jnp.sum(jnp.linalg.qr(x)[1]),
    "det": jnp.linalg.det,
    "eigvals": lambda x: jnp.sum(jnp.abs(jnp.linalg.eigvals(x))),
    "pinv": lambda x: jnp.sum(jnp.linalg.pinv(x)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_xla_cpu(name):
    """Derivative rules call the decompositions again (and more ops around them)."""
    a = rand((4, 4), np.float64, seed=19)
    g = jax.jit(jax.grad(GRADS[name]))
    ours = np.asarray(g(jax.device_put(a, anvil())))
    ref = np.asarray(g(jax.device_put(a, jax.devices("cpu")[0])))
    np.testing.assert_allclose(ours, ref, rtol=1e-8, atol=1e-10)


def test_shared_cpu_rules():
    from anvil_pjrt import _jax_lowerings

    anvil()  # the plugin is initialised (platform "anvil" known) before rules are shared
    names = set(_jax_lowerings.register())
    assert {"eigh", "eig", "svd", "geqrf", "householder_product", "schur", "hessenberg",
            "tridiagonal"} <= names
    assert not names & {"debug_callback", "debug_print", "cholesky", "triangular_solve"}


def test_lowered_to_lapack_custom_calls():
    text = jax.jit(jnp.linalg.eigh).lower(
        jax.device_put(np.eye(3, dtype=np.float32), anvil())).as_text()
    assert "lapack_ssyevd_ffi" in text


# --------------------------------------------------- jax-export cpu artifacts

def lapack_artifacts():
    found = []
    for path in sorted(glob.glob(os.path.join(EXPORT_DIR, "cpu_*.json"))):
        with open(path) as f:
            meta = json.load(f)
        if any(t.startswith("lapack_") for t in meta.get("custom_call_targets", [])):
            found.append(os.path.basename(path)[:-5])
    return found


ARTIFACTS = lapack_artifacts()


def run_artifact(name):
    from jax._src.lib import xla_client as xc

    with open(os.path.join(EXPORT_DIR, name + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(EXPORT_DIR, name + ".mlirbc"), "rb") as f:
        code = f.read()
    dtype = SUFFIX_DTYPE[name.rsplit("__", 1)[1]]
    dev = anvil()
    exe = dev.client.compile_and_load(code, executable_devices=xc.DeviceList((dev,)),
                                      compile_options=xc.CompileOptions())
    inputs = [decode(v, dtype) for v in meta["inputs"]]
    outs = [np.asarray(o) for o in exe.execute([jax.device_put(x, dev) for x in inputs])]
    expected = []
    for o, v in zip(outs, meta["expected_outputs"]):
        expected.append(decode(v, o.dtype))
    assert len(outs) == len(meta["expected_outputs"])
    for o, e in zip(outs, expected):
        assert o.shape == e.shape and o.dtype == e.dtype, (o.shape, o.dtype, e.shape, e.dtype)
    return inputs, outs, expected, dtype


@pytest.mark.skipif(not ARTIFACTS, reason="jax-export conformance data not present")
@pytest.mark.parametrize("name", ARTIFACTS)
def test_jax_export_cpu_artifact(name):
    inputs, outs, expected, dtype = run_artifact(name)
    family = name.split("_lapack_")[0].split("_blas_")[0]
    if family == "cpu_eigh":
        # eigenvectors of repeated eigenvalues are not unique: compare eigenvalues and the
        # matrix both factorizations reconstruct
        v, w = outs
        ve, we = expected
        assert_near(w, we, dtype)
        assert_orthonormal_columns(v, dtype)
        assert_near((v * w[None, :]) @ ct(v), (ve * we[None, :]) @ ct(ve), dtype,
                    scale=np.max(np.abs(we)))
    elif family == "cpu_eig":
        # the module computes eig(arange(n*n).reshape(n, n)) (iota + reshape in its text);
        # the expected eigenpairs satisfy it too, which confirms the operand
        w, vl, vr = outs
        n = w.shape[-1]
        a = np.arange(n * n, dtype=np.float64).reshape(n, n)
        for ww, l_, r_ in ((w, vl, vr), tuple(expected)):
            assert_near(a @ r_, r_ * ww[None, :], dtype, scale=np.max(np.abs(a)) * n)
            assert_near(ct(l_) @ a, ww[:, None] * ct(l_), dtype, scale=np.max(np.abs(a)) * n)
        assert_same_eigenvalues(w, expected[0], dtype)
    elif family == "cpu_schur":
        # A Schur form is not unique: the order of the eigenvalues along T's diagonal and the
        # Schur vectors depend on the path of the QR iterations, which rounding in the BLAS
        # kernels changes (OPENBLAS_CORETYPE=Haswell vs Cooperlake gives two different valid
        # forms of this input). T must be (quasi-)upper triangular with the expected
        # eigenvalues, Z unitary, and Z T Z^H the input.
        (a,) = inputs
        t, z = outs
        scale = max(1.0, np.max(np.abs(a)) * 4)
        assert_schur_form(t, dtype, scale)
        w = schur_eigenvalues(t)
        assert_same_eigenvalues(w[None, :], schur_eigenvalues(expected[0])[None, :], dtype)
        assert_orthonormal_columns(z, dtype)
        assert_near(z @ t @ ct(z), a, dtype, scale=scale)
    else:
        for o, e in zip(outs, expected):
            if o.dtype.kind in "fc":
                assert_near(o, e, dtype)
            else:
                np.testing.assert_array_equal(o, e)
