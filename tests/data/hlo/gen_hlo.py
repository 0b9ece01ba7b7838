"""Regenerates the HloModuleProto test inputs in this folder with JAX (CPU).

  JAX_PLATFORMS=cpu /work/main/.venv/bin/python tests/data/hlo/gen_hlo.py

Each program is written as NAME.pb (serialized xla.HloModuleProto, what PyTorch/XLA sends
with PJRT format "hlo") and NAME.txt (the HLO text, for reading the expected facts).
"""
import os

# Four host devices so the collectives program can be lowered.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = os.path.dirname(os.path.abspath(__file__))
f32 = jnp.float32


def add(x, y):
    return x + y


def matmul(x, y):
    return x @ y


def reduce_sum(x):
    return jnp.sum(x, axis=1)


def while_loop(x):
    return lax.fori_loop(0, 5, lambda i, v: v * 2.0 + i.astype(f32), x)


def cond(p, x):
    return lax.cond(p, lambda v: v + 1.0, lambda v: v - 1.0, x)


def switch(i, x):
    return lax.switch(i, [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: -v], x)


def gather(x, idx):
    return x[idx]


def conv(x, w):
    return lax.conv_general_dilated(x, w, window_strides=(2, 1), padding=((1, 1), (0, 2)),
                                    rhs_dilation=(1, 2))


def tuple_out(x, y):
    return x + y, x * y, jnp.max(x)


def constants(x):
    # Literals of several element types (not foldable away: each meets the input).
    a = x + jnp.array([1.5, -2.0, 3.25], f32)
    b = x.astype(jnp.int32) * jnp.array([-3, 7, 100000], jnp.int32)
    c = x.astype(jnp.bfloat16) + jnp.array([0.5, 1.0, -2.0], jnp.bfloat16)
    d = x.astype(jnp.int8) + jnp.array([-1, 2, -128], jnp.int8)
    e = (x > 1.0) & jnp.array([True, False, True])
    return a, b, c, d, e


def scatter_add(x, idx, upd):
    return x.at[idx].add(upd)


def sort2(x):
    return jnp.sort(x, axis=-1)


def reduce_window(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 2), ((0, 1), (1, 0)))


def elementwise(x, y, i):
    return (lax.atan2(x, y), lax.pow(x, y), lax.rem(x, y), lax.erf(x), lax.expm1(x),
            lax.log1p(x), lax.cbrt(x), lax.is_finite(x), lax.round(x), lax.sign(x),
            lax.clamp(0.0, x, 1.0), lax.bitcast_convert_type(x, jnp.int32),
            lax.population_count(i), lax.shift_left(i, 2), lax.shift_right_logical(i, 1),
            lax.shift_right_arithmetic(i, 1), lax.bitwise_not(i), lax.bitwise_xor(i, 3),
            lax.complex(x, y), lax.real(lax.complex(x, y)), lax.reduce_precision(x, 5, 10))


def shapes(x, i):
    a = lax.dynamic_slice(x, (i, 0), (2, 3))
    b = lax.dynamic_update_slice(x, jnp.zeros((1, 3), f32), (i, 1))
    c = lax.pad(x, 0.0, [(1, 2, 1), (0, -1, 0)])
    d = jnp.concatenate([x, x], axis=1)
    e = lax.slice(x, (0, 1), (4, 5), (2, 2))
    g = lax.rev(x, (0,))
    h = jnp.transpose(x) + lax.broadcasted_iota(f32, (6, 4), 1)
    return a, b, c, d, e, g, h


def reductions(x, w):
    am = jnp.argmax(x, axis=1)
    cs = lax.cumsum(x, axis=0)
    pool_grad = jax.grad(lambda v: lax.reduce_window(v, -jnp.inf, lax.max, (2, 2), (2, 2),
                                                     "VALID").sum())(x)
    bd = lax.dot_general(w, w, (((2,), (1,)), ((0,), (0,))))
    ks, vs = lax.sort((x, x * 2.0), dimension=1, num_keys=1)
    tv, ti = lax.top_k(x, 2)
    return am, cs, pool_grad, bd, ks, vs, tv, ti, lax.optimization_barrier(x)


def rng(key, a):
    st, bits = lax.rng_bit_generator(key, (3, 2), dtype=jnp.uint32)
    u = lax.rng_uniform(0.0, a, (4,))
    return st, bits, u


def linalg_fft(m, z):
    return jnp.linalg.cholesky(m), jnp.fft.fft(z), lax.linalg.triangular_solve(
        m, m, left_side=True, lower=True)


def collectives(x):
    from jax.experimental.shard_map import shard_map
    from jax.sharding import Mesh, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:4]), ("i",))

    def body(v):
        b = lax.all_gather(v, "i", axis=0, tiled=True)
        return (lax.psum(v, "i"), b, lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                lax.psum_scatter(b, "i", scatter_dimension=0, tiled=True),
                lax.all_to_all(b, "i", 0, 0, tiled=True))

    return shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=(P("i"),) * 5)(x)


def donate(x, y):
    return y * 2.0, x + y


DONATED = {"donate": (0,)}  # donate_argnums per program

PROGRAMS = {
    "add": (add, [np.ones((2, 3), np.float32)] * 2),
    "matmul": (matmul, [np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)]),
    "reduce": (reduce_sum, [np.ones((2, 3), np.float32)]),
    "while": (while_loop, [np.ones((4,), np.float32)]),
    "cond": (cond, [np.bool_(True), np.ones((3,), np.float32)]),
    "switch": (switch, [np.int32(1), np.ones((3,), np.float32)]),
    "gather": (gather, [np.ones((5, 3), np.float32), np.array([0, 4], np.int32)]),
    "conv": (conv, [np.ones((1, 2, 6, 5), np.float32), np.ones((3, 2, 3, 2), np.float32)]),
    "tuple_out": (tuple_out, [np.ones((2, 2), np.float32)] * 2),
    "constants": (constants, [np.ones((3,), np.float32)]),
    "scatter": (scatter_add, [np.ones((5,), np.float32), np.array([1, 3], np.int32),
                              np.ones((2,), np.float32)]),
    "sort": (sort2, [np.ones((2, 4), np.float32)]),
    "reduce_window": (reduce_window, [np.ones((4, 6), np.float32)]),
    "elementwise": (elementwise, [np.ones((3,), np.float32), np.ones((3,), np.float32),
                                  np.ones((3,), np.int32)]),
    "shapes": (shapes, [np.ones((4, 6), np.float32), np.int32(1)]),
    "reductions": (reductions, [np.ones((4, 6), np.float32), np.ones((2, 3, 3), np.float32)]),
    "rng": (rng, [np.zeros((4,), np.uint32), np.float32(2.0)]),
    "linalg_fft": (linalg_fft, [np.eye(3, dtype=np.float32), np.ones((4,), np.complex64)]),
    "collectives": (collectives, [np.ones((8,), np.float32)]),
    "donate": (donate, [np.ones((3,), np.float32)] * 2),
}


def main():
    for name, (fn, args) in PROGRAMS.items():
        comp = jax.jit(fn, donate_argnums=DONATED.get(name, ())).lower(*args).compiler_ir("hlo")
        with open(os.path.join(OUT, name + ".pb"), "wb") as f:
            f.write(comp.as_serialized_hlo_module_proto())
        with open(os.path.join(OUT, name + ".txt"), "w") as f:
            f.write(comp.as_hlo_text())
        print(name)


if __name__ == "__main__":
    main()
