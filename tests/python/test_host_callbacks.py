"""Host callbacks on anvil: jax.debug.print / debug.callback, pure_callback, io_callback run
the Python function with the program's values and feed its results back (the anvil package
lowers them to custom_call @anvil_host_callback). Expected values come from numpy and from
the same programs on JAX's CPU backend."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback


def on(platform):
    return jax.default_device(jax.devices(platform)[0])


def test_debug_print_prints_the_values(capfd):
    @jax.jit
    def f(x):
        jax.debug.print("x={x} sum={s}", x=x, s=x.sum())
        return x * 2

    with on("anvil"):
        out = f(jnp.arange(3.0, dtype=jnp.float32))
        out.block_until_ready()
    assert out.devices() == {jax.devices("anvil")[0]}
    np.testing.assert_array_equal(np.asarray(out), [0, 2, 4])
    assert "x=[0. 1. 2.] sum=3.0" in capfd.readouterr().out


def test_ordered_effects_run_in_program_order():
    seen = []

    @jax.jit
    def f(x):
        jax.debug.callback(lambda v: seen.append(("a", float(v))), x, ordered=True)
        y = io_callback(lambda v: np.float32(v * 10), jax.ShapeDtypeStruct((), np.float32),
                        x + 1, ordered=True)
        jax.debug.callback(lambda v: seen.append(("b", float(v))), y, ordered=True)
        return y

    with on("anvil"):
        for i in range(3):
            assert float(f(np.float32(i))) == (i + 1) * 10
    assert seen == [("a", 0.0), ("b", 10.0), ("a", 1.0), ("b", 20.0), ("a", 2.0), ("b", 30.0)]


def test_pure_callback_results_match_cpu():
    def host(a, b):
        return np.sin(a) @ b, (a.astype(np.int32) + 1)

    def f(a, b):
        shapes = (jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), np.float32),
                  jax.ShapeDtypeStruct(a.shape, np.int32))
        y, k = jax.pure_callback(host, shapes, a, b)
        return y + 1, k * 2

    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = np.ones((4, 2), np.float32)
    outs = []
    for p in ("anvil", "cpu"):
        with on(p):
            outs.append(jax.jit(f)(a, b))
    for x, y in zip(*outs):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(outs[0][0]), np.sin(a) @ b + 1, rtol=1e-6)


def test_pure_callback_under_vmap_and_grad_of_surrounding_code():
    f = jax.vmap(lambda v: jax.pure_callback(lambda a: a * 10, jax.ShapeDtypeStruct((), v.dtype),
                                             v, vmap_method="sequential"))
    with on("anvil"):
        np.testing.assert_array_equal(np.asarray(jax.jit(f)(jnp.arange(4.0))), [0, 10, 20, 30])


def test_large_arguments_from_a_worker_thread():
    big = np.random.default_rng(0).standard_normal((600, 700)).astype(np.float32)
    f = jax.jit(lambda x: jax.pure_callback(lambda a: a.sum(dtype=np.float64).astype(np.float32),
                                            jax.ShapeDtypeStruct((), np.float32), x * 2))
    with on("anvil"):
        assert float(f(big)) == pytest.approx(float(big.astype(np.float64).sum() * 2), rel=1e-5)


def test_callback_exception_fails_the_execution_with_its_message():
    def bad(a):
        raise ValueError("boom from python")

    f = jax.jit(lambda x: jax.pure_callback(bad, jax.ShapeDtypeStruct((), np.float32), x))
    with on("anvil"), pytest.raises(Exception, match="ValueError: boom from python"):
        f(np.float32(1)).block_until_ready()


@pytest.mark.parametrize("platform", ["anvil", "cpu"])
def test_wrong_result_shape_is_an_error_at_the_call(platform):
    """As on XLA:CPU: the call itself raises (nothing is left to raise later), with JAX's
    message."""
    f = jax.jit(lambda x: jax.pure_callback(lambda a: np.zeros(3, np.float32),
                                            jax.ShapeDtypeStruct((2,), np.float32), x))
    with on(platform), pytest.raises(Exception,
                                     match=r"Incorrect output shape for return value #0"):
        f(np.float32(1))


@pytest.mark.parametrize("platform", ["anvil", "cpu"])
def test_wrong_number_of_results_is_an_error_at_the_call(platform):
    f = jax.jit(lambda x: io_callback(lambda a: (a, a), jax.ShapeDtypeStruct((), np.float32), x,
                                      ordered=True))
    with on(platform), pytest.raises(Exception, match="Mismatched number of outputs"):
        f(np.float32(1))
    jax.effects_barrier()  # nothing left behind to raise again


@pytest.mark.parametrize("declared", [np.float32, np.int32])
def test_float64_results_under_x64_are_refused_as_on_cpu(declared):
    """With x64 on (conftest), a float64 result for a float32 declaration is an error on
    XLA:CPU too (JAX canonicalizes, then checks); both backends raise the same message."""
    def f(x):
        return jax.pure_callback(lambda a: np.ones(2), jax.ShapeDtypeStruct((2,), declared), x)

    messages = []
    for p in ("anvil", "cpu"):
        with on(p), pytest.raises(Exception, match="Incorrect output dtype") as e:
            jax.jit(f)(np.float32(1))
        messages.append(str(e.value).split("Incorrect output dtype", 1)[1].splitlines()[0])
    assert messages[0] == messages[1]


def test_checkify_check_raises_at_run_time():
    from jax.experimental import checkify

    def f(x):
        checkify.check(x > 0, "x must be positive, got {x}", x=x)
        return jnp.log(x)

    from jax._src import config

    with on("anvil"), config.xla_runtime_errors(True):
        g = jax.jit(f)
        assert float(g(np.float32(np.e))) == pytest.approx(1.0)
        with pytest.raises(Exception, match="x must be positive, got -1"):
            g(np.float32(-1)).block_until_ready()
    # the functional form (no host callback) agrees
    err, _ = checkify.checkify(jax.jit(f))(jnp.float32(-1))
    assert "x must be positive" in err.get()
