"""Host callbacks with JAX_PLATFORMS=anvil alone (no cpu backend to put the arguments on):
jax.debug.print / debug.callback / pure_callback / io_callback run, print what XLA:CPU prints,
convert results as XLA:CPU does, raise a callback's error at the call (never only at exit),
and under a sharded jit run once with the maximal sharding JAX puts on them. Each program runs
in a subprocess (conftest sets anvil,cpu) and, where a value or printed text is compared, again
with JAX_PLATFORMS=cpu."""

import os
import subprocess
import sys

import pytest

PRINTS = r"""
import jax, jax.numpy as jnp
def f(x):
    jax.debug.print("f x={x} s={s}", x=x, s=x.sum())
    return jnp.sin(x).sum()
x = jnp.arange(3.0)
jax.jit(f)(x).block_until_ready()
jax.vmap(f)(jnp.arange(4.0).reshape(2, 2)).block_until_ready()
def body(c, v):
    jax.debug.print("scan c={c} v={v}", c=c, v=v)
    return c + v, c * v
jax.jit(lambda xs: jax.lax.scan(body, 0.0, xs))(x)[0].block_until_ready()
print("grad", jax.grad(f)(x))
def g(x):
    y = jnp.sin(x)
    jax.debug.print("g y={y}", y=y, ordered=True)
    return (y * y).sum()
print("jit grad", jax.jit(jax.grad(g))(x))
jax.debug.print("eager {}", x)
jax.debug.callback(lambda v: print("callback", type(v).__name__, v.dtype, v), x)
jax.effects_barrier()
"""

CALLBACKS = r"""
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import io_callback
f32 = jax.ShapeDtypeStruct((), jnp.float32)
print("pure", jax.jit(lambda x: jax.pure_callback(lambda a: np.sin(a), jax.ShapeDtypeStruct((3,), jnp.float32), x))(jnp.arange(3.0)))
print("python float", jax.jit(lambda x: jax.pure_callback(lambda a: 1.5, f32, x))(1.0))
print("float64 array", jax.jit(lambda x: jax.pure_callback(lambda a: np.ones(2) / 3, jax.ShapeDtypeStruct((2,), jnp.float32), x))(1.0))
print("int64 to int32", jax.jit(lambda x: jax.pure_callback(lambda a: 7, jax.ShapeDtypeStruct((), jnp.int32), x))(1))
print("io ordered", jax.jit(lambda x: io_callback(lambda a: a * 2, f32, x, ordered=True))(2.0))
print("in callback", jax.jit(lambda x: jax.pure_callback(lambda a: jnp.sin(a) * 2, f32, x))(1.0))
"""

ERRORS = r"""
import sys, jax, jax.numpy as jnp, numpy as np
from jax.experimental import io_callback
def bad(*a):
    raise ValueError("boom from callback")
cases = {
    "io_ordered": lambda: jax.jit(lambda x: io_callback(bad, None, x, ordered=True))(1.0),
    "io_unordered": lambda: jax.jit(lambda x: io_callback(bad, None, x))(1.0),
    "debug": lambda: jax.jit(lambda x: jax.debug.callback(bad, x))(1.0),
    "debug_ordered": lambda: jax.jit(lambda x: jax.debug.callback(bad, x, ordered=True))(1.0),
    "pure": lambda: jax.jit(lambda x: jax.pure_callback(bad, jax.ShapeDtypeStruct((), jnp.float32), x))(1.0),
    "shape": lambda: jax.jit(lambda x: io_callback(lambda a: np.zeros(3, np.float32), jax.ShapeDtypeStruct((), jnp.float32), x, ordered=True))(1.0),
}
for name, run in cases.items():
    try:
        run()
        print(name, "no error at the call")
    except Exception as e:
        msg = str(e)
        print(name, "raised at the call:", "boom from callback" in msg or "Incorrect output shape" in msg)
    try:
        jax.effects_barrier()
        print(name, "barrier clean")
    except Exception as e:
        print(name, "raised again at the barrier")
"""

