"""Donation in sharded jits matches XLA:CPU. JAX marks donated arguments of a sharded jit
`jax.buffer_donor` and leaves the pairing with outputs to the compiler: an argument is donated
(and JAX deletes the array) when an output of the same per-device byte size is free for it
(XLA pairs donors and outputs by size), and kept otherwise. Runs in subprocesses with 8 devices, on anvil and on JAX's CPU backend."""

import os
import subprocess
import sys

PROGRAM = r"""
import warnings
warnings.simplefilter("ignore")
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()), ("x",))
rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("x"))
def show(name, *arrays, out=None):
    print(name, [a.is_deleted() for a in arrays], None if out is None else np.asarray(out).tolist())
x = jnp.arange(8.0)  # uncommitted, on one device
show("uncommitted to replicated", x, out=jax.jit(lambda a: a * 2, in_shardings=rep, donate_argnums=0)(x))
x = jax.device_put(jnp.arange(8.0), rep)
show("replicated", x, out=jax.jit(lambda a: a * 2, in_shardings=rep, donate_argnums=0)(x))
x = jax.device_put(jnp.arange(8.0), rep)
show("no output of its type", x, out=jax.jit(lambda a: a.sum(), in_shardings=rep, donate_argnums=0)(x))
y, z = jax.device_put(jnp.arange(8.0), rep), jax.device_put(jnp.ones(8), rep)
show("two donors, one output", y, z, out=jax.jit(lambda a, b: a + b, in_shardings=rep, donate_argnums=(0, 1))(y, z))
w = jax.device_put(jnp.arange(8.0), split)
show("sharded in, replicated out", w, out=jax.jit(lambda a: a * 2, in_shardings=split, out_shardings=rep, donate_argnums=0)(w))
w = jax.device_put(jnp.arange(8.0), split)
show("sharded in and out", w, out=jax.jit(lambda a: a * 2, in_shardings=split, out_shardings=split, donate_argnums=0)(w))
y, z = jax.device_put(jnp.arange(16).reshape(16, 1), split), jax.device_put(jnp.arange(8.0), rep)
show("reshaped, and another dtype of one size", y, z,
     out=jax.jit(lambda a, b: (a.reshape(16), b.astype("int32")), out_shardings=(split, rep),
                 donate_argnums=(0, 1))(y, z)[0])
f = jax.jit(lambda a: (a, a * 2), donate_argnums=0)
x = jax.device_put(jnp.zeros(8, dtype="int32"), rep)
r = f(x)
show("returned as it is", x, *r, out=r[1])
"""


def run(platform):
    env = dict(os.environ, JAX_PLATFORMS=platform, ANVIL_DEVICE_COUNT="8",
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    r = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_sharded_donation_matches_cpu():
    anvil, cpu = run("anvil"), run("cpu")
    assert "uncommitted to replicated [True]" in anvil
    assert "two donors, one output [True, False]" in anvil
    assert "returned as it is [True, False, False]" in anvil
    assert "reshaped, and another dtype of one size [True, True]" in anvil
    assert anvil == cpu
