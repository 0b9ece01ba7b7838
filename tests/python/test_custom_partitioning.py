"""jax.experimental.custom_partitioning on 4 anvil devices, against JAX's CPU backend forced to 4
devices in the same process: the values, the result shardings, and the shardings JAX's
partition callback is told must be XLA:CPU's.

Each check runs JAX in a subprocess (the device count is fixed when the backend starts); the
GSPMD case (Shardy off, an infer_sharding_from_operands callback instead of a sharding rule)
runs in its own, since the partitioner is chosen when JAX starts lowering."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

CASES = r"""
import json, sys
from functools import partial
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax.experimental.custom_partitioning import custom_partitioning, SdyShardingRule

gspmd = sys.argv[1] == "gspmd"
if gspmd:
    jax.config.update("jax_use_shardy_partitioner", False)

def cases(platform):
    devs = jax.devices(platform)
    assert len(devs) == 4, devs
    out = {}
    seen = []  # what the partition callbacks are told, in call order

    def rec(name, fn):
        try:
            r = fn()
            leaves = jax.tree.leaves(r)
            out[name] = {"values": [np.asarray(v).tolist() for v in leaves],
                         "specs": [str(v.sharding.spec) for v in leaves]}
        except Exception as e:  # recorded, the test reports it
            out[name] = "ERROR: " + type(e).__name__ + ": " + str(e)[:2000]

    mesh = Mesh(np.array(devs).reshape(2, 2), ('x', 'y'))
    m1 = Mesh(np.array(devs), ('d',))
    xv = np.arange(64, dtype=np.float32).reshape(8, 8) / 9
    yv = (np.arange(64, dtype=np.float32).reshape(8, 8) % 7) - 3

    # a matmul partitioned by hand, with a psum inside and two results (a tuple). Shardy: x's
    # rows over x, y's rows over y on a 2x2 mesh; each device multiplies its column block of
    # x by its block of y and psums over y. GSPMD (whose import keeps anvil to one device
    # order): x's columns and y's rows over d, psummed over d; infer splits the results by
    # rows, and each device keeps its rows of the sum.
    def mm_partition(mesh, arg_shapes, result_shape):
        arg_sh = jax.tree.map(lambda s: s.sharding, arg_shapes)
        res_sh = result_shape[0].sharding
        seen.append(["matmul", [str(s.spec) for s in arg_sh], [str(r.sharding.spec) for r in result_shape]])
        def lower_fn(x, y):
            if gspmd:
                z = jax.lax.dynamic_slice_in_dim(jax.lax.psum(x @ y, 'd'), jax.lax.axis_index('d') * 2, 2)
            else:
                i = jax.lax.axis_index('y')
                z = jax.lax.psum(jax.lax.dynamic_slice(x, (i * 0, i * 4), (4, 4)) @ y, 'y')
            return z, z * z
        return mesh, lower_fn, (res_sh, res_sh), arg_sh

    def mm_infer(mesh, arg_shapes, result_shape):
        seen.append(["infer", [str(a.sharding.spec) for a in arg_shapes]])
        s = NamedSharding(arg_shapes[0].sharding.mesh, P('d', None))
        return s, s

    @custom_partitioning
    def mm(x, y):
        z = x @ y
        return z, z * z

    if gspmd:
        mm.def_partition(partition=mm_partition, infer_sharding_from_operands=mm_infer)
        xs = jax.device_put(xv, NamedSharding(m1, P(None, 'd')))
        ys = jax.device_put(yv, NamedSharding(m1, P('d')))
    else:
        mm.def_partition(partition=mm_partition,
                         sharding_rule=SdyShardingRule(operand_mappings=(('i', 'j'), ('j', 'k')),
                                                       result_mappings=(('i', 'k'), ('i', 'k'))))
        xs = jax.device_put(xv, NamedSharding(mesh, P('x')))
        ys = jax.device_put(yv, NamedSharding(mesh, P('y')))
    rec("matmul_psum_tuple", lambda: jax.jit(mm)(xs, ys))
    rec("matmul_then_more", lambda: jax.jit(lambda a, b: jnp.tanh(mm(a, b)[1] / 1000) + 1)(xs, ys))
    # anvil serializes programs as given, which name their partitioner by a key of this
    # process (what JAX's persistent cache does with an executable)
    try:
        jax.jit(mm).lower(xs, ys).compile().runtime_executable().serialize()
        out["serialize"] = "ok"
    except Exception as e:
        out["serialize"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:2000]

    # a partitioner that wants its operand whole and gives a whole result (resharding around it)
    def whole_partition(mesh, arg_shapes, result_shape):
        seen.append(["whole", [str(a.sharding.spec) for a in arg_shapes], str(result_shape.sharding.spec)])
        whole = NamedSharding(arg_shapes[0].sharding.mesh, P())
        return mesh, lambda v: jnp.cumsum(v, axis=0), whole, (whole,)

    @custom_partitioning
    def cumsum0(v):
        return jnp.cumsum(v, axis=0)

    if gspmd:
        cumsum0.def_partition(partition=whole_partition,
                              infer_sharding_from_operands=lambda mesh, a, r: a[0].sharding)
    else:
        cumsum0.def_partition(partition=whole_partition, sharding_rule='i j -> i j',
                              need_replication_factors=('i',))
    ds = jax.device_put(xv, NamedSharding(m1, P('d')))
    rec("resharded_around", lambda: jax.jit(cumsum0, out_shardings=NamedSharding(m1, P('d')))(ds))

    if not gspmd:
        # no rule and no propagation callbacks: the result's sharding comes from its users
        def sin_partition(mesh, arg_shapes, result_shape):
            seen.append(["no_rule", [str(a.sharding.spec) for a in arg_shapes], str(result_shape.sharding.spec)])
            return mesh, jnp.sin, result_shape.sharding, (arg_shapes[0].sharding,)

        @custom_partitioning
        def mysin(v):
            return jnp.sin(v)

        mysin.def_partition(partition=sin_partition)
        rec("no_rule", lambda: jax.jit(mysin, out_shardings=NamedSharding(m1, P('d')))(ds))

    # a partitioner whose result sharding does not fit what its function computes: JAX's
    # own check raises, and its message must reach the user
    def bad_partition(mesh, arg_shapes, result_shape):
        s = arg_shapes[0].sharding
        return mesh, lambda v: v, NamedSharding(s.mesh, P()), (NamedSharding(s.mesh, P(None, 'd')),)

    @custom_partitioning
    def ident(v):
        return v

    if gspmd:
        ident.def_partition(partition=bad_partition,
                            infer_sharding_from_operands=lambda mesh, a, r: a[0].sharding)
    else:
        ident.def_partition(partition=bad_partition, sharding_rule='i j -> i j')
    rec("invalid_sharding", lambda: jax.jit(ident)(ds))
    out["seen"] = seen
    return out

