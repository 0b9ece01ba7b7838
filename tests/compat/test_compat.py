"""anvil against one JAX release: what a new user tries first, on every supported JAX.

scripts/compat.sh runs this file in one venv per JAX version (0.4.35 ... 0.10.2) with the anvil
wheel installed; it must not need features of a newer JAX than the one it runs on (tests/python
may). Results are compared with numpy or with JAX's own CPU backend in the same process.
Environment (set here unless given): JAX_PLATFORMS=anvil,cpu, ANVIL_DEVICE_COUNT=4.
ANVIL_COMPAT_REPORT=FILE makes test_caller_struct_sizes write what it measured as JSON.
"""

import importlib.metadata
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "anvil,cpu")
os.environ.setdefault("ANVIL_DEVICE_COUNT", "4")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

HISTORY = Path(__file__).resolve().parents[2] / "include" / "anvil" / "pjrt_c_api_history.h"
NDEV = int(os.environ["ANVIL_DEVICE_COUNT"])


def cpu():
    return jax.devices("cpu")[0]


def on_cpu(f, *args):
    """f(*args) on JAX's own CPU backend (the reference)."""
    return np.asarray(jax.jit(f)(*[jax.device_put(a, cpu()) for a in args]))


def shard_map_fn():
    """shard_map: jax.shard_map in new releases, jax.experimental.shard_map before."""
    fn = getattr(jax, "shard_map", None)
    if fn is None:
        from jax.experimental.shard_map import shard_map as fn
    return fn


def test_platform_is_anvil():
    assert jax.default_backend() == "anvil"
    assert jax.device_count() == NDEV
    assert all(d.platform == "anvil" for d in jax.devices())


# ------------------------------------------------------------------ the seeds' checks


def test_seed_add():
    out = jnp.add(1, 1)
    assert int(out) == 2
    assert out.devices() == {jax.devices()[0]}


def test_seed_jit():
    assert float(jax.jit(lambda x: x * 2)(1.0)) == 2.0


def test_seed_pmap_psum():
    arr = jnp.arange(jax.device_count())
    out = jax.pmap(lambda x: x + jax.lax.psum(x, "i"), axis_name="i")(arr)
    # 4 devices: [6 7 8 9] (psum = 0+1+2+3 = 6)
    assert np.asarray(out).tolist() == [6 + i for i in range(NDEV)]


# ------------------------------------------------------------------ single device


def test_grad():
    x = np.linspace(-2, 2, 7).astype(np.float32)
    g = jax.grad(lambda v: jnp.sum(jnp.sin(v) * v**2))(x)
    np.testing.assert_allclose(g, np.cos(x) * x**2 + 2 * x * np.sin(x), rtol=1e-5, atol=1e-6)


def test_fori_loop():
    def f(x):
        return jax.lax.fori_loop(0, 10, lambda i, v: v * 1.5 + i, x)

    x = np.arange(4, dtype=np.float32)
    want = x.copy()
    for i in range(10):
        want = want * 1.5 + i
    np.testing.assert_allclose(jax.jit(f)(x), want, rtol=1e-6)


def test_scan():
    def f(xs):
        return jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)

    xs = np.arange(1, 9, dtype=np.float32)
    carry, ys = jax.jit(f)(xs)
    assert float(carry) == float(xs.sum())
    np.testing.assert_allclose(ys, np.concatenate([[0], np.cumsum(xs)[:-1]]) * xs)


def test_while_loop():
    out = jax.jit(lambda n: jax.lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 2),
                                               (0, 1)))(10)
    assert int(out[1]) == 1024


def test_linalg_solve():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6)).astype(np.float32) + 6 * np.eye(6, dtype=np.float32)
    b = rng.standard_normal((6, 2)).astype(np.float32)
    np.testing.assert_allclose(jnp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-4,
                               atol=1e-5)


