"""Every real JAX export artifact in ../shared/conformance/jax-export that anvil can run (no
custom calls, or only ones anvil implements) runs on anvil and matches `expected_outputs`.

An artifact whose custom calls anvil does not implement (cuSolver, TPU, ...) must be refused at
compile time with UNIMPLEMENTED naming the target — it is skipped, with that reason, not failed.
The LAPACK (cpu_*) artifacts have property-based checks of their own in test_linalg.py.
"""

import glob
import json
import os

import jax
import numpy as np
import pytest
from jax_export_data import EXPORT_DIR, SUFFIX_DTYPE, decode

NAMES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(EXPORT_DIR, "*.json")))
# Implementation-defined results (LAPACK: non-unique eigenvectors...) are checked in
# test_linalg.py by their defining properties instead.
PROPERTY_CHECKED = ("cpu_eig", "cpu_eigh", "cpu_schur", "cpu_svd")
# Known gaps, each with its reason; strict, so a fix shows up as XPASS and must be removed here.
KNOWN_FAILURES = {
    "tpu_Qr__data_2023_03_17": "the 2023 TPU @Qr custom call has an operand form anvil refuses",
}


def tolerance(dtype):
    dt = np.dtype(dtype)
    if dt in (np.float64, np.complex128):
        return dict(rtol=1e-9, atol=1e-9)
    if dt.kind in "fc" and dt.itemsize >= 4:
        return dict(rtol=1e-4, atol=1e-5)
    if dt.kind in "fc":
        return dict(rtol=2e-2, atol=2e-2)
    return dict(rtol=0, atol=0)


@pytest.mark.skipif(not NAMES, reason="jax-export conformance data not present")
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[n], strict=True))
    if n in KNOWN_FAILURES else n for n in NAMES])
def test_artifact(name):
    from jax._src.lib import xla_client as xc

    if name.startswith(PROPERTY_CHECKED):
        pytest.skip("checked by its defining properties in test_linalg.py")
    with open(os.path.join(EXPORT_DIR, name + ".json")) as f:
        meta = json.load(f)
    devices = jax.devices("anvil")
    nr = int(meta.get("nr_devices", 1) or 1)
    if nr > 1:
        # These take global arguments split per their sdy.sharding over nr devices; running
        # them needs compile options for nr partitions and per-device shards (not done here).
        pytest.skip(f"needs {nr} devices with sharded arguments")
    with open(os.path.join(EXPORT_DIR, name + ".mlirbc"), "rb") as f:
        code = f.read()
    client = devices[0].client
    try:
        exe = client.compile_and_load(code, executable_devices=xc.DeviceList((devices[0],)),
                                      compile_options=xc.CompileOptions())
    except Exception as e:  # noqa: BLE001 - classify the refusal below
        msg = str(e)
        if "UNIMPLEMENTED" in msg and "dynamic shapes" in msg:
            pytest.skip("dynamic shapes: " + msg.splitlines()[0][:160])
        if "UNIMPLEMENTED" in msg and meta.get("custom_call_targets"):
            pytest.skip("custom call not implemented: " + msg.splitlines()[0][:160])
        raise
    fallback = SUFFIX_DTYPE.get(name.rsplit("__", 1)[-1], np.float32)
    inputs = [decode(v, fallback) for v in meta["inputs"]]
    outs = exe.execute([jax.device_put(x, devices[0]) for x in inputs])
    outs = [np.asarray(o) for o in outs]
    assert len(outs) == len(meta["expected_outputs"])
    for o, v in zip(outs, meta["expected_outputs"]):
        e = decode(v, o.dtype)
        assert o.shape == e.shape, (o.shape, e.shape)
        if o.dtype.kind in "fc":
            np.testing.assert_allclose(o, e.astype(o.dtype), equal_nan=True, **tolerance(o.dtype))
        else:
            np.testing.assert_array_equal(o, e.astype(o.dtype))
