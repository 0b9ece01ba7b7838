"""Users' custom ops through jax.ffi on anvil (python/anvil_pjrt/_jax_ffi.py, src/runtime/ffi/).

The C11 handlers of tests/c/ffi/ffi_handlers.c are compiled here into a shared library
(skipped without a C compiler) and registered with jax.ffi.register_ffi_target for "cpu": JAX's
CPU backend (beside anvil, conftest) runs the very same handlers, so every result on anvil is
compared with XLA:CPU's. Scenarios JAX_PLATFORMS=anvil alone must cover (a registration
queued before anvil starts, several devices) run in a subprocess."""

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jax
import jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
HANDLERS_SRC = os.path.join(HERE, "..", "c", "ffi", "ffi_handlers.c")


def _compiler():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


@pytest.fixture(scope="module")
def handlers_path(tmp_path_factory):
    cc = _compiler()
    if cc is None:
        pytest.skip("no C compiler to build the FFI test handlers")
    out = str(tmp_path_factory.mktemp("ffi") / "libffi_test_handlers.so")
    subprocess.run([cc, "-std=c11", "-O1", "-shared", "-fPIC", "-D_GNU_SOURCE", "-pthread",
                    "-I", jax.ffi.include_dir(), HANDLERS_SRC, "-o", out], check=True)
    return out


def _capsule(address, name=b"xla._CUSTOM_CALL_TARGET"):
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(address, name, None)


def _fn(lib, name):
    return _capsule(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)


def _data(lib, name):
    return _capsule(ctypes.addressof(ctypes.c_int64.in_dll(lib, name)))


TYPED = ("attrs_echo", "describe", "copy", "scale_in_place", "fail", "ids", "pool_sum",
         "async_add_one", "row_sum")
LEGACY = ("legacy_add", "legacy_two")


def _register_all(lib):
    for name in TYPED:
        jax.ffi.register_ffi_target(f"t_{name}", _fn(lib, f"ffi_test_{name}"), platform="cpu")
    for name in LEGACY:
        jax.ffi.register_ffi_target(f"t_{name}", _fn(lib, f"ffi_test_{name}"), platform="cpu",
                                    api_version=0)
    jax.ffi.register_ffi_type("t_counter_state", {
        "type_id": _data(lib, "ffi_test_counter_type"),
        "type_info": _capsule(ctypes.addressof(ctypes.c_char.in_dll(lib, "ffi_test_counter_type_info")))})
    jax.ffi.register_ffi_target("t_counter", {
        "instantiate": _fn(lib, "ffi_test_counter_instantiate"),
        "execute": _fn(lib, "ffi_test_counter_execute")}, platform="cpu")


@pytest.fixture(scope="module")
def lib(handlers_path):
    lib = ctypes.CDLL(handlers_path)
    _register_all(lib)
    return lib


def on_both(f, *args, **kwargs):
    """f jitted on anvil and on XLA:CPU, results as numpy."""
    out = []
    for platform in ("anvil", "cpu"):
        dev = jax.devices(platform)[0]
        a = [jax.device_put(x, dev) for x in args]
        out.append(jax.tree.map(np.asarray, jax.jit(f, **kwargs)(*a)))
    return out


def test_attributes_as_xla_cpu_sees_them(lib):
    def f():
        return jax.ffi.ffi_call("t_attrs_echo", jax.ShapeDtypeStruct((512,), jnp.uint8))(
            zeta="z", b=True, i=np.int32(-5), big=2**40, u8=np.uint8(200), u64=np.uint64(7),
            f32=np.float32(0.5), f64=2.5, arr=np.arange(4, dtype=np.int16),
            arrf=np.array([1.5, -2.0], np.float32), mat=np.ones((2, 2), np.int64),
            d={"y": np.int8(1), "c": "in", "b": np.float64(3)}, s="text")
    a, c = on_both(f)
    text = bytes(a).split(b"\0")[0].decode()
    assert text == bytes(c).split(b"\0")[0].decode()
    assert text.startswith("arr=a3[0 1 2 3],arrf=a11[1.5 -2],b=s1:true,big=s5:1099511627776,")
    assert "d={b=s12:3,c='in',y=s2:1}" in text


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "uint64", "float16",
                                   "bfloat16", "float32", "float64", "complex64",
                                   "complex128", "float8_e4m3fn", "int4"])
def test_every_element_type(lib, dtype):
    dt = jnp.dtype(dtype)
    x = (np.arange(24) % 2).reshape(2, 3, 4).astype(dt)
    a, c = on_both(lambda v: jax.ffi.ffi_call("t_copy", jax.ShapeDtypeStruct(v.shape, v.dtype))(v), x)
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(a, x)


