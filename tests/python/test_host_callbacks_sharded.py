"""Host callbacks in partitioned programs, as on JAX's CPU backend in the same run (2
devices): a callback JAX pins to one device (maximal sharding; jax.debug.print in a sharded
jit) runs once, also when it returns nothing (it ran on every device once partitioning came);
jax.debug.print(..., partitioned=True) runs on every device with that device's shard (anvil
printed the whole array once)."""

import os
import subprocess
import sys

PROGRAM = r"""
import warnings
warnings.simplefilter("ignore")
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
split, rep = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())

def once(x):
    jax.debug.print("once {}", x, ordered=False)
    return x

def per_shard(x):
    jax.debug.print("shard {}", x, partitioned=True)
    return x * 2

def in_loop(x):
    def body(i, c):
        jax.debug.print("loop {} {}", i, c.sum())
        return c + 1
    return jax.lax.fori_loop(0, 2, body, x)

x = jax.device_put(np.arange(8, dtype=np.int32), split)
with jax.set_mesh(mesh):
    a = jax.jit(once, in_shardings=split, out_shardings=rep)(x)
    b = jax.jit(per_shard)(x)
    c = jax.jit(in_loop, in_shardings=split, out_shardings=rep)(x)
    jax.effects_barrier()
print("values", np.asarray(a).tolist(), np.asarray(b).tolist(), np.asarray(c).tolist(), flush=True)
"""


def run(platform):
    env = dict(os.environ, JAX_PLATFORMS=platform, ANVIL_DEVICE_COUNT="2",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    r = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return sorted(line for line in r.stdout.splitlines() if line.strip())


def test_sharded_callbacks_run_where_xla_cpu_runs_them():
    anvil, cpu = run("anvil"), run("cpu")
    assert anvil.count("once [0 1 2 3 4 5 6 7]") == 1
    assert "shard [0 1 2 3]" in anvil and "shard [4 5 6 7]" in anvil
    assert anvil == cpu


INSPECT = r"""
import warnings
warnings.simplefilter("ignore")
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
seen = []

def f(x):
    jax.debug.inspect_array_sharding(x, callback=lambda s: seen.append(("arg", s.spec, len(s.device_set))))
    y = jnp.sin(x) * 2
    jax.debug.inspect_array_sharding(y, callback=lambda s: seen.append(("mid", s.spec, len(s.device_set))))
    return y

def g():
    a = jnp.zeros(16)
    jax.debug.inspect_array_sharding(a, callback=lambda s: seen.append(("out", s.spec)))
    return a

x = jax.device_put(np.arange(8.0).reshape(4, 2), NamedSharding(mesh, P("x")))
jax.jit(f)(x)
jax.jit(g, out_shardings=NamedSharding(mesh, P("x")))()
jax.shard_map(g, mesh=mesh, in_specs=(), out_specs=P("x"))()
for s in seen:
    print(s)
"""


def test_inspect_array_sharding_tells_the_sharding_xla_cpu_tells():
    """jax.debug.inspect_array_sharding in a sharded jit: the callback runs at compile time
    with the sharding propagated for the value (an argument's, one propagated from it, one
    from out_shardings, a manual one inside shard_map), as XLA's partitioner reports it.
    Before, the custom call @InspectSharding was refused (UNIMPLEMENTED)."""
    outs = {}
    for p in ("anvil", "cpu"):
        env = dict(os.environ, JAX_PLATFORMS=p, ANVIL_DEVICE_COUNT="2",
                   XLA_FLAGS="--xla_force_host_platform_device_count=2")
        r = subprocess.run([sys.executable, "-c", INSPECT], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        outs[p] = r.stdout.splitlines()
    assert "('arg', P('x',), 2)" in outs["anvil"]
    assert outs["anvil"] == outs["cpu"]
