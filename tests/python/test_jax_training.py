"""Training loops written in plain JAX (and with flax + optax when installed) run on anvil and
on JAX's CPU backend in the same process; the loss curves must match within tolerance."""

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

STEPS = 200


def data(seed, n, d_in, d_out):
    r = np.random.default_rng(seed)
    x = r.standard_normal((n, d_in)).astype(np.float32)
    w = r.standard_normal((d_in, d_out)).astype(np.float32)
    return x, np.tanh(x @ w).astype(np.float32)


def train(step_fn, params, batches, device, steps=STEPS):
    params = jax.device_put(params, device)
    batches = jax.device_put(batches, device)
    step = jax.jit(step_fn)
    losses = []
    for _ in range(steps):
        params, loss = step(params, *batches)
        losses.append(float(loss))
    return np.array(losses)


def compare_curves(step_fn, params, batches, rtol=2e-3):
    anvil, cpu = jax.devices("anvil")[0], jax.devices("cpu")[0]
    la = train(step_fn, params, batches, anvil)
    lc = train(step_fn, params, batches, cpu)
    assert lc[-1] < 0.5 * lc[0], "the reference run should learn"
    np.testing.assert_allclose(la, lc, rtol=rtol, atol=1e-5)


def mlp_init(key, sizes):
    params = []
    for k, (a, b) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        params.append((jax.random.normal(k, (a, b), jnp.float32) / np.sqrt(a),
                       jnp.zeros((b,), jnp.float32)))
    return params


def mlp_apply(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def mlp_step(params, x, y):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((mlp_apply(p, x) - y) ** 2))(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss


def test_mlp_training_curve_matches_cpu():
    x, y = data(0, 128, 16, 4)
    params = mlp_init(jax.random.key(0), [16, 64, 64, 4])
    compare_curves(mlp_step, jax.device_get(params), (x, y))


def cnn_init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"c1": jax.random.normal(k1, (3, 3, 1, 8), jnp.float32) * 0.3,
            "c2": jax.random.normal(k2, (3, 3, 8, 8), jnp.float32) * 0.1,
            "out": jax.random.normal(k3, (8 * 4 * 4, 3), jnp.float32) * 0.05}


def cnn_apply(p, img):
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.nn.relu(lax.conv_general_dilated(img, p["c1"], (1, 1), "SAME", dimension_numbers=dn))
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.nn.relu(lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME", dimension_numbers=dn))
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return h.reshape(h.shape[0], -1) @ p["out"]


def cnn_step(p, img, labels):
    def loss_fn(p):
        logits = cnn_apply(p, img)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * labels, axis=-1))

    loss, grads = jax.value_and_grad(loss_fn)(p)
    return jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, grads), loss


def test_cnn_training_curve_matches_cpu():
    r = np.random.default_rng(1)
    img = r.standard_normal((32, 16, 16, 1)).astype(np.float32)
    # Labels that depend on the images, so there is something to learn.
    cls = (img[:, :8].mean((1, 2, 3)) > 0).astype(int) + (img[:, :, :8].mean((1, 2, 3)) > 0)
    labels = np.eye(3, dtype=np.float32)[cls]
    compare_curves(cnn_step, jax.device_get(cnn_init(jax.random.key(1))), (img, labels),
                   rtol=5e-3)


@pytest.mark.skipif(importlib.util.find_spec("flax") is None or
                    importlib.util.find_spec("optax") is None,
                    reason="flax/optax not installed")
def test_flax_optax_training_curve_matches_cpu():
    import optax
    from flax import linen as nn

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.gelu(nn.Dense(32)(x))
            x = nn.LayerNorm()(x)
            return nn.Dense(4)(x)

    x, y = data(2, 64, 8, 4)
    model = Net()
    tx = optax.adam(1e-2)

    def step(state, x, y):
        params, opt_state = state
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    params = jax.device_get(model.init(jax.random.key(0), x))
    state = (params, jax.device_get(tx.init(params)))
    compare_curves(step, state, (x, y), rtol=5e-3)
