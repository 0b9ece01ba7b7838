"""Several anvil devices (ANVIL_DEVICE_COUNT=4): pmap, shard_map and sharded jit with
collectives, checked against numpy and against JAX's CPU backend forced to 4 devices.

Each check runs JAX in a subprocess (the device count is fixed when the backend starts)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

CASES = r"""
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax import shard_map

def cases(platform):
    devs = jax.devices(platform)
    assert len(devs) == 4, devs
    out = {}
    def rec(name, fn):
        try:
            out[name] = np.asarray(fn()).tolist()
        except Exception as e:  # recorded, the test reports it
            out[name] = "ERROR: " + type(e).__name__ + ": " + str(e)[:400]
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    pm = lambda f: jax.pmap(f, axis_name='i', devices=devs)
    rec("psum", lambda: pm(lambda v: v + jax.lax.psum(v, 'i'))(x))
    rec("pmean", lambda: pm(lambda v: jax.lax.pmean(v, 'i'))(x))
    rec("pmax", lambda: pm(lambda v: jax.lax.pmax(v, 'i'))(x))
    rec("all_gather", lambda: pm(lambda v: jax.lax.all_gather(v, 'i'))(x))
    rec("ppermute", lambda: pm(lambda v: jax.lax.ppermute(v, 'i', [(k, (k + 1) % 4) for k in range(4)]))(x))
    rec("axis_index", lambda: pm(lambda v: v * jax.lax.axis_index('i'))(x))
    rec("psum_scatter", lambda: pm(lambda v: jax.lax.psum_scatter(jnp.tile(v, 2), 'i', tiled=True))(x))
    rec("all_to_all", lambda: pm(lambda v: jax.lax.all_to_all(jnp.arange(4.0) + 10 * v[0], 'i', 0, 0, tiled=True))(x))
    mesh = Mesh(np.array(devs).reshape(2, 2), ('x', 'y'))
    m1 = Mesh(np.array(devs), ('d',))
    b = np.arange(32, dtype=np.float32).reshape(8, 4) / 7
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    sm = shard_map(lambda t: jax.lax.psum(t, 'y'), mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', None))
    rec("shard_map_psum_y", lambda: jax.jit(sm)(a))
    sm2 = shard_map(lambda t: jax.lax.psum(t, 'x') * 2, mesh=mesh, in_specs=P('x', 'y'), out_specs=P(None, 'y'))
    rec("jit_around_shard_map", lambda: jax.jit(lambda v: jnp.sin(sm2(v * 3) + 1))(a))
    # only x manual (y stays automatic); the reducer carries a sharding constraint
    sm3 = shard_map(lambda t: jax.lax.psum(t, 'x'), mesh=mesh, in_specs=P('x'), out_specs=P(), axis_names={'x'})
    rec("partial_manual_psum_x", lambda: jax.jit(sm3)(a))
    rec("pmap_two_devices", lambda: jax.pmap(lambda v: jax.lax.psum(v, 'i'), axis_name='i', devices=devs[:2])(x[:2]))
    # 300 operands: the manual computation's sharding list is tens of kB of text
    rec("pmap_many_args", lambda: jax.pmap(lambda args: sum(args), devices=devs)(
        [np.full(4, i, np.float32) for i in range(300)]))
    rec("fori_loop_psum", lambda: pm(lambda v: jax.lax.fori_loop(0, 3, lambda k, c: c + jax.lax.psum(c, 'i'), v))(x))
    rec("psum_both_axes", lambda: jax.jit(shard_map(lambda t: jax.lax.psum(t, ('x', 'y')), mesh=mesh,
                                                    in_specs=P('x', 'y'), out_specs=P()))(a))
    # collectives started and finished apart (stablehlo.async_start / async_done): the
    # same values as the plain ones (JAX's async_collectives_test)
    from jax._src.lax import parallel as par
    if hasattr(par, "psum_start"):
        rec("async_psum", lambda: jax.jit(shard_map(lambda t: par.psum_start(t * 2, 'x').done() + t,
                                                    mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y'),
                                                    check_vma=False))(a))
        rec("async_ppermute", lambda: jax.jit(shard_map(
            lambda t: par.ppermute_start(t, 'd', [(k, (k + 1) % 4) for k in range(4)]).done(),
            mesh=m1, in_specs=P('d'), out_specs=P('d')))(b))
    rec("ppermute_over_x", lambda: jax.jit(shard_map(lambda t: jax.lax.ppermute(t, 'x', [(0, 1), (1, 0)]),
                                                     mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y')))(a))
    rec("all_to_all_over_y", lambda: jax.jit(shard_map(lambda t: jax.lax.all_to_all(t, 'y', 0, 1, tiled=True),
                                                       mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y')))(a))
    rec("axis_index_2d", lambda: jax.jit(shard_map(
        lambda t: t * 0 + jax.lax.axis_index('x') * 10 + jax.lax.axis_index('y'),
        mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y')))(np.zeros((4, 4), np.float32)))
    c = np.arange(16, dtype=np.float32).reshape(4, 4) / 5
    xb = jax.device_put(b, NamedSharding(m1, P('d', None)))
    xc = jax.device_put(c, NamedSharding(m1, P()))
    r = jax.jit(lambda u, w: jnp.tanh(u @ w))(xb, xc)
    out["matmul"] = np.asarray(r).tolist()
    span = lambda idx, dims: [[sl.start or 0, dims[k] if sl.stop is None else sl.stop] for k, sl in enumerate(idx)]
    out["matmul_shards"] = [[s.device.id, span(s.index, r.shape), np.asarray(s.data).tolist()]
                            for s in r.addressable_shards]
    ys = jax.device_put(a, NamedSharding(mesh, P('x', 'y')))
    rec("sharded_reduce", lambda: jax.jit(lambda v: (v * v).sum(axis=0))(ys))
    r2 = jax.jit(lambda v: v + 1, out_shardings=NamedSharding(mesh, P('y', 'x')))(ys)
    out["resharded_shards"] = [[s.device.id, np.asarray(s.data).tolist()] for s in r2.addressable_shards]
    moved = jax.device_put(a, devs[2])
    out["device_put"] = [sorted(d.id for d in moved.devices()), np.asarray(moved * 2).tolist()]
    out["device_get"] = np.asarray(jax.device_get(ys)).tolist()
    # a replicated argument of a jit'ed shard_map: the program splits it itself, and the
    # compiled executable must report the replicated sharding JAX asked for
    rep = jax.device_put(b, NamedSharding(m1, P()))
    rec("replicated_into_shard_map", lambda: jax.jit(shard_map(
        lambda t: jax.lax.ppermute(t * 2, 'd', [(k, (k + 1) % 4) for k in range(4)]),
        mesh=m1, in_specs=P('d'), out_specs=P('d')))(rep))
    yv = np.pi + np.arange(4, dtype=np.float32)
    rec("pmap_ppermute_grad", lambda: jax.grad(lambda v: jnp.sum(yv * jax.pmap(
        lambda t: jax.lax.ppermute(t, 'i', [(k, (k + 1) % 4) for k in range(4)]),
        'i', devices=devs)(v)))(np.arange(4, dtype=np.float32)))
    # unreduced (partial-sum) values: a shard_map output left unreduced over y keeps each
    # device's partial product; resharding it sums them
    emesh = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(jax.sharding.AxisType.Explicit,) * 2,
                          devices=devs)
    try:
        with jax.set_mesh(emesh):
            l = np.arange(8.0, dtype=np.float32).reshape(2, 4)
            rr = np.arange(8.0, dtype=np.float32).reshape(4, 2) - 3
            la, ra = jax.device_put(l, P('x', 'y')), jax.device_put(rr, P('y', None))
            mm = jax.jit(shard_map(lambda u, w: u @ w, in_specs=(P('x', 'y'), P('y', None)),
                                   out_specs=P('x', None, unreduced={'y'})))
            o = mm(la, ra)
            out["unreduced_shards"] = [[s.device.id, np.asarray(s.data).tolist()]
                                       for s in o.addressable_shards]
            out["unreduced_resharded"] = np.asarray(jax.sharding.reshard(o, P('x', None))).tolist()
            u = jax.reshard(jnp.arange(8.0, dtype=np.float32), P(unreduced={'x'}))
            out["unreduced_in_psum_scatter"] = np.asarray(shard_map(
                lambda t: jax.lax.psum_scatter(t, 'x', tiled=True), out_specs=P('x'))(u)).tolist()
    except Exception as e:
        out["unreduced_shards"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:400]
    # the gradient of a jit'ed shard_map comes back through a func.call: XLA's propagation
    # gives it the manual computation's sharding
    fj = jax.jit(shard_map(lambda t: jax.lax.all_gather(t, 'd', tiled=True), mesh=m1,
                           in_specs=P('d'), out_specs=P(), check_vma=False))
    try:
        gr = jax.jit(jax.grad(lambda v: fj(v).sum()))(jnp.arange(8.0, dtype=np.float32))
        out["grad_sharding"] = [str(gr.sharding.spec), np.asarray(gr).tolist()]
    except Exception as e:
        out["grad_sharding"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:400]
    # a shard_map without outputs (one sharding for the empty result tuple)
    rec("no_outputs", lambda: [len(jax.jit(shard_map(lambda: (), mesh=m1, in_specs=(),
                                                     out_specs=()))())])
    # a partly manual shard_map (y manual) whose region constrains its result over x: the
    # program's result keeps that sharding, as XLA's propagation does
    xs = NamedSharding(mesh, P('x'))
    pa = jax.jit(shard_map(lambda t: jax.lax.with_sharding_constraint(t * t, xs), mesh=mesh,
                           in_specs=P(), out_specs=P(), check_vma=False, axis_names=frozenset({'y'})))
    try:
        r3 = pa(jax.device_put(a, xs))
        out["partial_auto_constraint"] = [str(r3.sharding.spec), np.asarray(r3).tolist()]
    except Exception as e:
        out["partial_auto_constraint"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:400]
    # axis_index in a partly manual shard_map: JAX nests a manual computation over the other
    # axis; each device's value is its own
    try:
        with jax.set_mesh(mesh):
            ai = jax.jit(shard_map(lambda: jax.lax.axis_index('x').reshape(1, 1), in_specs=(),
                                   out_specs=P('x', None), check_vma=False, axis_names=frozenset({'x'})),
                         out_shardings=NamedSharding(mesh, P('x', None)))()
        out["nested_axis_index"] = np.asarray(ai).tolist()
    except Exception as e:
        out["nested_axis_index"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:400]
    # the text view of a compiled shard_map: a string or None, never an error
    try:
        txt = jax.jit(sm).lower(a).compile().as_text()
        out["compiled_as_text"] = type(txt).__name__
    except Exception as e:
        out["compiled_as_text"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:400]
    # jit(identity) returns a new buffer unless the argument is donated (as XLA does)
    z = jax.device_put(np.arange(6.0, dtype=np.float32), devs[0])
    same = jax.jit(lambda t: t)(z)
    out["identity_fresh_buffer"] = [same.unsafe_buffer_pointer() != z.unsafe_buffer_pointer(),
                                    np.asarray(same).tolist()]
    return out

print(json.dumps({p: cases(p) for p in sys.argv[1:]}))
"""


def _env():
    env = dict(os.environ)
    env.update({"ANVIL_DEVICE_COUNT": "4", "JAX_PLATFORMS": "anvil,cpu",
                "XLA_FLAGS": (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()})
    return env


@pytest.fixture(scope="module")
def results():
    out = subprocess.run([sys.executable, "-c", CASES, "anvil", "cpu"], env=_env(),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_seed_pmap_psum_prints_exactly():
    code = ("import jax, jax.numpy as jnp; arr=jnp.arange(jax.device_count()); "
            "print(jax.pmap(lambda x: x + jax.lax.psum(x, 'i'), axis_name='i')(arr))")
    env = dict(os.environ, ANVIL_DEVICE_COUNT="4", JAX_PLATFORMS="anvil")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.strip().splitlines()[-1] == "[6 7 8 9]"


X = np.arange(8, dtype=np.float32).reshape(4, 2)
A = np.arange(16, dtype=np.float32).reshape(4, 4)


def _numpy_expected():
    e = {}
    total = X.sum(axis=0)
    e["psum"] = X + total
    e["pmean"] = np.tile(X.mean(axis=0), (4, 1))
    e["pmax"] = np.tile(X.max(axis=0), (4, 1))
    e["all_gather"] = np.stack([X] * 4)
    e["ppermute"] = np.roll(X, 1, axis=0)
    e["axis_index"] = X * np.arange(4)[:, None]
    tiled = np.tile(X, (1, 2)).sum(axis=0)  # device k keeps element k
    e["psum_scatter"] = tiled[:, None]
    src = np.arange(4.0)[None, :] + 10 * X[:, :1]  # device i's vector
    e["all_to_all"] = src.T
    blocks = A.reshape(2, 2, 2, 2)  # (x, r, y, c)
    e["shard_map_psum_y"] = blocks.sum(axis=2).reshape(4, 2)
    e["jit_around_shard_map"] = np.sin((3 * A).reshape(2, 2, 4).sum(axis=0) * 2 + 1)
    e["partial_manual_psum_x"] = A[:2] + A[2:]
    e["pmap_two_devices"] = np.tile(X[:2].sum(axis=0), (2, 1))
    c = X.copy()
    for _ in range(3):
        c = c + c.sum(axis=0)
    e["fori_loop_psum"] = c
    e["pmap_many_args"] = np.full(4, sum(range(300)), np.float32)
    e["nested_axis_index"] = np.array([[0], [1]])
    b = np.arange(32, dtype=np.float32).reshape(8, 4) / 7
    c = np.arange(16, dtype=np.float32).reshape(4, 4) / 5
    e["matmul"] = np.tanh(b @ c)
    e["sharded_reduce"] = (A * A).sum(axis=0)
    e["replicated_into_shard_map"] = np.roll(b.reshape(4, 2, 4), 1, axis=0).reshape(8, 4) * 2
    e["pmap_ppermute_grad"] = np.roll(np.pi + np.arange(4, dtype=np.float32), -1)
    # psum over x of 2 * (each device's 2x2 block), plus the block itself
    e["async_psum"] = np.tile(2 * (A[:2] + A[2:]), (2, 1)) + A
    e["async_ppermute"] = np.roll(b.reshape(4, 2, 4), 1, axis=0).reshape(8, 4)
    return e


EXPECTED = _numpy_expected()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_against_numpy(results, name):
    got = results["anvil"][name]
    assert not isinstance(got, str), got
    np.testing.assert_allclose(np.array(got), EXPECTED[name], rtol=1e-5, atol=1e-5)


CPU_ONLY = ["psum_both_axes", "ppermute_over_x", "all_to_all_over_y", "axis_index_2d"]


@pytest.mark.parametrize("name", sorted(EXPECTED) + CPU_ONLY)
def test_against_jax_cpu(results, name):
    cpu = results["cpu"][name]
    if isinstance(cpu, str):
        pytest.skip("JAX CPU cannot run this case: " + cpu)
    got = results["anvil"][name]
    assert not isinstance(got, str), got
    np.testing.assert_allclose(np.array(got), np.array(cpu), rtol=1e-5, atol=1e-5)


def test_sharded_matmul_shards_live_on_their_devices(results):
    full = EXPECTED["matmul"]
    shards = results["anvil"]["matmul_shards"]
    assert sorted(d for d, _, _ in shards) == [0, 1, 2, 3]
    for dev, span, data in shards:  # each device holds the block its sharding says
        block = full[tuple(slice(a, b) for a, b in span)]
        np.testing.assert_allclose(np.array(data), block, rtol=1e-5, atol=1e-6)


def test_output_sharding_requested_by_jit(results):
    # P('y', 'x') on the (x, y) = 2x2 mesh: device (x, y) = 2x + y holds rows 2y.., cols 2x..
    shards = dict((d, np.array(v)) for d, v in results["anvil"]["resharded_shards"])
    assert sorted(shards) == [0, 1, 2, 3]
    for dev, data in shards.items():
        x, y = divmod(dev, 2)
        np.testing.assert_array_equal(data, A[2 * y:2 * y + 2, 2 * x:2 * x + 2] + 1)
    cpu = dict((d, np.array(v)) for d, v in results["cpu"]["resharded_shards"])
    for dev in shards:
        np.testing.assert_array_equal(shards[dev], cpu[dev])


def test_device_put_and_get(results):
    ids, data = results["anvil"]["device_put"]
    assert ids == [2]
    np.testing.assert_array_equal(np.array(data), A * 2)
    np.testing.assert_array_equal(np.array(results["anvil"]["device_get"]), A)


def test_unspecified_output_sharding_follows_the_inputs_like_xla(results):
    # tanh(x @ w) with x split by rows: XLA's propagation keeps the rows split, so do we
    spans = lambda r: sorted((d, tuple(map(tuple, s))) for d, s, _ in r)
    assert spans(results["anvil"]["matmul_shards"]) == spans(results["cpu"]["matmul_shards"])
    assert len({s for _, s in spans(results["anvil"]["matmul_shards"])}) == 4


def test_unreduced_shard_map_output_keeps_partial_products(results):
    got = results["anvil"]["unreduced_shards"]
    assert not isinstance(got, str), got
    l = np.arange(8.0).reshape(2, 4)
    r = np.arange(8.0).reshape(4, 2) - 3
    # device (x, y) = 2x + y holds row x of l[:, 2y:2y+2] @ r[2y:2y+2]
    for dev, data in got:
        x, y = divmod(dev, 2)
        partial = l[x:x + 1, 2 * y:2 * y + 2] @ r[2 * y:2 * y + 2]
        np.testing.assert_allclose(np.array(data), partial)
    np.testing.assert_allclose(np.array(results["anvil"]["unreduced_resharded"]), l @ r)
    np.testing.assert_allclose(np.array(results["anvil"]["unreduced_in_psum_scatter"]),
                               np.arange(8.0))
    cpu = results["cpu"]["unreduced_shards"]
    if not isinstance(cpu, str):  # the same partials as XLA
        assert sorted(d for d, _ in cpu) == sorted(d for d, _ in got)
        for (dev, data), (cdev, cdata) in zip(sorted(got), sorted(cpu)):
            np.testing.assert_allclose(np.array(data), np.array(cdata))


def test_jit_identity_returns_a_new_buffer(results):
    fresh, data = results["anvil"]["identity_fresh_buffer"]
    assert fresh is True
    np.testing.assert_array_equal(np.array(data), np.arange(6.0))
    assert results["cpu"]["identity_fresh_buffer"][0] is True  # what XLA does


def test_shard_map_gradient_sharding_and_empty_outputs(results):
    got = results["anvil"]["grad_sharding"]
    assert not isinstance(got, str), got
    assert got[0] == "P('d',)"
    np.testing.assert_array_equal(np.array(got[1]), np.ones(8))  # f gathers x back: d sum = 1
    if not isinstance(results["cpu"]["grad_sharding"], str):
        assert results["cpu"]["grad_sharding"][0] == got[0]
    assert results["anvil"]["no_outputs"] == [0]


def test_compiled_shard_map_text_view_is_text_or_none(results):
    assert results["anvil"]["compiled_as_text"] in ("str", "NoneType"), results["anvil"]["compiled_as_text"]


def test_partial_manual_result_keeps_the_inner_constraint(results):
    got = results["anvil"]["partial_auto_constraint"]
    assert not isinstance(got, str), got
    assert got[0] == "P('x',)"
    np.testing.assert_array_equal(np.array(got[1]), A * A)
    if not isinstance(results["cpu"]["partial_auto_constraint"], str):
        assert results["cpu"]["partial_auto_constraint"][0] == got[0]
