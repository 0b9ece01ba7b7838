"""Programs from JAX's own test suite (and libraries' suites) that once broke anvil, rebuilt
here so that CI runs them: CI has no copy of JAX's tests (the jax sdist on PyPI holds none).
scripts/test.sh runs this file a second time against the ASan+UBSan build of the plugin.

Each test compares anvil with JAX's CPU backend in the same process."""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

def _run(device, f, *args):
    with jax.default_device(device):
        return jax.tree.map(np.asarray, f(*args))

def assert_close(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)

def test_remat_custom_jvp_scan_second_order(anvil_device, cpu_device):
    """api_test RematTest::test_remat_custom_jvp_policy: the JVP of a scan of a remat'd
    function with scalar dots (jnp.dot of scalars) in nested calls. The loop program copied a
    scalar's dims through NULL at compile time (SIGSEGV; also optax's contrib tests)."""

    @jax.custom_jvp
    def sin(x):
        return jnp.sin(x)

    sin.defjvp(lambda p, t: (sin(p[0]), jnp.cos(p[0]) * t[0]))

    @partial(jax.remat, policy=jax.checkpoint_policies.checkpoint_dots)
    def f(x):
        for _ in range(3):
            x = jnp.dot(x, x, precision=lax.Precision.HIGHEST)
            x = sin(x * 1e-3)
        return x

    def g(x):
        return lax.scan(lambda x, _: (f(x), None), x, None, length=2)[0]

    def second_order(x, t):
        return jax.jvp(jax.grad(g), (x,), (t,))

    x, t = np.float32(3.0), np.float32(1.0)
    got = _run(anvil_device, jax.jit(second_order), x, t)
    want = _run(cpu_device, jax.jit(second_order), x, t)
    assert_close(got, want)
    got = _run(anvil_device, jax.jit(lambda x: jax.jvp(g, (x,), (x,))), np.float32(0.7))
    want = _run(cpu_device, jax.jit(lambda x: jax.jvp(g, (x,), (x,))), np.float32(0.7))
    assert_close(got, want)


def test_control_deps_between_values_and_futures(anvil_device, cpu_device):
    """control_deps_test: jax.experimental.control_deps.schedule adds custom_call @control_dep
    between values, here also a collective's future. JAX serialized it for anvil's StableHLO
    1.16.3, which has no future operands on custom_call ('Failed to serialize StableHLO to
    plugin version'), and @control_dep answered UNIMPLEMENTED. anvil reads 1.17.0 now and
    drops the hint (steps run in program order)."""
    from jax.experimental.control_deps import schedule
    from jax._src.lax import parallel

    def f(x, y):
        a = jnp.sin(x @ x)
        b = jnp.cos(y @ y)
        schedule([b, a])
        return a + b

    x = np.linspace(0, 1, 49, dtype=np.float32).reshape(7, 7)
    assert_close(_run(anvil_device, jax.jit(f), x, x + 1), _run(cpu_device, jax.jit(f), x, x + 1))

    def g(w):
        started = parallel.all_gather_start(w, "i", tiled=True)
        y = w * 3
        schedule([started.x, y])
        return started.done() + y

    def sharded(device, x):
        mesh = jax.make_mesh((1,), ("i",), axis_types=(jax.sharding.AxisType.Explicit,),
                             devices=[device])
        with jax.set_mesh(mesh):
            f = jax.jit(jax.shard_map(g, out_specs=jax.P("i"), check_vma=False))
            return np.asarray(f(jax.device_put(x, jax.NamedSharding(mesh, jax.P("i")))))

    assert_close(sharded(anvil_device, x), sharded(cpu_device, x))


def test_batched_gradient_of_odeint(anvil_device, cpu_device):
    """ode_test test_grad_closure_with_vmap / test_odeint_vmap_grad: the vmapped gradient of an
    odeint. Fusion merged a slice -> reshape -> broadcast into one box read after the slice's
    operand had been released (SIGSEGV: a read of freed storage)."""
    from jax.experimental.ode import odeint

    @jax.jit
    def experiment(x):
        history = odeint(lambda y, t: -x * y, 1., np.arange(0, 10, 0.1))
        return history[-1]

    f = jax.jit(jax.vmap(jax.value_and_grad(experiment)))
    t = np.arange(0., 1., 0.01)
    assert_close(_run(anvil_device, f, t), _run(cpu_device, f, t), rtol=1e-4, atol=1e-5)


def test_gaussian_kde_integrate_box(anvil_device, cpu_device):
    """scipy_stats_test testKdeIntegrateBox1d: jax.scipy.stats.gaussian_kde(...).integrate_box_1d.
    Row fusion recorded a fused step's input once per register reading it, past the room it
    had made for each input once: a heap overflow at compile time (the process aborted with
    'corrupted size vs. prev_size')."""
    from jax.scipy import stats

    def f(dataset, weights):
        kde = stats.gaussian_kde(dataset, weights=jnp.abs(weights))
        return kde.integrate_box_1d(-0.5, 1.5)

    r = np.random.RandomState(0)
    for shape in [(15,), (12,)]:
        for dtype in (np.float32,):
            data = r.standard_normal(shape).astype(dtype)
            w = r.standard_normal(shape[-1:]).astype(dtype)
            got, want = _run(anvil_device, jax.jit(f), data, w), _run(cpu_device, jax.jit(f), data, w)
            assert_close(np.float32(got), np.float32(want), rtol=2e-3, atol=1e-3)

def test_insert_rows_of_four_bytes(anvil_device, cpu_device):
    """lax_numpy_test testInsertInteger0 / testInsertSlice0: jnp.insert on a (3, 4) uint8
    array along axis -2 scatters whole rows of four bytes. The scatter's path for four bytes
    per position took a row's element offset as 32-bit elements: rows after the first went
    past the 16-byte result (zeros came back, and memory beyond it was overwritten)."""
    x = np.array([[1, 2, 1, 5], [1, 3, 1, 4], [2, 2, 2, 2]], np.uint8)
    for dt in (np.uint8, np.int8, np.bool_, np.int16):
        xx = x.astype(dt) if dt != np.int16 else x[:, :2].astype(dt)
        for i in (0, 1, 3, -1):
            f = jax.jit(lambda x, i: jnp.insert(x, i, x[0], axis=-2))
            want = np.insert(xx, i, xx[0], axis=-2)
            np.testing.assert_array_equal(_run(anvil_device, f, xx, np.int32(i)), want)
            np.testing.assert_array_equal(_run(cpu_device, f, xx, np.int32(i)), want)
