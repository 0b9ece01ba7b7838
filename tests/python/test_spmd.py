"""Sharded jit on 4 and 8 anvil devices: output and input shardings equal XLA:CPU's on the
same program (JAX's CPU backend forced to the same device count, in the same run), values
equal XLA:CPU's and, for the matmuls, the training step and the gather/scatter, numpy's.

The programs are in spmd_cases.py; each device count runs in a subprocess (the count is
fixed when the backends start)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _run(ndev, shardy=True):
    env = dict(os.environ)
    env["ANVIL_DEVICE_COUNT"] = str(ndev)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={ndev}"
    env["JAX_PLATFORMS"] = "anvil,cpu"
    if not shardy:  # GSPMD form (what JAX before 0.7 sends by default)
        env["JAX_USE_SHARDY_PARTITIONER"] = "0"
    p = subprocess.run([sys.executable, os.path.join(HERE, "spmd_cases.py"), str(ndev)], env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


_cache = {}


def results(ndev, shardy=True):
    if (ndev, shardy) not in _cache:
        _cache[(ndev, shardy)] = _run(ndev, shardy)
    return _cache[(ndev, shardy)]


CASES = ["fsdp_matmul", "tp_mlp", "add_conflict", "sum0", "sum1", "max_all", "transpose",
         "reshape_merge", "reshape_split", "broadcast", "concat", "slice", "pad", "reverse",
         "iota_add", "const_mul", "gather_rows", "gather_sharded_idx", "scatter_add",
         "scatter_set_cols", "sort", "cumsum", "conv", "while_loop", "cond", "softmax",
         "dot_batch", "triangular_solve_batch", "dus_sharded", "shard_alike", "shard_alike_const",
         "reversed_mesh", "unspecified_input", "constraint", "two_meshes", "two_outputs",
         "mlp_train_step"]


@pytest.mark.parametrize("ndev", [4, 8])
@pytest.mark.parametrize("name", CASES)
def test_shardings_and_values_equal_xla_cpu(ndev, name):
    r = results(ndev)
    got, want = r["anvil"][name], r["cpu"][name]
    assert not isinstance(want, str), want
    assert not isinstance(got, str), got
    assert got["out_specs"] == want["out_specs"]
    assert got["in_specs"] == want["in_specs"]
    assert len(got["values"]) == len(want["values"])
    for g, w in zip(got["values"], want["values"]):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=2e-5, atol=2e-5)


# GSPMD form: with_sharding_constraint and shard_alike's @Sharding calls are imported
# (compiler/gspmd.c), so these shardings equal XLA:CPU's too; elsewhere GSPMD's own propagation
# may choose other (equally valid) shardings than anvil's Shardy one, so only values compare.
GSPMD_SAME_SHARDINGS = ["constraint", "two_meshes", "shard_alike", "shard_alike_const",
                        "fsdp_matmul", "sum0", "transpose", "broadcast", "mlp_train_step"]


@pytest.mark.parametrize("name", CASES)
def test_gspmd_form_values_equal_xla_cpu(name):
    r = results(4, shardy=False)
    got, want = r["anvil"][name], r["cpu"][name]
    assert not isinstance(want, str), want
    assert not isinstance(got, str), got
    if name in GSPMD_SAME_SHARDINGS:
        assert got["out_specs"] == want["out_specs"]
        assert got["in_specs"] == want["in_specs"]
    assert len(got["values"]) == len(want["values"])
    for g, w in zip(got["values"], want["values"]):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=2e-5, atol=2e-5)


def _numpy_inputs(ndev, name):
    import spmd_cases
    spmd_cases.NDEV = ndev
    dummy = (None, None, None)
    return [a for a, _, _ in spmd_cases.cases(*dummy)[name][1]]


@pytest.mark.parametrize("ndev", [4, 8])
def test_values_match_numpy(ndev):
    r = results(ndev)["anvil"]
    x, w = _numpy_inputs(ndev, "fsdp_matmul")
    np.testing.assert_allclose(np.array(r["fsdp_matmul"]["values"][0]), np.tanh(x @ w), rtol=1e-5, atol=1e-5)
    x, a, b = _numpy_inputs(ndev, "tp_mlp")
    np.testing.assert_allclose(np.array(r["tp_mlp"]["values"][0]), np.maximum(x @ a, 0) @ b, rtol=1e-4, atol=1e-4)
    t, i = _numpy_inputs(ndev, "gather_rows")
    np.testing.assert_array_equal(np.array(r["gather_rows"]["values"][0]), t[i])
    t, i = _numpy_inputs(ndev, "gather_sharded_idx")
    np.testing.assert_array_equal(np.array(r["gather_sharded_idx"]["values"][0]), t[i])
    t, i, u = _numpy_inputs(ndev, "scatter_add")
    want = t.copy()
    np.add.at(want, i, u)
    np.testing.assert_allclose(np.array(r["scatter_add"]["values"][0]), want, rtol=1e-6, atol=1e-6)
    t, u = _numpy_inputs(ndev, "scatter_set_cols")
    want = t.copy()
    want[:, 1] = u
    np.testing.assert_array_equal(np.array(r["scatter_set_cols"]["values"][0]), want)
    u, = _numpy_inputs(ndev, "sum0")
    np.testing.assert_allclose(np.array(r["sum0"]["values"][0]), u.sum(0), rtol=1e-5, atol=1e-6)
    # the MLP step: loss and updated parameters from numpy's own forward/backward
    w1, b1, w2, b2, xx, yy = _numpy_inputs(ndev, "mlp_train_step")
    pre = xx @ w1 + b1
    h = np.maximum(pre, 0)
    out = h @ w2 + b2
    loss = np.mean((out - yy) ** 2)
    dout = 2 * (out - yy) / out.size
    gw2, gb2 = h.T @ dout, dout.sum(0)
    dh = (dout @ w2.T) * (pre > 0)
    gw1, gb1 = xx.T @ dh, dh.sum(0)
    vals = r["mlp_train_step"]["values"]
    np.testing.assert_allclose(vals[0], loss, rtol=1e-5)
    for got, want in zip(vals[1:], [w1 - 0.1 * gw1, b1 - 0.1 * gb1, w2 - 0.1 * gw2, b2 - 0.1 * gb2]):
        np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ndev", [4, 8])
@pytest.mark.parametrize("name", ["dot_unreduced", "dot_reduced", "rowsum_unreduced",
                                  "sharded_to_unreduced", "replicated_to_unreduced",
                                  "bincount_unreduced"])
def test_reductions_with_unreduced_axes(ndev, name):
    """Partial sums left unreduced over y: every device's shard is its own partial sum, as on
    XLA:CPU (compared shard by shard), and summing them gives numpy's product."""
    r = results(ndev)
    got, want = r["unreduced_anvil"][name], r["unreduced_cpu"][name]
    assert not isinstance(want, str), want
    assert not isinstance(got, str), got
    assert got["spec"] == want["spec"]
    assert [s[0] for s in got["shards"]] == [s[0] for s in want["shards"]]
    for (_, g), (_, w) in zip(got["shards"], want["shards"]):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-5, atol=1e-5)
    import spmd_cases
    spmd_cases.NDEV = ndev
    a = spmd_cases.rng(50, (4, 4 * ndev))
    b = spmd_cases.rng(51, (4 * ndev, 3))
    expect = {"rowsum_unreduced": a.sum(1), "sharded_to_unreduced": a, "replicated_to_unreduced": b,
              "bincount_unreduced": np.bincount((np.abs(a[0]) * 3).astype(np.int32) % 5, minlength=5)
              }.get(name, a @ b)
    np.testing.assert_allclose(np.array(got["full"]), expect, rtol=1e-4, atol=1e-4)


