"""Data-parallel MLP training step on anvil: the batch split over 2 devices (parameters
replicated, gradients all-reduced by the partitioned program) against the same step on 1
device. A benchmark, not a test: run it with ANVIL_DEVICE_COUNT=2 on an idle machine.

  ANVIL_DEVICE_COUNT=2 JAX_PLATFORMS=anvil .venv/bin/python bench/spmd_data_parallel.py

Prints the median step time of each (interleaved rounds) and the speedup, and what bounds it:
the step's GFLOP/s against a large f32 matmul on one device (which already uses every core).
Two devices cannot beat one by more than that ratio: on a 2-core machine the one-device step
already runs its GEMMs on both cores."""

import os
import platform
import statistics
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

BATCH = int(os.environ.get("BATCH", "512"))
WIDTH = int(os.environ.get("WIDTH", "512"))
DEPTH = int(os.environ.get("DEPTH", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "15"))


def init(key):
    params = []
    for i in range(DEPTH):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (WIDTH, WIDTH), jnp.float32) / np.sqrt(WIDTH),
                       jnp.zeros((WIDTH,), jnp.float32)))
    return params


def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - y) ** 2)


def step(params, x, y):
    l, g = jax.value_and_grad(loss)(params, x, y)
    return l, jax.tree_util.tree_map(lambda p, q: p - 0.01 * q, params, g)


def timed(f, args, n):
    out = f(*args)
    jax.block_until_ready(out)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return times


def main():
    devs = jax.devices()
    if len(devs) < 2:
        sys.exit("needs ANVIL_DEVICE_COUNT=2")
    x = np.random.RandomState(0).standard_normal((BATCH, WIDTH)).astype(np.float32)
    y = np.random.RandomState(1).standard_normal((BATCH, WIDTH)).astype(np.float32)
    params = init(jax.random.PRNGKey(0))
    one = jax.jit(step)
    args1 = (jax.device_put(params, devs[0]), jax.device_put(x, devs[0]), jax.device_put(y, devs[0]))
    mesh = Mesh(np.array(devs[:2]), ("d",))
    rep, bat = NamedSharding(mesh, P()), NamedSharding(mesh, P("d"))
    two = jax.jit(step, in_shardings=(rep, bat, bat), out_shardings=(rep, rep))
    args2 = (jax.device_put(params, rep), jax.device_put(x, bat), jax.device_put(y, bat))
    l1, _ = one(*args1)
    l2, _ = two(*args2)
    np.testing.assert_allclose(np.asarray(l1), np.asarray(l2), rtol=1e-4)
    t1, t2 = [], []
    load0 = os.getloadavg()[0]
    for _ in range(ROUNDS):  # interleaved, so load from elsewhere hits both alike
        t1 += timed(one, args1, 3)
        t2 += timed(two, args2, 3)
    m1, m2 = statistics.median(t1), statistics.median(t2)
    # the bound: the machine's matmul rate (one device, all its threads) over the step's
    n = 2048
    a = jax.device_put(np.ones((n, n), np.float32), devs[0])
    mm = jax.jit(lambda a: a @ a)
    tm = min(timed(mm, (a,), 10))
    peak = 2 * n ** 3 / tm
    flops = 2 * BATCH * WIDTH * WIDTH * (3 * DEPTH - 1)  # forward, weight and input gradients
    print(f"cpu: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus; "
          f"MLP {DEPTH}x{WIDTH}, batch {BATCH}; load average {load0:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"1 device:  {m1 * 1e3:.2f} ms/step (min {min(t1) * 1e3:.2f})")
    print(f"2 devices: {m2 * 1e3:.2f} ms/step (min {min(t2) * 1e3:.2f})")
    print(f"speedup: {m1 / m2:.2f}x (median), {min(t1) / min(t2):.2f}x (min)")
    print(f"bound: {flops / 1e9:.2f} GFLOP/step of matmuls; 1 device {flops / min(t1) / 1e9:.0f} "
          f"GFLOP/s (min), {n}^3 matmul {peak / 1e9:.0f} GFLOP/s: no speedup over "
          f"{peak * min(t1) / flops:.2f}x even with free collectives and elementwise ops")


if __name__ == "__main__":
    main()
