"""Scientific workloads for bench/run.py: where XLA:CPU's generated loops run (PRNG, element-wise
transcendental chains, small loop bodies, broadcast-then-reduce nests), issue #26.

Each entry of cases() is name -> (function, args, work), like run.py's micro cases. Inputs are
random with a fixed seed.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_rng = np.random.default_rng(1)


def _arr(*shape, scale=1.0):
    return (_rng.standard_normal(shape) * scale).astype(np.float32)


def _key():
    return np.array([0, 42], dtype=np.uint32)  # a raw threefry key (jax.random.PRNGKey(42))


N_PRNG = 1 << 20


def prng_bits(key):
    return jax.random.bits(key, (N_PRNG,), jnp.uint32)


def prng_normal(key):
    return jax.random.normal(key, (N_PRNG,), jnp.float32)


def prng_uniform(key):
    return jax.random.uniform(key, (N_PRNG,), jnp.float32)


def transcendental_chain(x):
    return jax.nn.sigmoid(jnp.sqrt(jnp.tanh(jnp.log1p(jnp.exp(jnp.sin(x))))))


def mcmc_chain(key, x0, prec):
    """Random-walk Metropolis on a correlated Gaussian: 256 chains in 16 dimensions, 200 steps;
    per step a threefry draw for the proposal and one for the accept test, and a batched
    mat-vec for the log density."""

    def logp(x):
        return -0.5 * jnp.sum(x * (x @ prec), axis=-1)

    def step(carry, k):
        x, lp = carry
        k1, k2 = jax.random.split(k)
        prop = x + 0.3 * jax.random.normal(k1, x.shape)
        lp_prop = logp(prop)
        accept = jnp.log(jax.random.uniform(k2, lp.shape)) < lp_prop - lp
        x = jnp.where(accept[:, None], prop, x)
        lp = jnp.where(accept, lp_prop, lp)
        return (x, lp), jnp.mean(accept)

    keys = jax.random.split(key, 200)
    (x, _), rate = lax.scan(step, (x0, logp(x0)), keys)
    return x, rate


def mcmc_args():
    a = _arr(16, 16, scale=0.3)
    prec = (a @ a.T + np.eye(16, dtype=np.float32)).astype(np.float32)
    return _key(), _arr(256, 16), prec


def ode_ensemble(y0, params, steps=200):
    """Lorenz-63 for 4096 ensemble members (each its own sigma, rho, beta), RK4, 200 steps of
    dt = 0.01 in a scan that keeps the final state (tests/python/test_fold_slices.py runs 20)."""
    dt = 0.01

    def f(y):
        x, yy, z = y[0], y[1], y[2]
        s, r, b = params[0], params[1], params[2]
        return jnp.stack([s * (yy - x), x * (r - z) - yy, x * yy - b * z])

    def step(y, _):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        return y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4), None

    y, _ = lax.scan(step, y0, None, length=steps)
    return y


def ode_args():
    n = 4096
    y0 = _arr(3, n)
    params = np.stack([10 + _arr(n), 28 + _arr(n), 8 / 3 + 0.1 * _arr(n)]).astype(np.float32)
    return y0, params


def nbody(pos, vel, mass):
    """1024 bodies, softened gravity, 10 leapfrog (kick-drift-kick) steps in a fori_loop."""
    dt, eps2 = 1e-3, 1e-2

    def acc(p):
        d = p[None, :, :] - p[:, None, :]  # (N, N, 3)
        r2 = jnp.sum(d * d, axis=-1) + eps2
        inv = mass[None, :] * lax.rsqrt(r2) ** 3
        return jnp.sum(d * inv[:, :, None], axis=1)

    def body(_, pv):
        p, v = pv
        v = v + 0.5 * dt * acc(p)
        p = p + dt * v
        v = v + 0.5 * dt * acc(p)
        return p, v

    return lax.fori_loop(0, 10, body, (pos, vel))


def nbody_args():
    n = 1024
    return _arr(n, 3), _arr(n, 3, scale=0.1), np.abs(_arr(n)) / n


def cg_solve(a, b):
    """Conjugate gradients on a 512 x 512 SPD system (jax.scipy's cg: a while loop), 100
    iterations at most."""
    x, _ = jax.scipy.sparse.linalg.cg(lambda v: a @ v, b, tol=1e-10, maxiter=100)
    return x


def cg_args():
    m = _arr(512, 512, scale=1 / 512 ** 0.5)
    return (m @ m.T + np.eye(512, dtype=np.float32)).astype(np.float32), _arr(512)


def rnn_tanh(w, u, b, xs, h0):
    """A small tanh RNN: hidden 64, batch 8, 256 steps of lax.scan."""

    def step(h, x):
        h = jnp.tanh(h @ w + x @ u + b)
        return h, h

    h, hs = lax.scan(step, h0, xs)
    return h, hs


def rnn_args():
    return (_arr(64, 64, scale=0.1), _arr(32, 64, scale=0.1), _arr(64, scale=0.1),
            _arr(256, 8, 32), _arr(8, 64))


def lstm_train(params, xs, ys):
    """One SGD step of an LSTM (input 32, hidden 128, batch 16) over 64 steps of lax.scan, with
    a squared-error loss on a linear read-out of every step."""

    def loss(p):
        wx, wh, b, wo = p

        def cell(carry, x):
            h, c = carry
            g = x @ wx + h @ wh + b
            i, f, o, u = jnp.split(g, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(u)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h @ wo

        z = jnp.zeros((xs.shape[1], wh.shape[0]), jnp.float32)
        _, out = lax.scan(cell, (z, z), xs)
        return jnp.mean((out - ys) ** 2)

    g = jax.grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, d: p - 1e-2 * d, params, g)


def lstm_args():
    h, i = 128, 32
    p = (_arr(i, 4 * h, scale=0.1), _arr(h, 4 * h, scale=0.1), _arr(4 * h, scale=0.1),
         _arr(h, 8, scale=0.1))
    return p, _arr(64, 16, i), _arr(64, 16, 8)


def cases():
    return {
        "prng_bits_1M": (prng_bits, (_key(),), 4 * N_PRNG),
        "prng_normal_1M": (prng_normal, (_key(),), 4 * N_PRNG),
        "prng_uniform_1M": (prng_uniform, (_key(),), 4 * N_PRNG),
        "transcendental_chain_1M": (transcendental_chain, (_arr(N_PRNG),), 2 * 4 * N_PRNG),
        "mcmc_rwm_chain": (mcmc_chain, mcmc_args(), None),
        "ode_rk4_ensemble": (ode_ensemble, ode_args(), None),
        "nbody_1024x10": (nbody, nbody_args(), None),
        "cg_solve_512": (cg_solve, cg_args(), None),
        "rnn_tanh_scan": (rnn_tanh, rnn_args(), None),
        "lstm_train_step": (lstm_train, lstm_args(), None),
    }
