"""A GPT-style decoder in plain JAX: 4 layers, d=256, 4 heads, sequence 128, batch 8, pre-LN,
causal mask, GELU MLP (4d), learned positions, next-token cross-entropy.

    build(train=True)  -> one SGD training step: (params, tokens) -> (new params, loss)
    build(train=False) -> inference: forward + loss, (params, tokens) -> loss
    dtype="bfloat16"   -> parameters and activations in bf16 (loss accumulated in f32)
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + eps) * g + b


def attention(p, x, heads):
    b, t, d = x.shape
    hd = d // heads
    qkv = x @ p["wqkv"]  # (b, t, 3d)
    q, k, v = jnp.split(qkv.reshape(b, t, 3, heads, hd), 3, axis=2)
    q, k, v = (a[:, :, 0].transpose(0, 2, 1, 3) for a in (q, k, v))  # (b, h, t, hd)
    s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / np.sqrt(hd)).astype(x.dtype)
    causal = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(causal, s, jnp.asarray(-1e9, s.dtype))
    o = jax.nn.softmax(s, axis=-1) @ v  # (b, h, t, hd)
    return o.transpose(0, 2, 1, 3).reshape(b, t, d) @ p["wo"]


def forward(params, tokens, heads):
    t = tokens.shape[1]
    x = params["embed"][tokens] + params["pos"][:t]
    for p in params["layers"]:
        x = x + attention(p, layer_norm(x, *p["ln1"]), heads)
        h = jax.nn.gelu(layer_norm(x, *p["ln2"]) @ p["w1"] + p["b1"])
        x = x + h @ p["w2"] + p["b2"]
    x = layer_norm(x, *params["ln_f"])
    return x @ params["embed"].T  # tied output projection


def loss_fn(params, tokens, heads):
    logits = forward(params, tokens[:, :-1], heads).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits)
    target = tokens[:, 1:]
    return -jnp.mean(jnp.take_along_axis(logp, target[..., None], axis=-1))


def init(rng, vocab, d, layers, seq, dtype):
    def w(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln():
        return (np.ones(d, np.float32), np.zeros(d, np.float32))

    params = {"embed": w(vocab, d), "pos": w(seq, d), "ln_f": ln(), "layers": []}
    for _ in range(layers):
        params["layers"].append({
            "ln1": ln(), "wqkv": w(d, 3 * d), "wo": w(d, d), "ln2": ln(),
            "w1": w(d, 4 * d), "b1": np.zeros(4 * d, np.float32), "w2": w(4 * d, d),
            "b2": np.zeros(d, np.float32)})
    return jax.tree_util.tree_map(lambda a: np.asarray(a).astype(dtype), params)


def build(train=True, dtype="float32", batch=8, seq=128, d=256, layers=4, heads=4, vocab=512,
          lr=0.01, seed=0):
    rng = np.random.default_rng(seed)
    dt = jnp.bfloat16 if dtype == "bfloat16" else np.float32
    params = init(rng, vocab, d, layers, seq + 1, dt)
    tokens = rng.integers(0, vocab, (batch, seq + 1)).astype(np.int32)

    def infer(params, tokens):
        return loss_fn(params, tokens, heads)

    def train_step(params, tokens):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, heads)
        params = jax.tree_util.tree_map(lambda p, g: p - jnp.asarray(lr, p.dtype) * g, params, grads)
        return params, loss

    return (train_step if train else infer), (params, tokens)
