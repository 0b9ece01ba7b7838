"""A flax.linen CNN trained with optax (adamw): 28x28x1 inputs, batch 32, two 3x3 conv layers
(32, 64 channels) with average pooling, a 128-unit dense layer, 10 classes.

    step, args = build(); params, opt_state, loss = jax.jit(step)(*args)
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(32, (3, 3))(x))
        x = nn.avg_pool(x, (2, 2), (2, 2))
        x = nn.relu(nn.Conv(64, (3, 3))(x))
        x = nn.avg_pool(x, (2, 2), (2, 2))
        x = x.reshape(x.shape[0], -1)
        x = nn.relu(nn.Dense(128)(x))
        return nn.Dense(10)(x)


def build(batch=32, seed=0):
    rng = np.random.default_rng(seed)
    model = CNN()
    x = rng.standard_normal((batch, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int32)
    params = jax.device_get(model.init(jax.random.PRNGKey(seed), x))
    tx = optax.adamw(1e-3)
    opt_state = jax.device_get(tx.init(params))

    def train_step(params, opt_state, x, labels):
        def loss_fn(p):
            logits = model.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step, (params, opt_state, x, labels)
