"""Dumps of compiled programs: XLA's --xla_dump_to (XLA_FLAGS, or JAX's
compiler_options={"xla_dump_to": DIR}) makes anvil write what it compiles there, as
ANVIL_DUMP_DIR does, and both create a directory that does not exist yet (as XLA:CPU does
for --xla_dump_to). A program loaded from JAX's persistent cache is dumped again, into the
directory its current options name."""

import os
import subprocess
import sys

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


def run(platform, args, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("ANVIL_DUMP_DIR", "XLA_FLAGS")}
    e.update(JAX_PLATFORMS=platform, **env)
    r = subprocess.run([sys.executable, "-c", PROGRAM, *map(str, args)], env=e,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["42", "42"]
    return r.stderr


def files(d):
    return sorted(os.path.relpath(os.path.join(r, f), d)
                  for r, _, fs in os.walk(d) for f in fs) if os.path.isdir(d) else []


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
    assert files(tmp_path / "cpu_flag") and files(tmp_path / "cpu_option")


def test_a_program_from_the_persistent_cache_is_dumped_again(tmp_path):
    cache = tmp_path / "cache"
    run("anvil", [tmp_path / "first", cache])
    trace = run("anvil", [tmp_path / "second", cache], ANVIL_TRACE="1")
    assert "PJRT_Executable_DeserializeAndLoad" in trace
    first, second = files(tmp_path / "first"), files(tmp_path / "second")
    assert len(first) == 1 and first == second
    assert (tmp_path / "first" / first[0]).read_text() == \
        (tmp_path / "second" / second[0]).read_text()
