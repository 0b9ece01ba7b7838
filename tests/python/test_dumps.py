"""Dumps of compiled programs: XLA's --xla_dump_to (XLA_FLAGS, or JAX's
compiler_options={"xla_dump_to": DIR}) makes anvil write what it compiles there, as
ANVIL_DUMP_DIR does, and both create a directory that does not exist yet (as XLA:CPU does
for --xla_dump_to). A program loaded from JAX's persistent cache is dumped again, into the
directory its current options name. xla_dump_to also gets the files tools look for by XLA's
names: NAME.after_optimizations.txt (the program anvil compiles) and, with
xla_dump_hlo_as_proto, NAME.after_optimizations.hlo.pb (an HloProto of the HLO view)."""

import os
import platform
import subprocess
import sys

import pytest

PROGRAM = r"""
import sys
import jax, jax.numpy as jnp
if len(sys.argv) > 2:
    jax.config.update("jax_compilation_cache_dir", sys.argv[2])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
print(int(jax.jit(lambda x: x + 41)(1)))
print(int(jax.jit(lambda x: x * 7, compiler_options={"xla_dump_to": sys.argv[1]})(6)))
"""

PROTO = r"""
import sys
import jax
print(int(jax.jit(lambda x: x * 7, compiler_options={
    "xla_dump_to": sys.argv[1], "xla_dump_hlo_as_proto": True})(6)))
"""


def run(platform, args, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("ANVIL_DUMP_DIR", "XLA_FLAGS")}
    e.update(JAX_PLATFORMS=platform, **env)
    r = subprocess.run([sys.executable, "-c", PROGRAM, *map(str, args)], env=e,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["42", "42"]
    return r.stderr


def files(d, suffix=".mlir"):
    return sorted(os.path.relpath(os.path.join(r, f), d)
                  for r, _, fs in os.walk(d) for f in fs
                  if f.endswith(suffix)) if os.path.isdir(d) else []


def test_xla_dump_to_and_anvil_dump_dir_create_missing_directories(tmp_path):
    flag_dir = tmp_path / "flag" / "nested"
    option_dir = tmp_path / "option" / "nested"
    anvil_dir = tmp_path / "anvil" / "nested"
    err = run("anvil", [option_dir], XLA_FLAGS=f"--xla_dump_to={flag_dir}",
              ANVIL_DUMP_DIR=str(anvil_dir))
    assert "cannot write" not in err
    # XLA_FLAGS names the dump directory of the first program; the compile option wins for
    # the second; ANVIL_DUMP_DIR gets both
    flag, option, anvil = files(flag_dir), files(option_dir), files(anvil_dir)
    assert len(flag) == 1 and len(option) == 1 and len(anvil) == 2
    assert set(anvil) == set(flag) | set(option)
    assert "stablehlo.add" in (flag_dir / flag[0]).read_text()
    assert "stablehlo.multiply" in (option_dir / option[0]).read_text()
    # XLA:CPU writes its dumps for the same settings (into the directories it creates)
    run("cpu", [tmp_path / "cpu_option"], XLA_FLAGS=f"--xla_dump_to={tmp_path / 'cpu_flag'}")
    assert files(tmp_path / "cpu_flag", "") and files(tmp_path / "cpu_option", "")


def test_a_program_from_the_persistent_cache_is_dumped_again(tmp_path):
    cache = tmp_path / "cache"
    run("anvil", [tmp_path / "first", cache])
    trace = run("anvil", [tmp_path / "second", cache], ANVIL_TRACE="1")
    assert "PJRT_Executable_DeserializeAndLoad" in trace
    first, second = files(tmp_path / "first"), files(tmp_path / "second")
    assert len(first) == 1 and first == second
    assert (tmp_path / "first" / first[0]).read_text() == \
        (tmp_path / "second" / second[0]).read_text()


def test_xla_dump_to_writes_the_files_xla_names(tmp_path):
    """The files XLA:CPU writes that tools glob for: one *after_optimizations.txt per program,
    and an *after_optimizations.hlo.pb with xla_dump_hlo_as_proto (JAX's
    compilation_cache_test compares them between a compile and a cache hit)."""
    counts = {}
    for p in ("anvil", "cpu"):
        run(p, [tmp_path / p / "opt"])
        e = {k: v for k, v in os.environ.items() if k not in ("ANVIL_DUMP_DIR", "XLA_FLAGS")}
        r = subprocess.run([sys.executable, "-c", PROTO, str(tmp_path / p / "pb")],
                           env=dict(e, JAX_PLATFORMS=p), capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and r.stdout.split() == ["42"], r.stderr[-2000:]
        counts[p] = (len(files(tmp_path / p / "opt", "after_optimizations.txt")),
                     len(files(tmp_path / p / "pb", "after_optimizations.hlo.pb")))
    assert counts["anvil"] == counts["cpu"] == (1, 1)
    pb = tmp_path / "anvil" / "pb" / files(tmp_path / "anvil" / "pb", ".hlo.pb")[0]
    data = pb.read_bytes()
    assert data[0] == 0x0A and b"anvil_program" in data  # HloProto.hlo_module, the view
    txt = files(tmp_path / "anvil" / "opt", "after_optimizations.txt")[0]
    assert "stablehlo.multiply" in (tmp_path / "anvil" / "opt" / txt).read_text()


REGION = r"""
import sys
import jax, jax.numpy as jnp, numpy as np
x = np.arange(4096, dtype=np.float32)  # no program before the one with the region
print(float(jax.jit(lambda v: jnp.sum(jnp.tanh(v * 0.001) * 3.0 + 1.0))(x)) > 0)
"""


def test_generated_region_listings_land_in_a_missing_dump_dir(tmp_path):
    # the listings are written while the program compiles, before its own dump made the
    # directory: the client makes it when it starts
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("generated code is x86-64 only")
    d = tmp_path / "missing" / "nested"
    e = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "ANVIL_CODEGEN")}
    e.update(JAX_PLATFORMS="anvil", ANVIL_DUMP_DIR=str(d))
    r = subprocess.run([sys.executable, "-c", REGION], env=e, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["True"], r.stderr[-2000:]
    listings = files(d, ".txt")
    assert any(f.startswith("codegen.") for f in listings), os.listdir(d)
    assert "isa " in (d / [f for f in listings if f.startswith("codegen.")][0]).read_text()
