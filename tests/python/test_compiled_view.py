"""The HLO view of a multi-device executable (PJRT_Executable_OptimizedProgram): what
compiled.as_text() shows, and where jaxlib releases without the Shardings extension (up to 0.8)
read parameter and output shardings from (tests/compat checks those releases themselves).

Runs JAX in a subprocess with ANVIL_DEVICE_COUNT=4 (the device count is fixed per process)."""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()), ("x",))
rows = NamedSharding(mesh, P("x", None))
x = jax.device_put(np.arange(32, dtype=np.float32).reshape(8, 4), rows)
compiled = jax.jit(lambda v: jnp.sin(v) * 2, out_shardings=rows).lower(x).compile()
text = compiled.as_text()
print(json.dumps({"text": text, "params": [str(s) for s in
                  compiled.runtime_executable().get_parameter_shardings() or []]}))
"""


def test_sharded_executable_as_text():
    env = dict(os.environ, JAX_PLATFORMS="anvil", ANVIL_DEVICE_COUNT="4")
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    text = out["text"]
    # One parameter of the per-device shape f32[2,4] split 4 ways over dimension 0, the call
    # that runs anvil's program (its StableHLO text is the backend_config), 4 partitions.
    assert "num_partitions=4" in text
    assert "f32[2,4]{1,0} parameter(0), sharding={devices=[4,1]0,1,2,3}" in text, text[:2000]
    assert 'custom_call_target="anvil_program"' in text
    assert "stablehlo.sine" in text
    # The OpSharding the executable reports (here through the Shardings extension).
    assert out["params"] and "tile_assignment_dimensions: 4" in out["params"][0], out
