"""An MLP 64-256-256-256-1 (ReLU, mean squared error) trained with a hand-written Adam update,
batch 512: many small elementwise chains over the parameter tree (the optimizer) around four
small matmuls.

    step, args = build(); params, m, v, t, loss = jax.jit(step)(*args)
"""

import jax
import jax.numpy as jnp
import numpy as np

SIZES = (64, 256, 256, 256, 1)


def loss_fn(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - y) ** 2)


def adam_step(params, m, v, t, x, y, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    loss, g = jax.value_and_grad(loss_fn)(params, x, y)
    t = t + 1
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    c1 = 1 - b1 ** t.astype(jnp.float32)
    c2 = 1 - b2 ** t.astype(jnp.float32)
    params = jax.tree_util.tree_map(
        lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
    return params, m, v, t, loss


def build(batch=512, seed=0):
    rng = np.random.default_rng(seed)
    params = [((rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32),
               np.zeros(b, np.float32)) for a, b in zip(SIZES[:-1], SIZES[1:])]
    zeros = jax.tree_util.tree_map(np.zeros_like, params)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.standard_normal((batch, SIZES[-1])).astype(np.float32)
    return adam_step, (params, zeros, jax.tree_util.tree_map(np.copy, zeros), np.int32(0), x, y)