def test_layouts_tokens_and_descriptions(lib):
    def f(x):
        return jax.ffi.ffi_call(
            "t_describe", (jax.ShapeDtypeStruct((64,), jnp.int64), jax.ShapeDtypeStruct((6,), jnp.float32)),
            input_layouts=[(1, 0)])(x)  # major-to-minor: column-major
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a, c = on_both(f, x)
    np.testing.assert_array_equal(a[0], c[0])
    np.testing.assert_array_equal(a[1], [0, 3, 1, 4, 2, 5])  # x's bytes in column-major order
    np.testing.assert_array_equal(a[1], c[1])


def test_aliasing_keeps_the_operand(lib):
    def f(x):
        y = jax.ffi.ffi_call("t_scale_in_place", jax.ShapeDtypeStruct(x.shape, x.dtype),
                             input_output_aliases={0: 0})(x)
        return y, x + 1
    x = np.array([1.0, -2.0, 3.0], np.float32)
    a, c = on_both(f, x)
    np.testing.assert_array_equal(a[0], x * 2)
    np.testing.assert_array_equal(a[1], x + 1)
    np.testing.assert_array_equal(a[0], c[0])


def test_targets_registered_for_anvil_itself(lib, anvil_device):
    jax.ffi.register_ffi_target("t_copy_anvil", _fn(lib, "ffi_test_copy"), platform="anvil")
    x = jax.device_put(np.arange(3, dtype=np.int32), anvil_device)
    y = jax.jit(lambda v: jax.ffi.ffi_call("t_copy_anvil", jax.ShapeDtypeStruct(v.shape, v.dtype))(v))(x)
    np.testing.assert_array_equal(y, [0, 1, 2])
    # a name nobody registered still answers UNIMPLEMENTED, at compile time
    with pytest.raises(Exception, match="UNIMPLEMENTED.*@t_nobody is not supported"):
        jax.jit(lambda v: jax.ffi.ffi_call("t_nobody", jax.ShapeDtypeStruct(v.shape, v.dtype))(v))(x)


def test_errors_raise_at_the_call(lib, anvil_device):
    f = jax.jit(lambda: jax.ffi.ffi_call("t_fail", jax.ShapeDtypeStruct((), jnp.int32),
                                         has_side_effect=True)(message="no way", code=np.int32(5)))
    with jax.default_device(anvil_device), \
            pytest.raises(Exception, match="NOT_FOUND: custom call @t_fail: no way"):
        f()


def test_state_counts_per_call_site(lib):
    def f():
        call = jax.ffi.ffi_call("t_counter", jax.ShapeDtypeStruct((), jnp.int64), has_side_effect=True)
        return call(start=np.int64(100)), call(start=np.int64(200))
    g = jax.jit(f)
    with jax.default_device(jax.devices("anvil")[0]):
        assert [int(v) for v in g()] == [101, 201]
        assert [int(v) for v in g()] == [102, 202]


def test_thread_pool_and_async(lib):
    x = np.linspace(0, 1, 1000)

    def f(v):
        s = jax.ffi.ffi_call("t_pool_sum", jax.ShapeDtypeStruct((), v.dtype))(v, nested=False)
        return s, jax.ffi.ffi_call("t_async_add_one", jax.ShapeDtypeStruct((3,), jnp.float32))(
            jnp.arange(3, dtype=jnp.float32))
    a, c = on_both(f, x)
    assert a[0] == c[0] == np.sum(x)
    np.testing.assert_array_equal(a[1], [1, 2, 3])
    np.testing.assert_array_equal(a[1], c[1])
    # tasks that schedule tasks and wait for them: anvil runs the inner ones on the waiting
    # worker (XLA:CPU's pool deadlocks on this, so there is no comparison)
    nested = jax.jit(lambda v: jax.ffi.ffi_call("t_pool_sum", jax.ShapeDtypeStruct((), v.dtype))(v, nested=True))
    assert nested(jax.device_put(x, jax.devices("anvil")[0])) == np.sum(x)


def test_legacy_custom_calls(lib):
    def f(x, y):
        s = jax.ffi.ffi_call("t_legacy_add", jax.ShapeDtypeStruct((4,), jnp.float32),
                             custom_call_api_version=1, legacy_backend_config="")(x, y)
        t, n = jax.ffi.ffi_call("t_legacy_two", (jax.ShapeDtypeStruct((4,), jnp.float32),
                                                 jax.ShapeDtypeStruct((), jnp.int32)),
                                custom_call_api_version=1, legacy_backend_config="")(x)
        return s, t, n
    x = np.arange(4, dtype=np.float32)
    a, c = on_both(f, x, x + 0.5)
    for u, v in zip(a, c):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a[0], 2 * x + 0.5)
    assert a[2] == 7


