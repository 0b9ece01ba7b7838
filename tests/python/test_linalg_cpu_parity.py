"""Linear algebra where JAX's tests compare anvil with scipy: anvil gives what JAX's CPU backend
gives. tridiagonal_solve(perturb_singular=True) runs (it was refused), Schur forms of large
matrices (not unique: they depend on the LAPACK build) equal XLA:CPU's because anvil calls the
same LAPACK routines (scipy's, as jaxlib does), and results do not depend on what else runs
(sqrtm eager == jit, the first run of a program == the next ones)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from jax import lax
from jax.scipy.linalg import schur, sqrtm


def on(platform):
    return jax.default_device(jax.devices(platform)[0])


def both(fn, *args):
    out = []
    for p in ("anvil", "cpu"):
        with on(p):
            out.append(jax.tree_util.tree_map(np.asarray, fn(*args)))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape,k", [((6,), 1), ((3, 5), 2), ((1,), 3)])
def test_tridiagonal_solve_perturbed_matches_cpu(dtype, shape, k):
    rng = np.random.default_rng(0)
    d = (1 + rng.random(shape)).astype(dtype)
    dl, du = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    b = rng.standard_normal(shape + (k,)).astype(dtype)
    for perturb in (True, False):
        f = jax.jit(lambda *a: lax.linalg.tridiagonal_solve(*a, perturb_singular=perturb))
        anvil, cpu = both(f, dl, d, du, b)
        tol = 1e-5 if np.finfo(dtype).bits <= 32 or dtype == np.complex64 else 1e-12
        np.testing.assert_allclose(anvil, cpu, rtol=tol, atol=tol)


def test_tridiagonal_solve_perturbed_singular_and_pivoting():
    z = np.zeros(3, np.float32)
    anvil, cpu = both(lambda: lax.linalg.tridiagonal_solve(
        z, z, z, np.ones((3, 1), np.float32), perturb_singular=True))
    assert np.all(np.isfinite(anvil)) and np.all(np.abs(anvil) > 1e6)
    np.testing.assert_array_equal(anvil, cpu)
    dl = np.array([0.0, 2.0, -2.0, 3.0], np.float32)
    d = np.array([1.0, 4.0, 1.0, -1.0], np.float32)
    du = np.array([2.0, -1.0, 1.0, 0.0], np.float32)
    b = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    for perturb in (True, False):
        anvil, cpu = both(lambda: lax.linalg.tridiagonal_solve(dl, d, du, b,
                                                               perturb_singular=perturb))
        np.testing.assert_allclose(anvil.ravel(), [8.0, -3.5, 0.0, -4.0], atol=1e-6)
        np.testing.assert_allclose(anvil, cpu, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64])
def test_schur_of_a_large_matrix_equals_cpu_and_scipy(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((100, 100))
    if np.iscomplexobj(dtype(0)):
        a = a + 1j * rng.standard_normal((100, 100))
    a = a.astype(dtype)
    (t_anvil, z_anvil), (t_cpu, z_cpu) = both(schur, a)
    np.testing.assert_array_equal(t_anvil, t_cpu)
    np.testing.assert_array_equal(z_anvil, z_cpu)
    t_ref, _ = scipy.linalg.schur(a)
    tol = 1e-4 if np.finfo(dtype).bits <= 32 or dtype == np.complex64 else 1e-10
    np.testing.assert_allclose(t_anvil, t_ref, rtol=tol, atol=tol)


def test_sqrtm_is_the_same_eager_jitted_and_on_a_first_run():
    rng = np.random.default_rng(2)
    arg = (rng.standard_normal((100, 100)) + 1j * rng.standard_normal((100, 100))).astype(
        np.complex64)
    mat = arg @ arg.T
    with on("anvil"):
        eager = [np.asarray(sqrtm(mat)) for _ in range(2)]
        f = jax.jit(lambda m: sqrtm(m))
        first, second = np.asarray(f(mat)), np.asarray(f(mat))
    np.testing.assert_array_equal(eager[0], eager[1])
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, eager[0])
    with on("cpu"):
        cpu = np.asarray(jax.jit(lambda m: sqrtm(m))(mat))
    np.testing.assert_allclose(first, cpu, rtol=1e-4, atol=1e-4)
