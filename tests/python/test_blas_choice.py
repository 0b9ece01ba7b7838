"""The OpenBLAS kernels anvil's matmuls run on (python/anvil_pjrt/_blas.py).

Debian 12's OpenBLAS picks its AVX2 kernels on AMD CPUs with AVX-512 (Zen 4/5), at half their
matmul speed; `import anvil_pjrt` sets OPENBLAS_CORETYPE=SkylakeX there before the library
loads, and never overrides the user's choice."""

import ctypes
import ctypes.util
import os
import subprocess
import sys

import pytest

from anvil_pjrt import _blas

AMD_ZEN5 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16

processor\t: 1
vendor_id\t: AuthenticAMD
flags\t\t: fpu sse2
"""
AMD_ZEN3 = "vendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma\n"
INTEL_SPR = ("vendor_id\t: GenuineIntel\n"
             "flags\t\t: avx2 avx512f avx512dq avx512cd avx512bw avx512vl amx_tile\n")
AMD_PARTIAL = "vendor_id\t: AuthenticAMD\nflags\t\t: avx2 avx512f avx512cd\n"


@pytest.mark.parametrize("text,core", [
    (AMD_ZEN5, "SkylakeX"),  # the first processor's flags decide
    (AMD_ZEN3, None),        # no AVX-512: OpenBLAS's own choice (Zen/Haswell) is right
    (INTEL_SPR, None),       # OpenBLAS recognises Intel cores itself (some beyond SkylakeX)
    (AMD_PARTIAL, None),     # SkylakeX kernels need BW/DQ/VL too
    ("", None),
])
def test_core_choice(text, core):
    assert _blas.openblas_core_for(text) == core


def test_configure_keeps_user_choice(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(AMD_ZEN5)
    env = {"OPENBLAS_CORETYPE": "Haswell"}
    _blas.configure(env, str(info))
    assert env == {"OPENBLAS_CORETYPE": "Haswell"}
    env = {}
    _blas.configure(env, str(info))
    assert env == {"OPENBLAS_CORETYPE": "SkylakeX"}
    env = {}
    _blas.configure(env, str(tmp_path / "missing"))
    assert env == {}


LOADED_CORE = r"""
import ctypes, os, sys
import anvil_pjrt
ctypes.CDLL(anvil_pjrt.library_path())
blas = ctypes.CDLL(sys.argv[1])
blas.openblas_get_corename.restype = ctypes.c_char_p
print(os.environ.get("OPENBLAS_CORETYPE", ""), blas.openblas_get_corename().decode())
"""


def test_plugin_loads_the_chosen_kernels():
    """In a fresh process, the OpenBLAS the plugin loaded runs the kernels chosen for this CPU
    (checked through OpenBLAS's own report of its core)."""
    lib = ctypes.util.find_library("openblas")
    if not lib:
        pytest.skip("no system OpenBLAS")
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        want = _blas.openblas_core_for(f.read())
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    out = subprocess.run([sys.executable, "-c", LOADED_CORE, lib], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    # [env value, OpenBLAS's core]; with nothing chosen only OpenBLAS's own pick is printed
    assert out == [want, want] if want else len(out) == 1
