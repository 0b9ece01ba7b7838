"""FFT accuracy: anvil's error against an extended-precision reference is no worse than
XLA:CPU's (DUCC), case by case and dtype by dtype.

The reference is numpy's FFT in long double (x87 80-bit, about 3 decimal digits beyond f64),
run on the same inputs the backends get. The error of a result is its RMS difference from the
reference over the reference's RMS. Each case covers a code path of src/runtime/kernels/fft*:
SIMD lanes across lines (batched, multi-dimensional), a single long line (the four-step split),
a prime length (Bluestein, in lanes and on one line), real transforms of odd and even length.

Run as a script for the table of the issue's sizes (2^20, 512^2, 64^3):
    JAX_PLATFORMS=anvil,cpu python tests/python/test_fft_accuracy.py
"""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "anvil,cpu")

import jax
import jax.numpy as jnp
import numpy as np
import pytest

# (name, shape, axes)
CASES = [
    ("1d_1000", (1000,), (-1,)),
    ("1d_4093_prime", (4093,), (-1,)),
    ("1d_65536", (65536,), (-1,)),
    ("1d_30000_x3", (3, 30000), (-1,)),
    ("batch_64x97_prime", (64, 97), (-1,)),
    ("batch_40x45_odd", (40, 45), (-1,)),
    ("2d_96x80", (96, 80), (-2, -1)),
    ("2d_61x67_primes", (61, 67), (-2, -1)),
    ("3d_16x12x10", (16, 12, 10), (-3, -2, -1)),
]
ISSUE_CASES = [
    ("1d_2^20", (1 << 20,), (-1,)),
    ("1d_1000", (1000,), (-1,)),
    ("1d_4093", (4093,), (-1,)),
    ("2d_512", (512, 512), (-2, -1)),
    ("3d_64", (64, 64, 64), (-3, -2, -1)),
]
KINDS = ["fft", "ifft", "rfft", "irfft"]


def _inputs(kind, shape, axes, real_dt, seed=0):
    rng = np.random.default_rng(seed)
    cdt = np.complex64 if real_dt == np.float32 else np.complex128
    if kind == "rfft":
        return rng.standard_normal(shape).astype(real_dt)
    if kind == "irfft":  # a Hermitian half spectrum: the rfft of a real signal
        x = rng.standard_normal(shape)
        return np.fft.rfftn(x, axes=axes).astype(cdt)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(cdt)


def _functions(kind, shape, axes):
    s = tuple(shape[a] for a in axes)
    jfn = {
        "fft": lambda x: jnp.fft.fftn(x, axes=axes),
        "ifft": lambda x: jnp.fft.ifftn(x, axes=axes),
        "rfft": lambda x: jnp.fft.rfftn(x, axes=axes),
        "irfft": lambda x: jnp.fft.irfftn(x, s=s, axes=axes),
    }[kind]
    nfn = {
        "fft": lambda x: np.fft.fftn(x, axes=axes),
        "ifft": lambda x: np.fft.ifftn(x, axes=axes),
        "rfft": lambda x: np.fft.rfftn(x, axes=axes),
        "irfft": lambda x: np.fft.irfftn(x, s=s, axes=axes),
    }[kind]
    return jfn, nfn


def rel_rms(got, ref):
    d = np.asarray(got).astype(ref.dtype) - ref
    return float(np.sqrt(np.mean(np.abs(d) ** 2) / np.mean(np.abs(ref) ** 2)))


def errors(kind, shape, axes, real_dt):
    x = _inputs(kind, shape, axes, real_dt)
    jfn, nfn = _functions(kind, shape, axes)
    wide = np.clongdouble if np.iscomplexobj(x) else np.longdouble
    ref = nfn(x.astype(wide))
    out = {}
    for platform in ("anvil", "cpu"):
        dev = jax.devices(platform)[0]
        out[platform] = rel_rms(jax.jit(jfn)(jax.device_put(x, dev)), ref)
    return out


@pytest.mark.parametrize("real_dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name,shape,axes", CASES, ids=[c[0] for c in CASES])
def test_error_no_worse_than_xla(name, shape, axes, kind, real_dt):
    e = errors(kind, shape, axes, real_dt)
    eps = np.finfo(real_dt).eps
    # no worse than XLA:CPU's, up to a quarter (both are a few eps; the order of the
    # operations differs), and a few eps in absolute terms either way
    assert e["anvil"] <= max(1.25 * e["cpu"], 4 * eps), e


# The issue's multi-dimensional sizes, held strictly: anvil's error at most XLA:CPU's. Their
# ratios hardly move with the input (0.98-0.99 over eight seeds, 2026-11-29); without the fused
# multiply-adds of fft_engine.inc's butterflies and untangling they were 1.02-1.04.
STRICT_CASES = [c for c in ISSUE_CASES if c[0] in ("2d_512", "3d_64")]


@pytest.mark.parametrize("real_dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name,shape,axes", STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_issue_sizes_strictly_no_worse_than_xla(name, shape, axes, kind, real_dt):
    e = errors(kind, shape, axes, real_dt)
    assert e["anvil"] <= e["cpu"], e


def main():
    print(f"{'case':10} {'kind':6} {'dtype':5} {'anvil err':>10} {'xla err':>10} {'ratio':>6}")
    for name, shape, axes in ISSUE_CASES:
        for real_dt in (np.float32, np.float64):
            for kind in KINDS:
                e = errors(kind, shape, axes, real_dt)
                print(f"{name:10} {kind:6} {np.dtype(real_dt).name:5} {e['anvil']:10.2e} "
                      f"{e['cpu']:10.2e} {e['anvil'] / e['cpu']:6.2f}", flush=True)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    sys.exit(main())
