"""One process of a multi-process JAX job on anvil, started by test_multiprocess.py.

    python multiproc_worker.py SCENARIO PROCESS_ID NUM_PROCESSES COORDINATOR_ADDRESS
    mpirun -n N python multiproc_worker.py SCENARIO auto   (ids from MPI's environment)

Prints one line 'RESULT <json>' with what this process computed (its own devices' shards);
the test checks it against numpy. A failing case is recorded as "ERROR: ..." rather than
ending the process, so one report shows every case."""

import json
import os
import sys
import time
import traceback

import numpy as np


def record(out, name, fn):
    try:
        v = fn()
        out[name] = v.tolist() if isinstance(v, np.ndarray) else v
    except Exception as e:  # reported by the test
        out[name] = "ERROR: %s: %s" % (type(e).__name__, str(e)[:1500])


def local_rows(arr):
    """The shards of a pmap result on this process's devices, in device order, as one array."""
    import jax

    shards = sorted(arr.addressable_shards, key=lambda s: s.device.id)
    return np.stack([np.asarray(s.data).reshape(arr.shape[1:]) for s in shards])


def collectives(pid, nproc, out):
    import jax
    import jax.numpy as jnp
    from jax import shard_map
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    L, G = jax.local_device_count(), jax.device_count()
    out["devices"] = [[d.id, d.process_index] for d in jax.devices()]
    out["local_devices"] = [d.id for d in jax.local_devices()]
    out["process_index"] = jax.process_index()
    from anvil_pjrt._net import local_address_towards

    out["address"] = local_address_towards(os.environ["ANVIL_TEST_COORDINATOR"])
    x = np.arange(G * 3, dtype=np.float32).reshape(G, 3)
    mine = x[pid * L:(pid + 1) * L]
    pm = lambda f: jax.pmap(f, axis_name="i")
    lax = jax.lax
    record(out, "seed", lambda: local_rows(pm(lambda v: v + lax.psum(v, "i"))(
        np.arange(G)[pid * L:(pid + 1) * L])))
    record(out, "psum", lambda: local_rows(pm(lambda v: lax.psum(v, "i"))(mine)))
    record(out, "pmean", lambda: local_rows(pm(lambda v: lax.pmean(v, "i"))(mine)))
    record(out, "pmax", lambda: local_rows(pm(lambda v: lax.pmax(v, "i"))(mine)))
    record(out, "pmin_int", lambda: local_rows(pm(lambda v: lax.pmin(v, "i"))(
        (mine * 7 % 5).astype(np.int32))))
    record(out, "all_gather", lambda: local_rows(pm(lambda v: lax.all_gather(v, "i"))(mine)))
    record(out, "ppermute", lambda: local_rows(pm(lambda v: lax.ppermute(
        v, "i", [(k, (k + 1) % G) for k in range(G)]))(mine)))
    record(out, "psum_scatter", lambda: local_rows(pm(lambda v: lax.psum_scatter(
        jnp.tile(v, G), "i", tiled=True))(mine)))
    record(out, "all_to_all", lambda: local_rows(pm(lambda v: lax.all_to_all(
        jnp.arange(G * 2.0) + 100 * v[0], "i", 0, 0, tiled=True))(mine)))
    record(out, "axis_index", lambda: local_rows(pm(lambda v: v * lax.axis_index("i"))(mine)))
    # a group per pair of neighbours: [[0,1],[2,3]] with 2 devices a process stays local
    if G % 2 == 0:
        groups = [[2 * k, 2 * k + 1] for k in range(G // 2)]
        record(out, "psum_groups", lambda: local_rows(pm(lambda v: lax.psum(
            v, "i", axis_index_groups=groups))(mine)))
        # [[0,2],[1,3]]: every group crosses processes when there are 2 devices a process
        cross = [[k, k + G // 2] for k in range(G // 2)]
        record(out, "psum_cross_groups", lambda: local_rows(pm(lambda v: lax.psum(
            v, "i", axis_index_groups=cross))(mine)))
    big = np.arange(L * 300000, dtype=np.float32).reshape(L, 300000) + pid
    record(out, "psum_big_sum", lambda: float(np.asarray(local_rows(pm(
        lambda v: lax.psum(v, "i"))(big))).astype(np.float64).sum()))

    mesh = Mesh(np.array(jax.devices()), ("d",))
    spec = NamedSharding(mesh, P("d"))
    ga = jax.make_array_from_process_local_data(spec, mine)
    record(out, "process_local_shape", lambda: list(ga.shape))
    sm = shard_map(lambda t: lax.psum(t, "d"), mesh=mesh, in_specs=P("d"), out_specs=P())
    record(out, "shard_map_psum", lambda: np.asarray(jax.jit(sm)(ga).addressable_data(0)))
    sm2 = shard_map(lambda t: lax.ppermute(t, "d", [(k, (k + 1) % G) for k in range(G)]),
                    mesh=mesh, in_specs=P("d"), out_specs=P("d"))
    record(out, "shard_map_ppermute", lambda: np.concatenate(
        [np.asarray(s.data) for s in sorted(jax.jit(sm2)(ga).addressable_shards,
                                            key=lambda s: s.device.id)]))
    record(out, "jit_sharded_sum", lambda: np.asarray(
        jax.jit(lambda t: jnp.sum(t * 2, axis=0), out_shardings=NamedSharding(mesh, P()))(ga)
        .addressable_data(0)))
    # partitioned across processes: each device's program works on its own row (the HLO view
    # of the executable shows per-device shapes; a global program would show [G,3])
    record(out, "jit_sharded_sum_per_device", lambda: jax.jit(
        lambda t: jnp.sum(t * 2, axis=0), out_shardings=NamedSharding(mesh, P())).lower(ga)
        .compile().as_text().split("\n", 1)[0].startswith(
            "HloModule jit__lambda, entry_computation_layout={(f32[1,3]{1,0})->"))
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    mesh2 = Mesh(np.array(jax.devices()).reshape(nproc, L), ("p", "l"))
    rows2 = jax.make_array_from_process_local_data(NamedSharding(mesh2, P(("p", "l"))), mine)
    record(out, "jit_matmul_rows", lambda: np.concatenate(
        [np.asarray(s.data) for s in sorted(jax.jit(
            lambda a, b: jnp.tanh(a @ b), out_shardings=NamedSharding(mesh2, P(("p", "l"))))(
                rows2, w).addressable_shards, key=lambda s: s.device.id)]))
    record(out, "process_allgather", lambda: multihost_utils.process_allgather(
        np.full((2,), pid, np.float32) + np.arange(2)))

    record(out, "broadcast_one_to_all", lambda: np.asarray(multihost_utils.broadcast_one_to_all(
        np.arange(3, dtype=np.float32) + 10 * pid)))

    def sync():
        multihost_utils.sync_global_devices("anvil-test")
        return "ok"

    record(out, "sync_global_devices", sync)
    big_collectives(pid, nproc, out)
    out["shm_segments"] = shm_segments()


def big_collectives(pid, nproc, out):
    """Collectives over several MiB (many chunks of the shared-memory transport, uneven parts)
    with values that differ per device and element, checked here against numpy: True, or the
    first mismatch."""
    import jax

    L, G = jax.local_device_count(), jax.device_count()
    lax = jax.lax
    pm = lambda f: jax.pmap(f, axis_name="i")
    n = 700001  # odd: parts and chunks do not divide it
    # small integers: float32 sums of them are exact in any order
    every = np.stack([((np.arange(n) * (d + 3)) % 1001).astype(np.float32) for d in range(G)])
    mine = every[pid * L:(pid + 1) * L]

    def check(name, got, want):
        got = np.asarray(got)
        if got.shape != want.shape:
            return "%s: shape %s, want %s" % (name, got.shape, want.shape)
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        return True if bad.size == 0 else "%s: %d elements differ, first at %d" % (
            name, bad.size, bad[0])

    record(out, "big_psum", lambda: check("psum", local_rows(pm(lambda v: lax.psum(v, "i"))(
        mine)), np.tile(every.sum(0), (L, 1))))
    record(out, "big_pmax_int", lambda: check("pmax", local_rows(pm(lambda v: lax.pmax(v, "i"))(
        mine.astype(np.int32) - 500)), np.tile(every.max(0).astype(np.int32) - 500, (L, 1))))
    m = 300001
    record(out, "big_all_gather", lambda: check("all_gather", local_rows(pm(
        lambda v: lax.all_gather(v, "i"))(mine[:, :m])), np.stack([every[:, :m]] * L)))
    k = 150000  # each device sends a block of k to every device
    blocks = np.stack([((np.arange(G * k) + 7 * d) % 997).astype(np.float32) for d in range(G)])
    want = np.stack([blocks[:, j * k:(j + 1) * k].reshape(-1) for j in range(G)])
    record(out, "big_all_to_all", lambda: check("all_to_all", local_rows(pm(
        lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True))(blocks[pid * L:(pid + 1) * L])),
        want[pid * L:(pid + 1) * L]))


def shm_segments():
    """How many of anvil's shared-memory segments this process has mapped (the transport
    unlinks them once every process mapped them, so they show as deleted)."""
    with open("/proc/self/maps") as f:
        return len({line.split()[-2] if line.rstrip().endswith("(deleted)") else line.split()[-1]
                    for line in f if "/anvil-" in line and "/dev/shm" in line})


def mlp(pid, nproc, out):
    """Data-parallel training: each process takes its devices' slices of the batch; the
    gradients are averaged over every device with pmean."""
    import jax
    import jax.numpy as jnp

    L, G = jax.local_device_count(), jax.device_count()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 8)).astype(np.float32)
    Y = (X @ rng.standard_normal((8, 1)) + 0.1).astype(np.float32)
    w1 = (rng.standard_normal((8, 16)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((16, 1)) * 0.3).astype(np.float32)

    def loss_fn(p, x, y):
        h = jnp.tanh(x @ p[0])
        return jnp.mean((h @ p[1] - y) ** 2)

    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        g = jax.lax.pmean(g, "i")
        loss = jax.lax.pmean(loss, "i")
        return [a - 0.1 * b for a, b in zip(p, g)], loss

    pstep = jax.pmap(step, axis_name="i")
    xs = X.reshape(G, -1, 8)[pid * L:(pid + 1) * L]
    ys = Y.reshape(G, -1, 1)[pid * L:(pid + 1) * L]
    params = [np.stack([w1] * L), np.stack([w2] * L)]
    losses = []
    for _ in range(50):
        params, loss = pstep(params, xs, ys)
        losses.append(float(np.asarray(loss.addressable_data(0)).reshape(-1)[0]))
    out["losses"] = losses


def mlp_reference(out):
    """The same training on one process, whole batch, plain jit."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 8)).astype(np.float32)
    Y = (X @ rng.standard_normal((8, 1)) + 0.1).astype(np.float32)
    w1 = (rng.standard_normal((8, 16)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((16, 1)) * 0.3).astype(np.float32)

    def loss_fn(p, x, y):
        h = jnp.tanh(x @ p[0])
        return jnp.mean((h @ p[1] - y) ** 2)

    @jax.jit
    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return [a - 0.1 * b for a, b in zip(p, g)], loss

    params, losses = [w1, w2], []
    for _ in range(50):
        params, loss = step(params, X, Y)
        losses.append(float(loss))
    out["losses"] = losses


def killed(pid, nproc, out):
    """Process 1 dies in the middle of a run of psums; the others must fail with a clear
    error, within the collective timeout, and still exit."""
    import jax

    def psum_step(v):
        return jax.lax.psum(v, "i")

    f = jax.pmap(psum_step, axis_name="i")
    x = np.ones((jax.local_device_count(), 4), np.float32)
    f(x).block_until_ready()
    out["warmed_up"] = True
    if pid == 1:
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(17)  # dies without a word to anyone
    t0 = time.monotonic()
    try:
        for _ in range(1000):
            f(x).block_until_ready()
            time.sleep(0.01)
        out["error"] = None
    except Exception as e:
        out["error"] = str(e)
    out["seconds"] = time.monotonic() - t0


def main():
    scenario = sys.argv[1]
    out = {}
    if sys.argv[2] == "auto":  # under mpirun / srun: JAX reads everything from the launcher
        import jax

        jax.distributed.initialize(initialization_timeout=120)
        pid, nproc = jax.process_index(), jax.process_count()
        os.environ["ANVIL_TEST_COORDINATOR"] = "127.0.0.1:1"
        try:
            {"collectives": collectives}[scenario](pid, nproc, out)
        except Exception:
            out["fatal"] = traceback.format_exc()[-3000:]
        with open(os.path.join(os.environ["ANVIL_TEST_RESULT_DIR"], "%d.json" % pid), "w") as f:
            json.dump(out, f)
        return
    pid, nproc, coordinator = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    os.environ["ANVIL_TEST_COORDINATOR"] = coordinator
    if scenario == "mlp_reference":
        mlp_reference(out)
        print("RESULT " + json.dumps(out), flush=True)
        return
    import jax

    jax.distributed.initialize(coordinator_address=coordinator, num_processes=nproc,
                               process_id=pid, initialization_timeout=120)
    try:
        {"collectives": collectives, "mlp": mlp, "killed": killed}[scenario](pid, nproc, out)
    except Exception:
        out["fatal"] = traceback.format_exc()[-3000:]
    print("RESULT " + json.dumps(out), flush=True)
    if scenario == "killed":
        # the job is broken: skip the distributed runtime's shutdown barrier with a dead peer
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