MEMORY = r"""
import json, sys
import numpy as np, jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
ndev = int(sys.argv[1])
devs = jax.devices('anvil')[:ndev]
n = 16 * 1024 * 1024  # 64 MiB of f32
w = np.eye(1024, dtype=np.float32)[:, :8]
f = jax.jit(lambda x, w: (jnp.sin(x) * 2 + x).reshape(-1, 1024) @ w)
mesh = Mesh(np.array(devs), ('d',))
make = jax.jit(lambda: jnp.arange(n, dtype=jnp.float32) / n, out_shardings=NamedSharding(mesh, P('d')))
x = make()
r = f(x, jax.device_put(w, NamedSharding(mesh, P())))
r.block_until_ready()
expect = ((np.sin(np.asarray(x)) * 2 + np.asarray(x)).reshape(-1, 1024))[:, :8]
np.testing.assert_allclose(np.asarray(r), expect, rtol=1e-5, atol=1e-6)
print(json.dumps([d.memory_stats().get('peak_pool_bytes') for d in devs]))
"""


def test_each_device_holds_an_eighth_of_a_sharded_program():
    """An elementwise chain and a matmul over 64 MiB of f32 split 8 ways: each device's peak
    (the client's block accounting: its arguments, temporaries and results) is about 1/8 of
    the same program's peak on one device."""
    peaks = {}
    for ndev in (1, 8):
        env = dict(os.environ, ANVIL_DEVICE_COUNT="8", JAX_PLATFORMS="anvil")
        p = subprocess.run([sys.executable, "-c", MEMORY, str(ndev)], env=env, capture_output=True,
                           text=True, timeout=900)
        assert p.returncode == 0, p.stderr[-3000:]
        peaks[ndev] = json.loads(p.stdout.strip().splitlines()[-1])
    one = peaks[1][0]
    assert one >= 128 * 2**20  # the argument and the chain's result, 64 MiB each
    for per_device in peaks[8]:
        assert per_device <= one / 8 * 1.1, (per_device, one)
        assert per_device >= one / 8 * 0.9, (per_device, one)


