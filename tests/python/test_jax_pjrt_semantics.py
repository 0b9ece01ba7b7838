"""PJRT behaviours JAX's own tests rely on, checked on anvil and against JAX's CPU backend
(XLA) in the same process: compile options are validated, a donated buffer cannot be passed
twice, jit(identity) returns a new buffer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest


def _on(device, fn, *args, **jit_kw):
    return jax.jit(fn, **jit_kw)(*[jax.device_put(a, device) for a in args])


@pytest.fixture(params=["anvil", "cpu"])
def device(request):
    return jax.devices(request.param)[0]


def f(x):
    return jnp.sqrt(x ** 2) + 1.0


def test_unknown_compile_option_is_refused(device):
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such compile option: 'invalid_key'"):
        _on(device, f, np.float32(1.0), compiler_options={"invalid_key": "invalid_value"})
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such"):
        _on(device, f, np.float32(1.0), compiler_options={"exec_time_compilation_effort": 0.0})


def test_compile_option_of_the_wrong_type_is_refused(device):
    lowered = jax.jit(f).trace(jax.device_put(np.float32(1.0), device)).lower()
    with pytest.raises(jax.errors.JaxRuntimeError, match="is not a valid bool value"):
        lowered.compile(compiler_options={"xla_embed_ir_in_executable": "invalid_value"})


def test_valid_compile_options_are_accepted(device):
    for opts in ({"xla_embed_ir_in_executable": True}, {"xla_embed_ir_in_executable": "False"},
                 {"exec_time_optimization_effort": 0.0}):
        out = _on(device, f, np.float32(-3.0), compiler_options=opts)
        assert float(out) == 4.0  # sqrt(9) + 1


def test_donating_the_same_buffer_twice_raises(device):
    add = jax.jit(lambda x, y: x + y, donate_argnums=(0,))
    x = jax.device_put(jnp.zeros((10,), jnp.float32), device)
    with pytest.raises(RuntimeError):
        add(x, x).block_until_ready()


@pytest.mark.parametrize("shape", [(), (4,), (100000,)])
def test_donated_buffer_is_reused_for_the_result(device, shape):
    # XLA writes the result of an elementwise op into the donated argument's buffer; equinox's
    # test_buffer_donation_* check it, and memory stays flat in training loops that donate
    add_one = jax.jit(lambda x: x + 1.0, donate_argnums=0)
    x = _on(device, lambda t: t * 0.0, np.ones(shape, np.float32))  # a buffer the device made
    before = x.unsafe_buffer_pointer()
    y = add_one(x)
    assert x.is_deleted()
    assert y.unsafe_buffer_pointer() == before
    np.testing.assert_array_equal(np.asarray(y), np.ones(shape, np.float32))


def test_donated_buffer_is_updated_in_place_by_a_scatter(device):
    # x.at[i].add(v) on a donated array: XLA scatters into the donated buffer (equinox's
    # test_buffer_donation_method); the operand read twice must still give the right values
    add_at = jax.jit(lambda x: x.at[jnp.array([0, 2, 0])].add(x[:3]), donate_argnums=0)
    x = _on(device, lambda t: t * 2.0, np.arange(1000, dtype=np.float32))
    before = x.unsafe_buffer_pointer()
    y = add_at(x)
    expected = np.arange(1000, dtype=np.float32) * 2
    np.add.at(expected, [0, 2, 0], expected[:3].copy())
    np.testing.assert_array_equal(np.asarray(y), expected)
    set_first = jax.jit(lambda x: x.at[0].add(1.0), donate_argnums=0)
    z = set_first(y)
    assert z.unsafe_buffer_pointer() == before
    assert float(z[0]) == expected[0] + 1.0


def test_jit_identity_returns_a_new_buffer(device):
    x = jax.device_put(np.arange(6.0, dtype=np.float32), device)
    y = jax.jit(lambda t: t)(x)
    assert y.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(y), np.arange(6.0))
    x.delete()  # the result does not depend on the argument's buffer
    np.testing.assert_array_equal(np.asarray(y), np.arange(6.0))


def test_dce_sink_runs_as_a_no_op(device):
    from jax import lax

    def f(x):
        lax.dce_sink(x * 3.0, prevent_mlir_dce=True)  # kept in the module, does nothing
        return x + 1.0

    assert "dce_sink" in jax.jit(f).lower(np.float32(2.0)).as_text()
    np.testing.assert_array_equal(np.asarray(_on(device, f, np.float32(2.0))), np.float32(3.0))


def test_token_buffer_reads_as_a_token(device):
    with jax.default_device(device):
        token = jax.lax.create_token()
        with pytest.raises(RuntimeError, match="Cannot convert a token-shape buffer"):
            token._buf._value
        arr = jnp.ones(10)
        out, tok = jax.jit(lambda a, t: (a * 2, t))(arr, token)
    np.testing.assert_array_equal(np.asarray(out), np.full(10, 2.0))
    assert isinstance(tok, type(token))