def test_cpu_lowering_rules_serve_anvil_and_export_stays_cpu(lib):
    from jax._src import core
    from jax._src.interpreters import mlir

    prim = core.Primitive("t_cpu_only_copy")
    prim.def_impl(lambda x: x)
    prim.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype))
    seen = []

    def rule(ctx, x):
        seen.append(tuple(ctx.module_context.platforms))  # libraries check the platform
        return jax.ffi.ffi_lowering("t_copy")(ctx, x)
    mlir.register_lowering(prim, rule, platform="cpu")
    x = np.arange(5.0, dtype=np.float32)
    a, c = on_both(lambda v: prim.bind(v) * 2, x)
    np.testing.assert_array_equal(a, x * 2)
    np.testing.assert_array_equal(a, c)
    assert seen and all(p == ("cpu",) for p in seen)
    exp = jax.export.export(jax.jit(lambda v: prim.bind(v)), platforms=["cpu"], disabled_checks=[
        jax.export.DisabledSafetyCheck.custom_call("t_copy")])(x)
    assert exp.platforms == ("cpu",)
    assert "t_copy" in exp.mlir_module()


def test_platform_dependent_takes_the_cpu_branch(anvil_device):
    def f(x):
        return jax.lax.platform_dependent(x, cpu=lambda v: v * 2, cuda=lambda v: v * 3)
    out = jax.jit(f)(jax.device_put(np.float32(1.5), anvil_device))
    assert float(out) == 3.0


def _run_anvil_only(script, handlers_path, devices=1):
    env = dict(os.environ, JAX_PLATFORMS="anvil", ANVIL_DEVICE_COUNT=str(devices),
               FFI_HANDLERS=handlers_path)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                       capture_output=True, text=True, timeout=300, cwd=HERE)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


COMMON = """
import ctypes, os, numpy as np, jax, jax.numpy as jnp
import test_ffi as t
lib = ctypes.CDLL(os.environ["FFI_HANDLERS"])
"""


def test_registered_before_anvil_starts(handlers_path):
    out = _run_anvil_only(COMMON + """
t._register_all(lib)          # queued: no backend exists yet
from jax._src import xla_bridge as xb
assert not xb._backends
x = np.arange(4, dtype=np.float32)
y = jax.jit(lambda v: jax.ffi.ffi_call("t_copy", jax.ShapeDtypeStruct(v.shape, v.dtype))(v))(x)
print(jax.devices()[0].platform, np.asarray(y).tolist())
""", handlers_path)
    assert out.split("\n")[-2] == "anvil [0.0, 1.0, 2.0, 3.0]"


def test_batch_partitionable_targets_run_per_device(handlers_path):
    """With num_batch_dims, each of 4 devices' calls sees its own 2 rows and nothing is
    gathered; without it, one call sees all 8 rows (gathered). Sums are right either way."""
    out = _run_anvil_only(COMMON + """
from jax._src import core
from jax._src.interpreters import mlir
from jax.sharding import NamedSharding, PartitionSpec as P
t._register_all(lib)
jax.ffi.register_ffi_target_as_batch_partitionable("t_row_sum")
mesh = jax.make_mesh((4,), ("i",))
x = jax.device_put(np.arange(32, dtype=np.float32).reshape(8, 4), NamedSharding(mesh, P("i")))
for batch in (True, False):
    prim = core.Primitive("row_sum_%d" % batch)
    prim.multiple_results = True
    prim.def_abstract_eval(lambda v: (core.ShapedArray(v.shape[:1], v.dtype),
                                      core.ShapedArray(v.shape[:1], np.int32)))
    def rule(ctx, v, batch=batch):
        attrs = {"mhlo.frontend_attributes": mlir.ir_attribute({"num_batch_dims": "1"})} if batch else None
        return jax.ffi.ffi_lowering("t_row_sum", extra_attributes=attrs)(ctx, v)
    mlir.register_lowering(prim, rule)
    f = jax.jit(lambda v: prim.bind(v), out_shardings=NamedSharding(mesh, P("i")))
    s, n = f(x)
    text = f.lower(x).compile().as_text()
    print(batch, np.asarray(s).tolist() == np.asarray(x).sum(1).tolist(),
          sorted(set(np.asarray(n).tolist())), "all_gather" in text)
""", handlers_path, devices=4)
    lines = out.strip().split("\n")[-2:]
    assert lines == ["True True [2] False", "False True [8] True"], out