ACCUMULATE = r"""
import json
import numpy as np, jax, jax.numpy as jnp
from jax import reshard
from jax.sharding import AxisType, Mesh, PartitionSpec as P

def run(platform):
    mesh = Mesh(np.array(jax.devices(platform)[:2]), ('x',), axis_types=(AxisType.Explicit,))
    def model(ws, xs):
        for w in ws:
            xs = jnp.tanh(xs @ w)
        return jnp.sum(xs)
    @jax.jit
    def step(ws, xs):
        def body(acc, x):  # per-microbatch gradients summed unreduced
            return jax.tree.map(jnp.add, acc, jax.grad(model)(ws, x)), None
        acc = reshard(jax.tree.map(jnp.zeros_like, ws), P(unreduced={'x'}))
        acc, _ = jax.lax.scan(body, acc, xs)
        acc = reshard(acc, P())  # reduced once, after the loop
        return jax.tree.map(lambda w, g: reshard(w, P()) - 0.01 * g, ws, acc)
    with jax.set_mesh(mesh):
        r = np.random.RandomState(0)
        ws = tuple(jax.device_put(r.randn(4, 4).astype(np.float32), P(reduced={'x'})) for _ in range(3))
        xs = jax.device_put(r.randn(3, 4, 4).astype(np.float32), P(None, 'x', None))
        out = [np.asarray(o).tolist() for o in step(ws, xs)]
        return out, step.lower(ws, xs).compile().as_text()

a, text = run('anvil')
c, _ = run('cpu')
print(json.dumps({"anvil": a, "cpu": c, "all_reduces": text.count('stablehlo.all_reduce')}))
"""


def test_gradients_accumulated_unreduced_in_a_loop_are_reduced_once():
    """Gradients summed over microbatches in a scan carry stay unreduced through the loop (the
    while's carry, the add, the transposes of the backward pass): the per-device program reduces
    the gradients after the loop, in one all_reduce of all three (compiler/all_reduce_opt.c
    merges them), instead of all-reducing the carry every trip; values equal XLA:CPU's."""
    env = dict(os.environ, ANVIL_DEVICE_COUNT="2", JAX_PLATFORMS="anvil,cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    p = subprocess.run([sys.executable, "-c", ACCUMULATE], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    for got, want in zip(r["anvil"], r["cpu"]):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)
    assert r["all_reduces"] == 1, r["all_reduces"]
