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


def _run(ndev):
    env = dict(os.environ)
    env["ANVIL_DEVICE_COUNT"] = str(ndev)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={ndev}"
    env["JAX_PLATFORMS"] = "anvil,cpu"
    p = subprocess.run([sys.executable, os.path.join(HERE, "spmd_cases.py"), str(ndev)], env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


_cache = {}


def results(ndev):
    if ndev not in _cache:
        _cache[ndev] = _run(ndev)
    return _cache[ndev]


CASES = ["fsdp_matmul", "tp_mlp", "add_conflict", "sum0", "sum1", "max_all", "transpose",
         "reshape_merge", "reshape_split", "broadcast", "concat", "slice", "pad", "reverse",
         "iota_add", "const_mul", "gather_rows", "gather_sharded_idx", "scatter_add",
         "scatter_set_cols", "sort", "cumsum", "conv", "while_loop", "cond", "softmax",
         "dot_batch", "reversed_mesh", "unspecified_input", "constraint", "two_outputs",
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