print(json.dumps({p: cases(p) for p in sys.argv[2:]}))
"""


def _run(mode):
    env = dict(os.environ)
    env.update({"ANVIL_DEVICE_COUNT": "4", "JAX_PLATFORMS": "anvil,cpu",
                "XLA_FLAGS": (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()})
    out = subprocess.run([sys.executable, "-c", CASES, mode, "anvil", "cpu"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=["shardy", "gspmd"])
def results(request):
    return request.param, _run(request.param)


XV = np.arange(64, dtype=np.float32).reshape(8, 8) / 9
YV = (np.arange(64, dtype=np.float32).reshape(8, 8) % 7) - 3


def _numpy(name):
    z = XV @ YV
    return {"matmul_psum_tuple": [z, z * z],
            "matmul_then_more": [np.tanh(z * z / 1000) + 1],
            "resharded_around": [np.cumsum(XV, axis=0)],
            "no_rule": [np.sin(XV)]}[name]


NAMES = ["matmul_psum_tuple", "matmul_then_more", "resharded_around", "no_rule"]


@pytest.mark.parametrize("name", NAMES)
def test_values_and_shardings_equal_xla_cpu(results, name):
    mode, r = results
    if name not in r["anvil"]:
        pytest.skip(f"{name}: not a {mode} case")
    got, cpu = r["anvil"][name], r["cpu"][name]
    assert not isinstance(got, str), got
    assert not isinstance(cpu, str), cpu
    for g, c, want in zip(got["values"], cpu["values"], _numpy(name)):
        np.testing.assert_allclose(np.array(g), want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.array(g), np.array(c), rtol=1e-5, atol=1e-5)
    assert got["specs"] == cpu["specs"]


def test_partition_is_told_what_xla_tells_it(results):
    mode, r = results
    # XLA:CPU may ask again for programs it compiles twice; anvil's first answers must match
    got = r["anvil"]["seen"]
    cpu = [s for i, s in enumerate(r["cpu"]["seen"]) if s not in r["cpu"]["seen"][:i]]
    assert [s for i, s in enumerate(got) if s not in got[:i]] == cpu
    assert any(s[0] == "matmul" for s in got)
    if mode == "gspmd":
        assert any(s[0] == "infer" for s in got)


def test_serializing_is_refused_with_the_reason(results):
    _, r = results
    assert r["cpu"]["serialize"] == "ok", r["cpu"]["serialize"]
    assert r["anvil"]["serialize"].startswith("ERROR"), r["anvil"]["serialize"]
    assert "custom partitioner" in r["anvil"]["serialize"], r["anvil"]["serialize"]


def test_invalid_sharding_message_reaches_the_user(results):
    _, r = results
    assert r["cpu"]["invalid_sharding"].startswith("ERROR"), r["cpu"]["invalid_sharding"]
    assert "Mismatch in result shapes." in r["anvil"]["invalid_sharding"], r["anvil"]["invalid_sharding"]
