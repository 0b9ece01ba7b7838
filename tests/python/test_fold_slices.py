"""Slices moved through concatenates and elementwise ops (src/compiler/fold_slices.c).

Each program is run on anvil and on XLA:CPU in the same process, and the results must agree;
the ODE step must also leave its loop with one concatenate (the new state) instead of one per
Runge-Kutta stage, which ANVIL_DUMP_DIR's dump of the compiled program shows.
"""

import os
import subprocess
import sys

os.environ.setdefault("JAX_PLATFORMS", "anvil,cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from science import ode_ensemble  # noqa: E402

rng = np.random.default_rng(7)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def rk4(y0, p):
    # bench/science.py's Lorenz-63 ensemble, 20 RK4 steps in a scan
    return ode_ensemble(y0, p, steps=20)


CASES = {
    # the pattern the pass is for: stacked components sliced out again
    "rk4": (rk4, (arr(3, 2048), np.abs(arr(3, 2048)) + 1)),
    # slices that overlap: the elementwise op must not move (it would run twice)
    "overlapping_slices": (lambda a, b: ((a * b)[0:3], (a * b)[1:4]), (arr(4, 2048), arr(4, 2048))),
    # strided and partial slices of an elementwise result
    "strided_slice": (lambda a, b: jnp.tanh(a + b)[::2, 3:1500:3], (arr(8, 2048), arr(8, 2048))),
    # a slice not on a concatenate operand's boundary
    "slice_across_operands": (lambda a, b: jnp.concatenate([a, b])[1:3], (arr(2, 2048), arr(2, 2048))),
    # compare and convert, a scalar operand
    "compare_convert": (lambda a, b: ((a > b).astype(jnp.float32) * 3.0)[1:5], (arr(6, 2048), arr(6, 2048))),
    # the elementwise result also returned whole: it must stay
    "also_returned": (lambda a, b: (a * b, (a * b)[0:2]), (arr(4, 2048), arr(4, 2048))),
    # select with a broadcast predicate, sliced and squeezed
    "select_squeeze": (lambda a, b: jnp.where(a > 0, a, b)[2], (arr(4, 2048), arr(4, 2048))),
    # elementwise over concatenates split alike, and over one that is split differently
    "concat_alike": (lambda a, b, c, d, e: jnp.concatenate([a, b]) * jnp.concatenate([c, d]) + e,
                     (arr(1, 2048), arr(2, 2048), arr(1, 2048), arr(2, 2048), arr(3, 2048))),
    "concat_unlike": (lambda a, b, c, d: jnp.concatenate([a, b]) * jnp.concatenate([c, d]),
                      (arr(1, 2048), arr(2, 2048), arr(2, 2048), arr(1, 2048))),
    # a concatenate read twice by the same op
    "concat_squared": (lambda a, b: jnp.square(jnp.concatenate([a, b])) - jnp.concatenate([a, b]) * 2,
                       (arr(2, 2048), arr(2, 2048))),
    # a scalar op reshaped to an array: its operands are reshaped with it (PyTorch/XLA and
    # TensorFlow write these); a select keeps its scalar predicate
    "scalar_op_reshaped": (lambda a, b: ((a * b + 1.0).astype(jnp.int32) | 3).reshape(1, 1),
                           (np.float32(1.5), np.float32(2.0))),
    "scalar_predicate_select": (lambda p, a, b: lax.select(jnp.broadcast_to(p, (4, 2048)), a, b)[1:3],
                                (np.bool_(True), arr(4, 2048), arr(4, 2048))),
    # last-axis slices (LSTM gates) of a sum of products
    "gates": (lambda x, w, h, u: [jax.nn.sigmoid(g) for g in jnp.split(x @ w + h @ u, 4, axis=1)],
              (arr(16, 32), arr(32, 256), arr(16, 64), arr(64, 256))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_results_as_xla(name):
    fn, args = CASES[name]
    out = {}
    for platform in ("anvil", "cpu"):
        dev = jax.devices(platform)[0]
        out[platform] = jax.tree_util.tree_leaves(jax.jit(fn)(*[jax.device_put(a, dev) for a in args]))
    assert len(out["anvil"]) == len(out["cpu"])
    for got, want in zip(out["anvil"], out["cpu"]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)


PROGRAM = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
import test_fold_slices as t
import jax
print(np.asarray(jax.jit(t.rk4)(*t.CASES["rk4"][1])).shape)
"""


def test_rk4_loop_keeps_one_concatenate(tmp_path):
    e = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    e.update(JAX_PLATFORMS="anvil", ANVIL_DUMP_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path), os.path.dirname(__file__)],
                       env=e, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    dumps = [f for f in os.listdir(tmp_path) if f.startswith("jit_rk4") and f.endswith(".mlir")]
    assert len(dumps) == 1, os.listdir(tmp_path)
    text = (tmp_path / dumps[0]).read_text()
    # JAX writes four stacks per step (one per stage); the new state is the only one left
    assert text.count("stablehlo.concatenate") == 1, text.count("stablehlo.concatenate")
