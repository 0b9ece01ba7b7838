"""Where the JAX export artifacts of ../shared/conformance/jax-export live and how their JSON
values decode, shared by the tests that run them."""

import os

import numpy as np

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DIR = os.environ.get("ANVIL_SHARED_DIR", os.path.join(os.path.dirname(_REPO), "shared"))
EXPORT_DIR = os.environ.get("ANVIL_JAX_EXPORT_DIR",
                            os.path.join(SHARED_DIR, "conformance", "jax-export"))
# Cases whose JSON leaves dtype null take it from the name's suffix (__f32, __c128 ...).
SUFFIX_DTYPE = {"f32": np.float32, "f64": np.float64, "c64": np.complex64,
                "c128": np.complex128}


def decode(value, fallback_dtype):
    """A JSON value: complex numbers as [re, im] pairs; dtype null means `fallback_dtype`."""
    a = np.array(value["data"])
    dt = np.dtype(value["dtype"]) if value.get("dtype") else np.dtype(fallback_dtype)
    if dt.kind == "c" and a.dtype.kind != "c":
        a = a[..., 0] + 1j * a[..., 1]
    return a.astype(dt)
