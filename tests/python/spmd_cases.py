"""Sharded-jit programs run on anvil and on JAX's CPU backend in one process (both with the
same device count); used by test_spmd.py. Prints one JSON object: per case and platform, the
output shardings (PartitionSpec strings), the input shardings the executable asks for, and
the values."""

import json
import sys

import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

NDEV = int(sys.argv[1]) if __name__ == "__main__" else 4


def meshes(platform):
    devs = np.array(jax.devices(platform))
    assert len(devs) == NDEV, devs
    m1 = Mesh(devs, ('d',))
    m2 = Mesh(devs.reshape(2, NDEV // 2), ('x', 'y'))
    # a 2 x (n/2) mesh whose devices are not in id order
    m2r = Mesh(devs[::-1].reshape(2, NDEV // 2), ('x', 'y'))
    return m1, m2, m2r


def rng(seed, shape, dtype=np.float32):
    return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def cases(m1, m2, m2r):
    n = NDEV
    c = {}
    w8 = rng(1, (8, 16))
    x8 = rng(2, (4 * n, 8))
    # FSDP-style matmul: batch and parameters both sharded over one axis
    c['fsdp_matmul'] = (lambda x, w: jnp.tanh(x @ w), [(x8, m1, P('d', None)), (w8, m1, P('d', None))])
    # tensor parallel: column-parallel then row-parallel
    wa = rng(3, (8, 2 * n))
    wb = rng(4, (2 * n, 8))
    c['tp_mlp'] = (lambda x, a, b: jax.nn.relu(x @ a) @ b,
                   [(x8, m2, P('x', None)), (wa, m2, P(None, 'y')), (wb, m2, P('y', None))])
    c['add_conflict'] = (lambda u, v: u + v, [(rng(5, (4, n)), m2, P('x', 'y')), (rng(6, (4, n)), m2, P('y', None))])
    c['sum0'] = (lambda u: u.sum(0), [(rng(7, (4, n)), m2, P('x', 'y'))])
    c['sum1'] = (lambda u: (u * u).sum(1), [(rng(7, (4, n)), m2, P('x', 'y'))])
    c['max_all'] = (lambda u: u.max(), [(rng(8, (4, n)), m2, P('x', 'y'))])
    c['transpose'] = (lambda u: u.T * 2, [(rng(9, (4, n)), m2, P('x', 'y'))])
    c['reshape_merge'] = (lambda u: u.reshape(-1), [(rng(10, (4, n)), m2, P('x', 'y'))])
    c['reshape_split'] = (lambda u: u.reshape(2, 2, n), [(rng(11, (4, n)), m2, P('x', 'y'))])
    c['broadcast'] = (lambda u: u[None] * jnp.ones((3, 1, 1)), [(rng(12, (4, n)), m2, P('x', 'y'))])
    c['concat'] = (lambda u, v: jnp.concatenate([u, v], 0), [(rng(13, (4, n)), m2, P('x', 'y')), (rng(14, (4, n)), m2, P('y', None))])
    c['slice'] = (lambda u: u[:2, 1:], [(rng(15, (4, n)), m2, P('x', 'y'))])
    c['pad'] = (lambda u: jnp.pad(u, ((1, 1), (0, 0))), [(rng(16, (4, n)), m2, P('x', 'y'))])
    c['reverse'] = (lambda u: u[::-1], [(rng(17, (4, n)), m2, P('x', 'y'))])
    c['iota_add'] = (lambda u: u + jnp.arange(n, dtype=np.float32), [(rng(18, (4, n)), m2, P('x', 'y'))])
    c['const_mul'] = (lambda u: u * np.arange(4 * n, dtype=np.float32).reshape(4, n), [(rng(19, (4, n)), m2, P('x', 'y'))])
    c['gather_rows'] = (lambda t, i: t[i], [(rng(20, (2 * n, 6)), m1, P('d', None)), (np.arange(n, dtype=np.int32)[::-1] % (2 * n), m1, P())])
    c['gather_sharded_idx'] = (lambda t, i: t[i], [(rng(21, (2 * n, 6)), m1, P()), (np.arange(n, dtype=np.int32) * 2 % (2 * n), m1, P('d'))])
    c['scatter_add'] = (lambda t, i, u: t.at[i].add(u),
                        [(rng(22, (2 * n, 4)), m1, P('d', None)), (np.arange(n, dtype=np.int32) % 3, m1, P()),
                         (rng(23, (n, 4)), m1, P())])
    c['scatter_set_cols'] = (lambda t, u: t.at[:, 1].set(u), [(rng(24, (n, 4)), m1, P('d', None)), (rng(25, (n,)), m1, P('d'))])
    c['sort'] = (lambda u: jnp.sort(u, axis=1), [(rng(26, (n, 8)), m2, P('x', 'y'))])
    c['cumsum'] = (lambda u: jnp.cumsum(u, axis=0), [(rng(27, (4, n)), m2, P('x', 'y'))])
    c['conv'] = (lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), 'SAME'),
                 [(rng(28, (n, 3, 8, 8)), m1, P('d')), (rng(29, (4, 3, 3, 3)), m1, P())])
    c['while_loop'] = (lambda u: jax.lax.fori_loop(0, 3, lambda k, t: jnp.sin(t) + k, u), [(rng(30, (4, n)), m2, P('x', 'y'))])
    c['cond'] = (lambda u: jax.lax.cond(u.sum() > 0, lambda t: t * 2, lambda t: t - 1, u), [(rng(31, (4, n)), m2, P('x', 'y'))])
    c['softmax'] = (lambda u: jax.nn.softmax(u, axis=-1), [(rng(32, (2 * n, 8)), m2, P('x', None))])
    c['dot_batch'] = (lambda a, b: jnp.einsum('bij,bjk->bik', a, b),
                      [(rng(33, (n, 4, 6)), m1, P('d')), (rng(34, (n, 6, 2)), m1, P('d'))])
    # a batch of triangular solves split over the batch: each device solves its own (as XLA)
    tri = np.tril(rng(48, (n, 6, 6))) + 4 * np.eye(6, dtype=np.float32)
    c['triangular_solve_batch'] = (
        lambda a, b: jax.lax.linalg.triangular_solve(a, b, lower=True, transpose_a=True),
        [(tri, m1, P('d')), (rng(49, (n, 4, 6)), m1, P('d'))])
    # an update of part of a sharded dimension at a global offset (a mutable array's x[1] += 5)
    c['dus_sharded'] = (lambda x, u: jax.lax.dynamic_update_slice(x, u * 2, (1,)),
                        [(rng(50, (2 * n,)), m1, P('d')), (rng(51, (2,)), m1, P())])
    # sharding groups (jax.experimental.shard_alike): a constant expression and a matmul's
    # result take the shardings of the values they are grouped with
    from jax.experimental.shard_alike import shard_alike

    def alike(u):
        _, v = shard_alike(u, u * 2)
        z = v @ v.T
        return shard_alike(z, jnp.arange(z.size, dtype=z.dtype).reshape(z.shape) + 1)

    c['shard_alike'] = (alike, [(rng(52, (2 * n, 4)), m2, P('x', 'y'))])
    c['shard_alike_const'] = (lambda u: shard_alike(u, jnp.ones_like(u) * 3)[1] + u,
                              [(rng(53, (4, n)), m2, P(None, 'y'))])
    c['reversed_mesh'] = (lambda u, v: (u @ v).sum(0), [(rng(35, (4, n)), m2r, P('x', 'y')), (rng(36, (n, 6)), m2r, P('y', None))])
    c['unspecified_input'] = (lambda u, v: u * v, [(rng(37, (4, n)), m2, P('x', 'y')), (rng(38, (4, n)), None, None)])
    c['constraint'] = (lambda u: jax.lax.with_sharding_constraint(u * 2, NamedSharding(m2, P(None, 'x'))) + 1,
                       [(rng(39, (4, n)), m2, P('x', 'y'))])
    # a constraint over another mesh of the same devices (d = x * y)
    c['two_meshes'] = (lambda u: jax.lax.with_sharding_constraint(jnp.sin(u), NamedSharding(m1, P(None, 'd'))) * 2,
                       [(rng(47, (4, n)), m2, P('x', 'y'))])
    c['two_outputs'] = (lambda u: (u.sum(0), u * 3), [(rng(40, (4, n)), m2, P('x', 'y'))])

    # an MLP training step, parameters sharded over a 2 x (n/2) mesh (x: batch/FSDP, y: model)
    def loss(params, x, y):
        h = jax.nn.relu(x @ params['w1'] + params['b1'])
        out = h @ params['w2'] + params['b2']
        return jnp.mean((out - y) ** 2)

    def step(w1, b1, w2, b2, x, y):
        params = {'w1': w1, 'b1': b1, 'w2': w2, 'b2': b2}
        l, g = jax.value_and_grad(loss)(params, x, y)
        new = jax.tree_util.tree_map(lambda p, q: p - 0.1 * q, params, g)
        return l, new['w1'], new['b1'], new['w2'], new['b2']

    hid = 4 * n
    c['mlp_train_step'] = (step, [(rng(41, (8, hid)), m2, P('x', 'y')), (rng(42, (hid,)), m2, P('y')),
                                  (rng(43, (hid, 4)), m2, P('y', 'x')), (rng(44, (4,)), m2, P()),
                                  (rng(45, (4 * n, 8)), m2, P('x', None)), (rng(46, (4 * n, 4)), m2, P('x', None))])
    return c


def unreduced(platform):
    """Partial sums kept unreduced (explicit axes): each device's shard and the resharded sum."""
    from jax.sharding import AxisType
    devs = jax.devices(platform)
    mesh = jax.make_mesh((2, NDEV // 2), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2, devices=devs)
    out = {}
    a_np = rng(50, (4, 4 * NDEV))
    b_np = rng(51, (4 * NDEV, 3))
    with jax.set_mesh(mesh):
        a = jax.device_put(a_np, P('x', 'y'))
        b = jax.device_put(b_np, P('y', None))
        fns = {
            'dot_unreduced': lambda a, b: jnp.dot(a, b, out_sharding=P('x', None, unreduced={'y'})),
            'dot_reduced': lambda a, b: jax.sharding.reshard(
                jnp.dot(a, b, out_sharding=P('x', None, unreduced={'y'})), P('x', None)),
            'rowsum_unreduced': lambda a, b: jnp.einsum('ij->i', a, out_sharding=P('x', unreduced={'y'})),
            # a sharded value made unreduced: each device keeps its block in place, zeros
            # elsewhere; a replicated one: the origin keeps it
            'sharded_to_unreduced': lambda a, b: jax.sharding.reshard(a, P('x', None, unreduced={'y'})),
            'replicated_to_unreduced': lambda a, b: jax.sharding.reshard(b, P(None, None, unreduced={'x'})),
            # a scatter-add whose updates are split: partial counts per device
            'bincount_unreduced': lambda a, b: jnp.bincount(
                (jnp.abs(jax.sharding.reshard(a, P(None, ('x', 'y')))[0]) * 3).astype(jnp.int32) % 5,
                length=5, out_sharding=P(unreduced={'x', 'y'})),
        }
        for name, fn in fns.items():
            try:
                r = jax.jit(fn)(a, b)
                shards = sorted([s.device.id, np.asarray(s.data).tolist()] for s in r.addressable_shards)
                full = np.asarray(jax.sharding.reshard(r, P()) if 'unreduced' in str(r.sharding.spec) else r)
                out[name] = {'spec': str(r.sharding.spec), 'shards': shards, 'full': full.tolist()}
            except Exception as e:  # the test reports it
                out[name] = 'ERROR: ' + type(e).__name__ + ': ' + str(e)[:600]
    return out, a_np, b_np


def run(platform):
    out = {}
    m1, m2, m2r = meshes(platform)
    for name, (fn, args) in cases(m1, m2, m2r).items():
        try:
            placed = [jax.device_put(a, NamedSharding(m, s)) if m is not None else a for a, m, s in args]
            f = jax.jit(fn)
            res = f(*placed)
            leaves = jax.tree_util.tree_leaves(res)
            compiled = f.lower(*placed).compile()
            ins = [str(s.spec) if hasattr(s, 'spec') else repr(s) for s in compiled.input_shardings[0]]
            out[name] = {
                'out_specs': [str(r.sharding.spec) if hasattr(r.sharding, 'spec') else repr(r.sharding) for r in leaves],
                'in_specs': ins,
                'values': [np.asarray(r).tolist() for r in leaves],
            }
        except Exception as e:  # the test reports it
            out[name] = 'ERROR: ' + type(e).__name__ + ': ' + str(e)[:600]
    return out


if __name__ == '__main__':
    result = {'anvil': run('anvil'), 'cpu': run('cpu'),
              'unreduced_anvil': unreduced('anvil')[0], 'unreduced_cpu': unreduced('cpu')[0]}
    print(json.dumps(result))