LOGGED = r"""
import logging, jax, jax.numpy as jnp
from jax.experimental import io_callback
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append((record.name, record.getMessage()))
logging.getLogger().addHandler(Keep())
def bad(*a):
    raise ValueError("boom")
for run in (lambda: jax.jit(lambda x: jax.pure_callback(bad, jax.ShapeDtypeStruct((), jnp.float32), x))(1.0),
            lambda: jax.jit(lambda x: io_callback(bad, None, x))(1.0),
            lambda: jax.jit(lambda x: jax.debug.callback(bad, x))(1.0)):
    try:
        run()
        jax.effects_barrier()
    except Exception:
        pass
print(sorted(set(r for r in records if r[1].endswith("failed"))))
"""

SHARDED = r"""
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import io_callback
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding
mesh = Mesh(np.array(jax.devices()), ("x",))
s = NamedSharding(mesh, P("x"))
calls = []
def func(x):
    calls.append(x.shape)
    return x + jnp.arange(x.shape[0], dtype=x.dtype)  # JAX code inside the callback
last = jax.devices()[-1]
f = jax.jit(lambda x: jax.pure_callback(func, x, x, sharding=SingleDeviceSharding(last)),
            in_shardings=s, out_shardings=s)
inp = jnp.arange(float(len(jax.devices())))
text = f.lower(inp).as_text()
print("annotated", f"device_ids=[{len(jax.devices()) - 1}]" in text and "sdy.sharding" in text.split("custom_call", 1)[1].split("\n")[0])
print("result", np.asarray(f(inp)).tolist(), "calls", calls)
seen = []
g = jax.jit(lambda x: io_callback(lambda v: seen.append(int(v.sum())), None, x, ordered=True) or x,
            in_shardings=s, out_shardings=NamedSharding(mesh, P()))
for i in range(3):
    g(inp + i)
jax.effects_barrier()
print("ordered", seen)
"""


def run(program, platforms, devices=1, x64=False):
    env = dict(os.environ, JAX_PLATFORMS=platforms, ANVIL_DEVICE_COUNT=str(devices),
               JAX_ENABLE_X64="1" if x64 else "0")
    if platforms == "cpu" and devices > 1:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout, r.stderr


def test_debug_print_in_jit_vmap_scan_grad_prints_what_cpu_prints():
    anvil, anvil_err = run(PRINTS, "anvil")
    cpu, _ = run(PRINTS, "cpu")
    assert "f x=[0. 1. 2.] s=3.0" in anvil
    assert "scan c=1.0 v=2.0" in anvil
    assert "callback ArrayImpl float32 [0. 1. 2.]" in anvil
    assert anvil == cpu
    assert "Exception ignored" not in anvil_err


def test_callbacks_and_result_conversion_match_cpu():
    anvil, _ = run(CALLBACKS, "anvil")
    cpu, _ = run(CALLBACKS, "cpu")
    assert "python float 1.5" in anvil and "int64 to int32 7" in anvil
    assert anvil == cpu


def test_a_callback_error_is_raised_at_the_call_and_never_again_at_exit():
    anvil, anvil_err = run(ERRORS, "anvil")
    cpu, _ = run(ERRORS, "cpu")
    for name in ("io_ordered", "io_unordered", "debug", "debug_ordered", "pure", "shape"):
        assert f"{name} raised at the call: True" in anvil
        assert f"{name} barrier clean" in anvil
    assert anvil == cpu
    assert "Exception ignored" not in anvil_err


def test_callbacks_under_a_sharded_jit_run_once_with_a_maximal_sharding():
    anvil, _ = run(SHARDED, "anvil", devices=2)
    cpu, _ = run(SHARDED, "cpu", devices=2)
    assert "annotated True" in anvil
    assert "result [0.0, 2.0] calls [(2,)]" in anvil
    assert "ordered [1, 3, 5]" in anvil
    assert anvil == cpu


def test_a_failing_callback_is_logged_by_jax_own_logger_as_on_cpu():
    # equinox's filter_jit filters the record jax._src.callback logs when a pure_callback
    # raises (its error_if raises in one); anvil's host-device callbacks log the same record
    anvil, _ = run(LOGGED, "anvil")
    cpu, _ = run(LOGGED, "cpu")
    assert "('jax._src.callback', 'jax.pure_callback failed')" in cpu
    assert anvil == cpu