def test_linalg_decompositions():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((5, 5)).astype(np.float32)
    spd = m @ m.T + 5 * np.eye(5, dtype=np.float32)
    np.testing.assert_allclose(jnp.linalg.cholesky(spd), np.linalg.cholesky(spd), rtol=1e-4,
                               atol=1e-5)
    w = jnp.linalg.eigh(spd)[0]
    np.testing.assert_allclose(w, np.linalg.eigvalsh(spd), rtol=1e-4)
    s = jnp.linalg.svd(m, compute_uv=False)
    np.testing.assert_allclose(s, np.linalg.svd(m, compute_uv=False), rtol=1e-4)


def test_random_matches_cpu():
    def f(key):
        k1, k2 = jax.random.split(key)
        return jax.random.normal(k1, (256,)) + jax.random.uniform(k2, (256,))

    key = jax.random.PRNGKey(42)
    np.testing.assert_allclose(jax.jit(f)(key), on_cpu(f, key), rtol=1e-6, atol=1e-6)


def test_matmul_softmax_matches_cpu():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = rng.standard_normal((32, 8)).astype(np.float32)

    def f(x, w):
        return jax.nn.softmax(jnp.tanh(x @ w), axis=-1)

    np.testing.assert_allclose(jax.jit(f)(x, w), on_cpu(f, x, w), rtol=1e-5, atol=1e-6)


def test_donation():
    f = jax.jit(lambda x: x * 2 + 1, donate_argnums=0)
    x = jnp.arange(1024, dtype=jnp.float32)
    y = f(x)
    np.testing.assert_array_equal(y, np.arange(1024, dtype=np.float32) * 2 + 1)
    assert x.is_deleted()


def test_executable_serialization():
    from jax.experimental import serialize_executable as se

    def f(x, y):
        return jnp.sin(x) @ y

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.ones((4, 2), np.float32)
    compiled = jax.jit(f).lower(x, y).compile()
    payload, in_tree, out_tree = se.serialize(compiled)
    # Where it can, JAX loads onto every device unless told (then fails to run a one-device
    # executable with several devices, on its own CPU backend too).
    kwargs = {}
    if "execution_devices" in inspect.signature(se.deserialize_and_load).parameters:
        kwargs["execution_devices"] = [jax.devices()[0]]
    loaded = se.deserialize_and_load(payload, in_tree, out_tree, **kwargs)
    np.testing.assert_allclose(loaded(x, y), np.sin(x) @ y, rtol=1e-5)


# ------------------------------------------------------------------ several devices


def mesh_1d():
    return Mesh(np.array(jax.devices()), ("x",))


def test_sharded_jit():
    mesh = mesh_1d()
    sharding = NamedSharding(mesh, P("x"))
    x = np.arange(8 * NDEV, dtype=np.float32).reshape(2 * NDEV, 4)
    xs = jax.device_put(x, sharding)

    @jax.jit
    def f(v):
        return jnp.sin(v) * 2 + v.sum()

    out = f(xs)
    np.testing.assert_allclose(out, np.sin(x) * 2 + x.sum(), rtol=1e-5)
    assert len(out.sharding.device_set) == NDEV
    assert out.sharding.is_equivalent_to(sharding, out.ndim)


