"""Which OpenBLAS kernels the plugin's matmuls run on.

anvil links the system OpenBLAS (Debian 12: 0.3.21, built with DYNAMIC_ARCH), which picks its
kernels from the CPU model when the library loads. That version does not know AMD Zen 4/5:
it runs its AVX2 (Haswell) kernels there, at half the matmul speed those CPUs have with
AVX-512 (measured on a 2-core Zen 5: 1024^3 f32 in 8.4 ms with Haswell, 4.5 ms with SkylakeX).
OpenBLAS reads ``OPENBLAS_CORETYPE`` once, when it is loaded, so this must run before JAX or
torch_xla loads ``libanvil_pjrt.so``; ``import anvil_pjrt`` does it. A value the user set is
never changed.
"""

import os

# The AVX-512 subsets OpenBLAS's SkylakeX kernels use.
_SKYLAKEX_FLAGS = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}


def openblas_core_for(cpuinfo: str):
    """The OPENBLAS_CORETYPE to use for the CPU `cpuinfo` (text of /proc/cpuinfo) describes,
    or None to leave OpenBLAS's own choice: "SkylakeX" for AMD CPUs with AVX-512 (Intel ones
    are recognised by OpenBLAS itself, some as newer cores than SkylakeX)."""
    vendor, flags = "", set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
        if not line.strip() and vendor:  # the first processor's block is enough
            break
    if vendor == "AuthenticAMD" and _SKYLAKEX_FLAGS <= flags:
        return "SkylakeX"
    return None


def configure(environ=os.environ, cpuinfo_path="/proc/cpuinfo") -> None:
    """Sets OPENBLAS_CORETYPE in `environ` when openblas_core_for says so and it is unset."""
    if environ.get("OPENBLAS_CORETYPE"):
        return
    try:
        with open(cpuinfo_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return
    core = openblas_core_for(text)
    if core:
        environ["OPENBLAS_CORETYPE"] = core
