"""A small ResNet training step in plain JAX: 3 stages of 16/32/64 channels (one residual
block each, 1x1 projection shortcuts where the shape changes), batch-statistics
normalisation, NHWC 32x32 inputs, batch 16, softmax cross-entropy, one SGD update.

    step, args = build(); new_params, loss = jax.jit(step)(*args)
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

STAGES = (16, 32, 64)
DN = ("NHWC", "HWIO", "NHWC")


def conv(x, w, stride=1):
    pad = "SAME" if w.shape[0] > 1 else "VALID"
    return lax.conv_general_dilated(x, w, (stride, stride), pad, dimension_numbers=DN)


def batch_norm(x, gamma, beta, eps=1e-5):
    """Normalises with the batch's own statistics over N, H, W (training mode)."""
    mean = x.mean(axis=(0, 1, 2))
    var = ((x - mean) ** 2).mean(axis=(0, 1, 2))
    return (x - mean) * lax.rsqrt(var + eps) * gamma + beta


def block(p, x, stride):
    h = jax.nn.relu(batch_norm(conv(x, p["w1"], stride), *p["bn1"]))
    h = batch_norm(conv(h, p["w2"]), *p["bn2"])
    short = batch_norm(conv(x, p["proj"], stride), *p["bnp"]) if "proj" in p else x
    return jax.nn.relu(h + short)


def forward(params, x):
    h = jax.nn.relu(batch_norm(conv(x, params["stem"]), *params["bn0"]))
    for i, p in enumerate(params["blocks"]):
        h = block(p, h, 1 if i == 0 else 2)
    h = h.mean(axis=(1, 2))
    return h @ params["fc_w"] + params["fc_b"]


def loss_fn(params, x, labels):
    logits = forward(params, x)
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def train_step(params, x, labels, lr=0.05):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss


def init(rng, in_ch=3, classes=10):
    def he(*shape):
        fan_in = int(np.prod(shape[:-1]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bn(c):
        return (np.ones(c, np.float32), np.zeros(c, np.float32))

    params = {"stem": he(3, 3, in_ch, STAGES[0]), "bn0": bn(STAGES[0]), "blocks": []}
    c_in = STAGES[0]
    for i, c in enumerate(STAGES):
        p = {"w1": he(3, 3, c_in, c), "bn1": bn(c), "w2": he(3, 3, c, c), "bn2": bn(c)}
        if c_in != c or i > 0:
            p["proj"], p["bnp"] = he(1, 1, c_in, c), bn(c)
        params["blocks"].append(p)
        c_in = c
    params["fc_w"] = he(c_in, classes)
    params["fc_b"] = np.zeros(classes, np.float32)
    return params


def build(batch=16, size=32, classes=10, seed=0):
    rng = np.random.default_rng(seed)
    params = init(rng, classes=classes)
    x = rng.standard_normal((batch, size, size, 3)).astype(np.float32)
    labels = rng.integers(0, classes, batch).astype(np.int32)
    return train_step, (params, x, labels)