def test_sharded_jit_matmul_explicit_shardings():
    mesh = mesh_1d()
    rows = NamedSharding(mesh, P("x", None))
    rep = NamedSharding(mesh, P())
    a = np.arange(4 * NDEV * 3, dtype=np.float32).reshape(4 * NDEV, 3) / 10
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    f = jax.jit(lambda a, b: a @ b, in_shardings=(rows, rep), out_shardings=rows)
    out = f(a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    assert out.sharding.is_equivalent_to(rows, 2)


def test_shard_map_psum():
    mesh = mesh_1d()
    x = np.arange(4 * NDEV, dtype=np.float32)
    f = shard_map_fn()(lambda v: jax.lax.psum(v, "x"), mesh=mesh, in_specs=P("x"),
                       out_specs=P())
    out = jax.jit(f)(x)
    np.testing.assert_allclose(out, x.reshape(NDEV, 4).sum(0))


def test_two_axis_mesh():
    """Shardings over a 2x2 mesh, one dimension per axis and an axis reversed: GSPMD-era JAX
    writes them with transposed device orders, Shardy-era JAX with axis names."""
    if NDEV != 4:
        pytest.skip("needs 4 devices")
    mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    xs = jax.device_put(x, NamedSharding(mesh, P("b", "a")))
    out = jax.jit(lambda v: v * 3 - 1, out_shardings=NamedSharding(mesh, P(None, ("a", "b"))))(xs)
    np.testing.assert_allclose(out, x * 3 - 1)
    assert out.sharding.is_equivalent_to(NamedSharding(mesh, P(None, ("a", "b"))), 2)
    f = shard_map_fn()(lambda v: jax.lax.psum(v, "a") * 2, mesh=mesh, in_specs=P("a", "b"),
                       out_specs=P(None, "b"))
    y = jax.jit(f)(x)
    want = (x[:2] + x[2:]) * 2
    np.testing.assert_allclose(y, want)


def test_pmap_collectives():
    x = np.arange(NDEV * 3, dtype=np.float32).reshape(NDEV, 3)
    out = jax.pmap(lambda v: (jax.lax.pmean(v, "i"), jax.lax.all_gather(v, "i")),
                   axis_name="i")(x)
    np.testing.assert_allclose(out[0], np.broadcast_to(x.mean(0), x.shape), rtol=1e-6)
    np.testing.assert_allclose(out[1], np.broadcast_to(x, (NDEV,) + x.shape))


# ------------------------------------------------------------------ what the caller passes


def _history():
    """(size history rows, {caller description: minor}) from anvil's generated header."""
    text = HISTORY.read_text()
    rows = [(t, int(m), int(d)) for t, m, d, _ in re.findall(
        r"X\((\w+), (\d+), (\d+), (\d+)\)", text.split("ANVIL_PJRT_SIZE_HISTORY(X)")[1]
        .split("#define")[0])]
    callers = {desc: int(m) for _, m, desc in re.findall(
        r'X\((\w+), (\d+), "([^"]+)"\)', text.split("ANVIL_PJRT_CALLERS(X)")[1]
        .split("#define")[0])}
    return rows, callers


def _minors_with(rows, type_name, size, newest=200):
    """The minors at which `type_name` is declared `size` bytes long."""
    mine = sorted((m, d) for t, m, d in rows if t == type_name)
    out = set()
    for i, (m, d) in enumerate(mine):
        if d == size:
            end = mine[i + 1][0] if i + 1 < len(mine) else newest
            out.update(range(m, end))
    return out


def test_caller_struct_sizes():
    """Every struct_size this jaxlib passes is what the history says its API minor declares."""
    if not HISTORY.exists():
        pytest.skip("needs anvil's source tree (include/anvil/pjrt_c_api_history.h)")
    rows, callers = _history()
    probe = ("import jax, jax.numpy as jnp\n"
             "f = jax.jit(lambda x: x * 2 + 1, donate_argnums=0)\n"
             "print(float(f(jnp.arange(4.0)).sum()))\n")
    env = dict(os.environ, ANVIL_TRACE="1", JAX_PLATFORMS="anvil")
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    sizes = dict(re.findall(r"anvil: > (PJRT_\w+)\(size=(\d+)", run.stderr))
    assert "PJRT_Client_Create" in sizes and "PJRT_LoadedExecutable_Execute" in sizes
    minors = set(range(0, 200))
    for fn, size in sizes.items():
        known = _minors_with(rows, fn + "_Args", int(size))
        if any(t == fn + "_Args" for t, _, _ in rows):
            minors &= known
    jaxlib = importlib.metadata.version("jaxlib")
    expected = callers.get("jaxlib " + jaxlib)
    report = {"jax": jax.__version__, "jaxlib": jaxlib, "caller_api": expected,
              "measured_api": [min(minors), max(minors)] if minors else None,
              "sizes": {k: int(v) for k, v in sorted(sizes.items())}}
    path = os.environ.get("ANVIL_COMPAT_REPORT")
    if path:
        Path(path).write_text(json.dumps(report, indent=1))
    assert minors, f"no API minor declares all of these sizes: {sizes}"
    if expected is not None:
        assert expected in minors, f"jaxlib {jaxlib} should speak 0.{expected}: {report}"
