"""jax.export on anvil: an artifact exported for "cpu" (alone or with other platforms) runs on
anvil through Exported.call, eagerly and under jit, after a serialize/deserialize round trip,
and gives what the same call gives on JAX's CPU backend; artifacts anvil exports for itself
(its default, or platforms=["cpu", "anvil"]) load and run again."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

pytest.importorskip("flatbuffers", reason="Exported.serialize needs flatbuffers")


def f(x):
    # eigh lowers to a LAPACK FFI custom call on cpu; anvil serves it
    return jnp.linalg.eigh(x @ x.T)[0].sum() + jnp.sin(x).sum()


X = (np.arange(9, dtype=np.float32).reshape(3, 3) / 7)


def on(platform):
    return jax.default_device(jax.devices(platform)[0])


def roundtrip(exp):
    return export.deserialize(exp.serialize())


@pytest.mark.parametrize("platforms", [("cpu",), ("cpu", "tpu"), ("tpu", "cpu")])
def test_cpu_artifact_runs_on_anvil(platforms):
    with on("cpu"):
        exp = roundtrip(export.export(jax.jit(f), platforms=platforms)(X))
        want = np.asarray(exp.call(X))
    assert exp.platforms == platforms
    with on("anvil"):
        eager = exp.call(X)
        jitted = jax.jit(exp.call)(X)
    assert eager.devices() == {jax.devices("anvil")[0]}
    np.testing.assert_allclose(np.asarray(eager), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-5)


def test_artifact_for_other_platforms_only_is_still_refused():
    with on("cpu"):
        exp = export.export(jax.jit(f), platforms=("tpu",))(X)
    with on("anvil"), pytest.raises(ValueError, match="exported for platforms"):
        exp.call(X)


def test_anvil_exports_for_itself_and_loads_again():
    with on("anvil"):
        exp = roundtrip(export.export(jax.jit(f))(X))
        assert exp.platforms == ("anvil",)
        got = np.asarray(exp.call(X))
        both = roundtrip(export.export(jax.jit(f), platforms=("cpu", "anvil"))(X))
        got_both = np.asarray(both.call(X))
    with on("cpu"):
        want = np.asarray(jax.jit(f)(X))
        got_cpu = np.asarray(both.call(X))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got_both, want, rtol=1e-5)
    np.testing.assert_allclose(got_cpu, want, rtol=1e-5)
