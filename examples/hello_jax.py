"""The checks from OpenXLA's plugin guide, run on anvil.

    JAX_PLATFORMS=anvil python examples/hello_jax.py
    ANVIL_DEVICE_COUNT=4 JAX_PLATFORMS=anvil python examples/hello_jax.py   # pmap over 4 devices
"""
import jax
import jax.numpy as jnp

print(jax.devices())

# JAX 1+1
print(jnp.add(1, 1))  # => 2

# jit
print(jax.jit(lambda x: x * 2)(1.))  # => 2.0

# pmap: single device [0]; 4 devices [6 7 8 9]
arr = jnp.arange(jax.device_count())
print(jax.pmap(lambda x: x + jax.lax.psum(x, "i"), axis_name="i")(arr))
