"""JAX's persistent compilation cache works with anvil: a second process finds the executable
the first one stored and loads it (PJRT_Executable_DeserializeAndLoad) instead of compiling."""

import os
import subprocess
import sys

import numpy as np

PROGRAM = r"""
import sys
import jax, jax.numpy as jnp
import numpy as np
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
f = jax.jit(lambda x, y: jnp.tanh(x @ y) + 1.0)
x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
y = np.ones((4, 2), np.float32)
print(jax.devices()[0].platform, np.asarray(f(x, y)).tolist())
"""


def run(cache_dir):
    env = dict(os.environ, JAX_PLATFORMS="anvil", ANVIL_TRACE="1")
    r = subprocess.run([sys.executable, "-c", PROGRAM, str(cache_dir)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, r.stderr


def test_second_process_loads_from_the_cache(tmp_path):
    out1, trace1 = run(tmp_path)
    assert out1.startswith("anvil ")
    assert any(tmp_path.iterdir()), "nothing was written to the cache directory"
    assert "PJRT_Client_Compile" in trace1
    out2, trace2 = run(tmp_path)
    assert out2 == out1
    assert "PJRT_Executable_DeserializeAndLoad" in trace2
    assert "PJRT_Client_Compile" not in trace2
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    expected = np.tanh(x @ np.ones((4, 2), np.float32)) + 1.0
    got = np.array(eval(out2.split(" ", 1)[1]), np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


METRICS = r"""
import collections, logging, sys
import jax, jax.numpy as jnp
import numpy as np
counts = collections.Counter()
jax.monitoring.register_event_listener(lambda event, **kw: counts.update([event]))
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
jax.config.update("jax_explain_cache_misses", True)  # cache decisions logged as warnings
warnings = []
class Keep(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())
logging.getLogger("jax").addHandler(Keep(level=logging.WARNING))
jax.jit(lambda x: x + 1)(1).block_until_ready()
jax.jit(lambda x: x * 3)(2).block_until_ready()
# the callback's id is only meaningful in this process: never cached
f = jax.jit(lambda x: x + jax.pure_callback(lambda a: np.int32(int(sys.argv[2])),
                                            jax.ShapeDtypeStruct((), jnp.int32), x))
print("callback result", int(f(np.int32(1))))
for k in ("tasks_using_cache", "task_disabled_cache", "cache_hits", "cache_misses",
          "compile_requests_use_cache"):
    print(k, counts["/jax/compilation_cache/" + k])
print("callbacks not cached", any("because it uses host callbacks" in w for w in warnings))
"""


def run_metrics(platform, cache_dir, value):
    env = dict(os.environ, JAX_PLATFORMS=platform)
    r = subprocess.run([sys.executable, "-c", METRICS, str(cache_dir), str(value)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_cache_metrics_and_callback_programs_as_on_cpu(tmp_path):
    """JAX's cache metrics count the same on anvil as on its CPU backend (first process: one
    task using the cache, misses; second: hits), and a program with a host callback is never
    written to the cache: a second process whose callback returns something else gets its own."""
    outs = {}
    for platform in ("anvil", "cpu"):
        d = tmp_path / platform
        first = run_metrics(platform, d, 5)
        second = run_metrics(platform, d, 7)
        outs[platform] = (first, second)
        assert "callback result 6" in first and "callback result 8" in second
        assert "tasks_using_cache 1" in first and "task_disabled_cache 0" in first
        assert "cache_hits 0" in first and "cache_hits 2" in second
        assert "callbacks not cached True" in first and "callbacks not cached True" in second
    assert outs["anvil"] == outs["cpu"]


def test_corrupt_cache_entry_is_refused_and_recompiled(tmp_path):
    """A flipped byte in a cached executable: anvil refuses it (checksum mismatch,
    INVALID_ARGUMENT), JAX warns and compiles again, and the results are the right ones."""
    import zlib
    out1, _ = run(tmp_path)
    entries = [p for p in tmp_path.rglob("*") if p.is_file() and "atime" not in p.name]
    assert entries, "nothing was written to the cache directory"
    flipped = 0
    for p in entries:
        try:
            raw = zlib.decompress(p.read_bytes())
        except zlib.error:
            continue
        at = raw.find(b"ANVILEX2")
        if at < 0:
            continue
        data = bytearray(raw)
        data[at + (len(raw) - at) // 2] ^= 0x10  # inside the program
        p.write_bytes(zlib.compress(bytes(data)))
        flipped += 1
    assert flipped, "no anvil executable found in the cache entries"
    out2, trace2 = run(tmp_path)
    assert out2 == out1
    assert "checksum mismatch" in trace2
    assert "PJRT_Client_Compile" in trace2
